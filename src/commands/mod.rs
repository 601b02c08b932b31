//! The subcommands, one file each, and what they share: the error path, the argument checks,
//! writing the reports and the progress line.
//!
//! They sit on top of the library and use only its public API.

pub mod arguments;
mod check;
mod cli_error;
mod explain;
mod fuzz;
mod hog;
mod predict;
mod replay;
mod run;
mod show;
mod sweep;
mod timing;
mod trace;
mod traced;

pub use check::check;
pub use explain::explain;
pub use fuzz::fuzz;
pub use hog::hog;
pub use predict::predict;
pub use replay::{compare, judge, render};
pub use run::run;
pub use show::show;
pub use sweep::sweep;
pub use trace::trace;

pub(crate) use cli_error::{errln, out, outln};
pub use cli_error::{CliError, CliResult};

use std::time::Instant;
use stream_litmus::report::terminal;
use stream_litmus::{Gpu, Lab, RunRecord};

/// The lab's GPU with the report header printed, or the error that says why there is none
/// (every command that runs on the GPU exits 2 with the same message).
pub fn open_gpu(lab: &Lab, trials: usize) -> Result<&Gpu, CliError> {
    let gpu = lab.gpu()?;
    out!("{}", terminal::header(gpu.calibration(), trials));
    Ok(gpu)
}

/// Writes report.html and trace.json into `dir`, both or neither, and says how big they are and
/// how long they took.
pub fn write_reports(run: &RunRecord, dir: &std::path::Path) -> Result<(), CliError> {
    let started = Instant::now();
    let html = stream_litmus::report::html::html_report(run);
    let trace = serde_json::to_string(&stream_litmus::report::trace::chrome_trace(run))
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
            path.display(),
            text.len() as f64 / 1024.0
        );
    }
    outln!("render {:.1} ms", took.as_secs_f64() * 1e3);
    Ok(())
}

/// A progress line on stderr while claims run, only when stderr is a terminal.
pub struct Progress {
    total: usize,
    done: usize,
    tty: bool,
}

impl Progress {
    pub fn new(total: usize) -> Progress {
        use std::io::IsTerminal;
        Progress {
            total,
            done: 0,
            tty: std::io::stderr().is_terminal(),
        }
    }

    pub fn step(&mut self, last: &str) {
        self.done += 1;
        if self.tty {
            let last = stream_litmus::report::shown::shown(last);
            eprint!("\r[{}/{}] {last}", self.done, self.total);
        }
    }

    pub fn clear(&self) {
        if self.tty {
            eprint!("\r\x1b[2K");
        }
    }
}
