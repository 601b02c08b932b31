//! Joining what `stream-litmus trace -- CMD` recorded: each process of the command wrote its
//! CUPTI records as lines of the profiler's event format (`gpu/inject.rs`); here they become one
//! trace file in the same format as a PyTorch profiler trace, which `check` reads.
//!
//! A process killed by a signal leaves its file as far as CUPTI had flushed it, perhaps with a
//! last line cut in the middle: such a line is dropped and counted, and the trace says the run
//! was cut short. The file is written beside its target and renamed into place, gzip when the
//! name ends in `.gz`.

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
    /// Lines cut in the middle (a process killed while writing).
    pub cut_lines: usize,
    /// What the injection library reported instead of recording (CUPTI missing, refused).
    pub notes: Vec<String>,
}

impl Joined {
    pub fn gpu_events(&self) -> usize {
        self.kernels + self.copies + self.memsets
    }
}

/// Joins every `trace-*.jsonl` of `dir` into `out`; `meta` goes under `stream_litmus` with the
/// counts added.
pub fn join(dir: &Path, out: &Path, mut meta: serde_json::Value) -> Result<Joined, String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
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
        let mut w: Box<dyn Write + '_> = match gz {
            true => Box::new(flate2::write::GzEncoder::new(w, flate2::Compression::new(6))),
            false => Box::new(w),
        };
        writeln!(
            w,
            "{{\"schemaVersion\":1,\"traceName\":\"stream-litmus trace\",\"baseTimeNanoseconds\":{},\"traceEvents\":[",
            meta["base_ns"]
        )?;
        let mut first = true;
        for f in &files {
            if let Err(e) = copy_lines(f, &mut w, &mut first, &mut joined) {
                result = Err(format!("{}: {e}", f.display()));
            }
        }
        meta["processes"] = joined.processes.into();
        meta["cut_lines"] = joined.cut_lines.into();
        meta["notes"] = joined.notes.clone().into();
        write!(w, "\n],\"stream_litmus\":{meta}}}\n")?;
        w.flush()
    })
    .map_err(|e| e.to_string())?;
    result.map(|()| joined)
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
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
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
        match event.get("cat").and_then(|c| c.as_str()) {
            Some("kernel") => joined.kernels += 1,
            Some("gpu_memcpy") => joined.copies += 1,
            Some("gpu_memset") => joined.memsets += 1,
            _ => joined.calls += 1,
        }
        if !*first {
            w.write_all(b",\n")?;
        }
        *first = false;
        w.write_all(line.trim_end().as_bytes())?;
    }
}
