//! Joining what `stream-litmus trace -- CMD` recorded: each process of the command wrote its
//! CUPTI records as lines of the profiler's event format (`crates/inject/src/inject.rs`); here they become one
//! trace file in the same format as a PyTorch profiler trace, which `check` reads.
//!
//! A process killed by a signal leaves its file as far as CUPTI had flushed it, perhaps with a
//! last line cut in the middle: such a line is dropped and counted, and the trace says the run
//! was cut short. The file is written beside its target and renamed into place, gzip when the
//! name ends in `.gz`.

use super::error::TraceError;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

/// What the joined trace holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Joined {
    pub processes: usize,
    pub kernels: usize,
    pub copies: usize,
    pub memsets: usize,
    pub calls: usize,
    /// Syncs recorded with their stream and event (`trace/syncs.rs`).
    pub syncs: usize,
    /// Lines cut in the middle (a process killed while writing).
    pub cut_lines: usize,
    /// What the injection library reported instead of recording (CUPTI missing, refused).
    pub notes: Vec<String>,
    /// NVTX ranges (a start and its end paired), and starts left without an end.
    pub ranges: usize,
    pub open_ranges: usize,
}

impl Joined {
    pub fn gpu_events(&self) -> usize {
        self.kernels + self.copies + self.memsets
    }
}

/// Joins every `trace-*.jsonl` of `dir` into `out`; `meta` goes under `stream_litmus` with the
/// counts added.
pub fn join(dir: &Path, out: &Path, mut meta: serde_json::Value) -> Result<Joined, TraceError> {
    let unread = |path: &Path, e: std::io::Error| TraceError::Recording {
        path: crate::border::shown::path(path),
        why: e.to_string(),
    };
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| unread(dir, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut joined = Joined {
        processes: files.len(),
        ..Joined::default()
    };
    let gz = out.extension().is_some_and(|x| x == "gz");
    let mut result = Ok(());
    crate::border::atomic_write::write_atomically(out, |w| {
        let mut events = |w: &mut dyn Write| -> std::io::Result<()> {
            writeln!(
                w,
                "{{\"schemaVersion\":1,\"traceName\":\"stream-litmus trace\",\"baseTimeNanoseconds\":{},\"traceEvents\":[",
                meta["base_ns"]
            )?;
            let mut first = true;
            for f in &files {
                if let Err(e) = copy_lines(f, &mut *w, &mut first, &mut joined) {
                    result = Err(unread(f, e));
                }
            }
            meta["processes"] = joined.processes.into();
            meta["cut_lines"] = joined.cut_lines.into();
            meta["notes"] = joined.notes.clone().into();
            meta["nvtx_ranges"] = joined.ranges.into();
            meta["nvtx_ranges_open"] = joined.open_ranges.into();
            write!(w, "\n],\"stream_litmus\":{meta}}}\n")?;
            w.flush()
        };
        if !gz {
            return events(w);
        }
        // Each event goes out in a few short writes: they are gathered before the encoder (each
        // write into it is a call into deflate), and the gzip stream is finished here, so that a
        // failed finish fails the write rather than leaving a cut file renamed into place.
        let mut encoder = flate2::write::GzEncoder::new(w, flate2::Compression::new(6));
        let mut buffered = std::io::BufWriter::with_capacity(1 << 16, &mut encoder);
        events(&mut buffered)?;
        drop(buffered);
        encoder.finish().map(drop)
    })
    .map_err(|e| TraceError::Write(e.to_string()))?;
    result.map(|()| joined)
}

/// Writes one event, comma-separated from the one before.
fn put(w: &mut dyn Write, first: &mut bool, event: &str) -> std::io::Result<()> {
    if !*first {
        w.write_all(b",\n")?;
    }
    *first = false;
    w.write_all(event.as_bytes())
}

fn copy_lines(
    path: &Path,
    w: &mut dyn Write,
    first: &mut bool,
    joined: &mut Joined,
) -> std::io::Result<()> {
    let file = crate::border::input_file::open_regular(path).map_err(std::io::Error::other)?;
    let mut reader = BufReader::new(file);
    let mut line = String::new();
    // NVTX range starts by (process, id), until their end comes.
    let mut open: std::collections::HashMap<(u64, u64), serde_json::Value> = Default::default();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            joined.open_ranges += open.len();
            return Ok(());
        }
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line.trim_end()) else {
            joined.cut_lines += 1;
            continue;
        };
        if let Some(note) = event.get("note").and_then(|n| n.as_str()) {
            joined.notes.push(note.to_string());
            continue;
        }
        if event.get("ph").and_then(|p| p.as_str()) == Some("M") {
            // A process's recorded environment (`process_env`): kept as it is.
            put(w, first, line.trim_end())?;
            continue;
        }
        let key = |e: &serde_json::Value| {
            let n = |k: &str| e.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
            (n("pid"), n("id"))
        };
        match event.get("cat").and_then(|c| c.as_str()) {
            Some("nvtx_start") => {
                open.insert(key(&event), event);
                continue;
            }
            Some("nvtx_end") => {
                let Some(start) = open.remove(&key(&event)) else {
                    continue;
                };
                let ts =
                    |e: &serde_json::Value| e.get("ts").and_then(|v| v.as_f64()).unwrap_or(0.0);
                let range = serde_json::json!({
                    "ph": "X", "cat": "user_annotation", "name": start.get("name"),
                    "pid": start.get("pid"), "tid": start.get("tid"),
                    "ts": ts(&start), "dur": (ts(&event) - ts(&start)).max(0.0),
                });
                joined.ranges += 1;
                put(w, first, &range.to_string())?;
                continue;
            }
            Some("kernel") => joined.kernels += 1,
            Some("gpu_memcpy") => joined.copies += 1,
            Some("gpu_memset") => joined.memsets += 1,
            Some("cuda_sync") => joined.syncs += 1,
            _ => joined.calls += 1,
        }
        put(w, first, line.trim_end())?;
    }
}
