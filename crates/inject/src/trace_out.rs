//! Where a traced process's records go: its file under `STREAM_LITMUS_TRACE_DIR`, behind one
//! lock, shared by the injection's activity buffers (`inject.rs`) and its callbacks
//! (`host_fn_streams.rs`), and the notes that say what went wrong.

use crate::activity_lines::Lines;
use std::io::Write;
use std::sync::Mutex;

/// The process's file and the formatting state of its records.
pub(crate) struct Out {
    pub(crate) file: std::io::BufWriter<std::fs::File>,
    pub(crate) lines: Lines,
}

static OUT: Mutex<Option<Out>> = Mutex::new(None);

pub(crate) fn lock() -> std::sync::MutexGuard<'static, Option<Out>> {
    OUT.lock().unwrap_or_else(|p| p.into_inner())
}

/// Writes one line (with its line feed) to the process's file, as the buffers' records are.
pub(crate) fn write_line(line: &str) {
    if let Some(out) = lock().as_mut() {
        let _ = out.file.write_all(line.as_bytes());
    }
}

/// A line saying what went wrong, for the `trace` command to show.
pub(crate) fn note(what: &str) {
    if let Some(out) = lock().as_mut() {
        let _ = writeln!(out.file, "{{\"note\":{}}}", crate::json::quoted(what));
        let _ = out.file.flush();
    } else {
        eprintln!("stream-litmus trace: {what}");
    }
}
