//! The report files of a run (`run --out`, `render`): report.html and trace.json, written
//! together.

use super::{outln, CliError};
use std::time::Instant;
use stream_litmus::RunRecord;

/// Writes report.html and trace.json into `dir`, both or neither, and says how big they are and
/// how long they took.
pub fn write_reports(run: &RunRecord, dir: &std::path::Path) -> Result<(), CliError> {
    let started = Instant::now();
    let html = stream_litmus::report::html::html_report(run);
    let trace = serde_json::to_string(&stream_litmus::report::chrome_trace::chrome_trace(run))
        .map_err(|e| CliError::usage(format!("the trace could not be serialized: {e}")))?;
    let took = started.elapsed();
    let files = [
        (dir.join("report.html"), html.as_bytes()),
        (dir.join("trace.json"), trace.as_bytes()),
    ];
    stream_litmus::atomic_write::write_all_or_none(&files)?;
    for (path, text) in &files {
        outln!(
            "wrote  {} ({:.1} KiB)",
            stream_litmus::report::shown::path(path),
            text.len() as f64 / 1024.0
        );
    }
    outln!("render {:.1} ms", took.as_secs_f64() * 1e3);
    Ok(())
}
