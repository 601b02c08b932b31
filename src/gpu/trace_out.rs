//! Where a traced process's records go: its file under `STREAM_LITMUS_TRACE_DIR`, behind one
//! lock, shared by the injection's activity buffers (`inject.rs`) and its callbacks
//! (`host_fn_streams.rs`), and the notes that say what went wrong.

use super::activity_lines::Lines;
use std::io::Write;
use std::sync::Mutex;

/// The process's file and the formatting state of its records.
pub(super) struct Out {
    pub(super) file: std::io::BufWriter<std::fs::File>,
    pub(super) lines: Lines,
}

static OUT: Mutex<Option<Out>> = Mutex::new(None);

pub(super) fn lock() -> std::sync::MutexGuard<'static, Option<Out>> {
    OUT.lock().unwrap_or_else(|p| p.into_inner())
}

/// Writes one line (with its line feed) to the process's file, as the buffers' records are.
pub(super) fn write_line(line: &str) {
    if let Some(out) = lock().as_mut() {
        let _ = out.file.write_all(line.as_bytes());
    }
}

/// A line saying what went wrong, for the `trace` command to show.
pub(super) fn note(what: &str) {
    if let Some(out) = lock().as_mut() {
        let line = serde_json::json!({ "note": what });
        let _ = writeln!(out.file, "{line}");
        let _ = out.file.flush();
    } else {
        eprintln!("stream-litmus trace: {what}");
    }
}
