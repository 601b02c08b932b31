//! Arguments checked before anything runs: clap value parsers for numbers and filters, and the
//! up-front checks of output paths, so that nonsense ends with a message and status 2 before the
//! GPU opens, not after a whole run.
//!
//! Output paths are probed by creating a temporary file where the output will go (removed at
//! once); an `--out` folder is created up front and removed again, if still empty, when the run
//! ends without writing into it (no GPU, say). Nothing is left behind either way.

use super::CliError;
use std::path::Path;
use stream_litmus::atomic_write::{check_writable, make_folder, same_file, Folder};
use stream_litmus::limits::{MAX_FUZZ_CASES, MAX_SWEEP_STREAMS, MAX_TRIALS};
use stream_litmus::MAX_SPIN_NS;

fn in_range(s: &str, lo: u64, hi: u64, unit: &str) -> Result<u64, String> {
    let n: u64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number"))?;
    if n < lo || n > hi {
        return Err(format!("must be {lo}..={hi}{unit}, not {n}"));
    }
    Ok(n)
}

/// Trials per claim or per program: 1..=[`MAX_TRIALS`].
pub fn trials(s: &str) -> Result<usize, String> {
    in_range(s, 1, MAX_TRIALS as u64, " trials").map(|n| n as usize)
}

/// `--exclusive`'s timeout: 1 s to a day. Waiting is for a GPU that becomes free; a day is
/// already beyond any batch job's patience.
pub fn exclusive_secs(s: &str) -> Result<u64, String> {
    in_range(s, 1, 86_400, " s")
}

/// `trace --overhead=PAIRS`: untraced and traced runs in turn, 1..=20 pairs (each pair runs the
/// user's command twice).
pub fn overhead_pairs(s: &str) -> Result<u32, String> {
    in_range(s, 1, 20, " pairs").map(|n| n as u32)
}

/// A spin length in µs: 1 µs up to the programs' own limit ([`MAX_SPIN_NS`]).
pub fn spin_us(s: &str) -> Result<u64, String> {
    in_range(s, 1, MAX_SPIN_NS / 1000, " µs")
}

/// Random programs for `fuzz`: 1..=[`MAX_FUZZ_CASES`].
pub fn cases(s: &str) -> Result<usize, String> {
    in_range(s, 1, MAX_FUZZ_CASES as u64, " cases").map(|n| n as usize)
}

/// Streams for the hardware-queue sweep: 1..=[`MAX_SWEEP_STREAMS`].
pub fn streams(s: &str) -> Result<usize, String> {
    in_range(s, 1, MAX_SWEEP_STREAMS as u64, " streams").map(|n| n as usize)
}

/// A claim filter: any text but the empty one, which would match every claim by accident.
pub fn filter(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("an empty filter matches every claim; leave --filter out to run all".into());
    }
    Ok(s.to_owned())
}

/// The trials the environment asks for ([`stream_litmus::TRIALS_ENV`]), checked like
/// `--trials`; `None` when unset.
pub fn trials_from_env() -> Result<Option<usize>, CliError> {
    let Ok(v) = std::env::var(stream_litmus::TRIALS_ENV) else {
        return Ok(None);
    };
    trials(&v).map(Some).map_err(|e| {
        CliError::usage(format!(
            "{}={v}: {e}; set it to a number of trials or unset it",
            stream_litmus::TRIALS_ENV
        ))
    })
}

/// Checks up front that the results file `path` can be written.
pub fn writable_file(path: &Path) -> Result<(), CliError> {
    check_writable(path).map_err(CliError::from)
}

/// Creates the report folder `dir` up front and checks that files can be written in it; the
/// folder is removed again if it is dropped before [`Folder::keep`].
pub fn writable_folder(dir: &Path) -> Result<Folder, CliError> {
    let folder = make_folder(dir)?;
    check_writable(&dir.join("report.html"))?;
    check_writable(&dir.join("trace.json"))?;
    Ok(folder)
}

/// Refuses to write `output` when it is the file `input`.
pub fn not_the_input(output: &Path, input: &Path, flag: &str) -> Result<(), CliError> {
    if same_file(output, input) {
        return Err(CliError::usage(format!(
            "{} is the input {}; writing it would destroy the input. Choose another {flag}",
            output.display(),
            input.display()
        )));
    }
    Ok(())
}
