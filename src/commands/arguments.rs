//! The command line: its arguments as clap structs ([`Cli`], [`Command`] and each command's
//! arguments), which `main.rs` parses and dispatches; and arguments checked before anything
//! runs: clap value parsers for numbers and filters, and the up-front checks of output paths, so
//! that nonsense ends with a message and status 2 before the GPU opens, not after a whole run.
//!
//! Output paths are probed by creating a temporary file where the output will go (removed at
//! once); an `--out` folder is created up front and removed again, if still empty, when the run
//! ends without writing into it (no GPU, say). Nothing is left behind either way.

use super::CliError;
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use stream_litmus::atomic_write::{check_writable, make_folder, same_file, Folder};
use stream_litmus::catalogue;
use stream_litmus::limits::{MAX_FUZZ_CASES, MAX_SWEEP_STREAMS, MAX_TRIALS};
use stream_litmus::MAX_SPIN_NS;

#[derive(Parser)]
#[command(name = "stream-litmus", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    #[command(flatten)]
    pub(crate) run: RunArgs,
}

#[derive(clap::Args, Clone)]
pub(crate) struct RunArgs {
    /// Run only claims whose id contains this text (repeatable; each must match a claim).
    #[arg(long = "filter", short = 'f', value_parser = filter)]
    pub(crate) filters: Vec<String>,
    /// Spin length of the catalogue's kernels, in microseconds (1..=8000): each lasts a number of spins.
    #[arg(long, default_value_t = catalogue::DEFAULT_SPIN.as_micros() as u64,
          value_parser = catalogue_spin_us)]
    pub(crate) spin_us: u64,
    #[command(flatten)]
    pub(crate) options: RunOptions,
}

/// How claims run and what is written: shared by the catalogue (`run`) and claim files (`check`).
#[derive(clap::Args, Clone)]
pub(crate) struct RunOptions {
    /// Trials per claim, 1..=10000 [default: $STREAM_LITMUS_TRIALS, else 5].
    #[arg(long, value_parser = trials)]
    pub(crate) trials: Option<usize>,
    /// Write the results (claims, programs, raw stamps, verdicts) as JSON to this file.
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
    /// Write results.json, report.html and trace.json into this directory.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Write the verdicts as JUnit XML to this file, one test case per claim (CI systems read it;
    /// docs/schemas/junit.xsd).
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Print the evidence and a timeline picture for every claim, not only unexpected ones.
    #[arg(long)]
    pub(crate) details: bool,
    /// Before each claim, wait until no other process holds a context on the GPU (seen through
    /// NVML), for at most SECS seconds; then stop with exit status 2 and write nothing.
    #[arg(long, value_name = "SECS", num_args = 0..=1, default_missing_value = "60",
          value_parser = exclusive_secs)]
    pub(crate) exclusive: Option<u64>,
    /// Also print wall, GPU time and the lab's overhead per claim family (see docs/cli.md).
    #[arg(long)]
    pub(crate) bench: bool,
}

#[derive(clap::Args)]
pub(crate) struct CheckArgs {
    /// Claim files (docs/writing-claims.md), or directories of them.
    #[arg(required_unless_present = "traces")]
    pub(crate) files: Vec<PathBuf>,
    /// Run only claims whose id contains this text (repeatable; each must match a claim).
    #[arg(long = "filter", short = 'f', value_parser = filter)]
    pub(crate) filters: Vec<String>,
    /// Judge claims on traces on these traces (the ranks of one run: `--trace R0 R1`, after the
    /// claim files, or `--trace R0 --trace R1`) instead of the traces their files name; no GPU is
    /// used (docs/checking-your-program.md).
    #[arg(long = "trace", value_name = "TRACE", num_args = 1..)]
    pub(crate) traces: Vec<PathBuf>,
    /// What a duration in `spin`s in the claim files stands for, in microseconds (1..=1000000).
    #[arg(long, default_value_t = catalogue::DEFAULT_SPIN.as_micros() as u64,
          value_parser = spin_us)]
    pub(crate) spin_us: u64,
    #[command(flatten)]
    pub(crate) options: RunOptions,
}

#[derive(clap::Args)]
pub(crate) struct FuzzArgs {
    /// Random programs to run.
    #[arg(long, default_value_t = 100, value_parser = cases)]
    pub(crate) cases: usize,
    /// Seed of the program generator: the same seed generates the same programs.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Spin length of the generated kernels, in microseconds (1..=1000000).
    #[arg(long, default_value_t = stream_litmus::fuzz::DEFAULT_FUZZ_SPIN.as_micros() as u64,
          value_parser = spin_us)]
    pub(crate) spin_us: u64,
    /// Write the whole report (violations, precision) as JSON to this file.
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
    /// Where shrunk violations are written, one program each, to replay later.
    #[arg(long, default_value = "fuzz-regressions.json")]
    pub(crate) regressions: PathBuf,
    /// Run a warm-up trial before each program's recorded one, as claims do (first-use costs
    /// out of the recorded trial; about half the programs a second).
    #[arg(long)]
    pub(crate) warm_up: bool,
}

/// `stream-litmus explain TRACE…`.
#[derive(clap::Args)]
pub(crate) struct ExplainArgs {
    /// Profiler traces (one per rank of one run), or one `stream-litmus trace` recording.
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
    /// Cut steps at each instance of this host range (default: each `ProfilerStep#*` where the
    /// trace has them, else the whole trace).
    #[arg(long)]
    pub trial: Option<String>,
    /// Directory for explain.txt, report.html and trace.json (each wait drawn as a flow).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write what was found as a claim file, to judge again on the next trace with `check`.
    #[arg(long)]
    pub claims: Option<PathBuf>,
    /// Write the explanation as JSON (every wait of every step; schema in
    /// docs/checking-your-program.md).
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run the catalogue (the default).
    Run(RunArgs),
    /// List the catalogue's claims.
    List,
    /// Print one claim: statement, source, program and checks (as JSON with --json, as a claim
    /// file with --litmus).
    Show {
        id: String,
        #[arg(long, conflicts_with = "litmus")]
        json: bool,
        /// Print the claim in the claim-file format (docs/writing-claims.md).
        #[arg(long)]
        litmus: bool,
    },
    /// Run the claims of claim files on the GPU (all files are read and checked first); judge
    /// claims on traces (`select` lines) on their traces, with no GPU.
    Check(CheckArgs),
    /// Explain what held a traced program back, step by step, with no GPU: the model's
    /// must-precede pairs checked, every wait the program did not ask for with its cause and
    /// the time lost, and surprises (docs/checking-your-program.md, "What held my program back").
    Explain(ExplainArgs),
    /// Print the happens-before model's prediction for each check of claim files, without a GPU.
    Predict {
        /// Claim files (docs/writing-claims.md), or directories of them.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Re-judge a results file on any machine and print its report.
    Judge {
        results: PathBuf,
        /// Write the re-judged results (same stamps, judgements by the current rules) to this
        /// file: how recorded fixtures follow an intended change of the analysis.
        #[arg(long)]
        write: Option<PathBuf>,
    },
    /// Re-judge a results file and write its HTML report and Chrome trace, without a GPU.
    Render {
        results: PathBuf,
        /// Directory for report.html and trace.json.
        #[arg(long, default_value = "report")]
        out: PathBuf,
    },
    /// List the claims whose verdicts or key figures differ between two results files.
    Compare { a: PathBuf, b: PathBuf },
    /// Run random programs on the GPU and check them against the model of stream semantics.
    Fuzz(FuzzArgs),
    /// Sweeps: launch offsets over 2–16 streams, and hardware queues over 1–16 streams under the
    /// default connection count and under CUDA_DEVICE_MAX_CONNECTIONS=32.
    Sweep {
        /// Trials per program (1..=10000).
        #[arg(long, default_value_t = 10, value_parser = trials)]
        trials: usize,
        /// Largest number of streams in the hardware-queue sweep (1..=128).
        #[arg(long, default_value_t = 16, value_parser = streams)]
        max_streams: usize,
    },
    /// Run a command with CUPTI recording every kernel, copy, memset and CUDA call of every
    /// process, into one trace that `check --trace` judges (docs/checking-your-program.md).
    Trace {
        /// Where the trace goes (gzip when the name ends in .gz); written only once the command
        /// has ended.
        #[arg(long, default_value = "trace.json.gz")]
        out: PathBuf,
        /// Also run the command without tracing, first, and report both wall times;
        /// `--overhead=N` runs N untraced and traced runs in turn (1–20 pairs, the last traced
        /// one writes the trace) and reports the medians: one pair varies by ±12 % on a launch loop.
        #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "1",
              value_parser = overhead_pairs)]
        overhead: Option<u32>,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Internal: keep the GPU busy for a while, as a neighbour for tests of shared GPUs.
    #[command(hide = true)]
    Hog {
        #[arg(long, default_value_t = 10, value_parser = exclusive_secs)]
        seconds: u64,
    },
    /// Internal: run programs from stdin for a parent process.
    #[command(hide = true)]
    Child,
}

/// Why an option's value was refused; clap prints it after the option's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgError {
    #[error("'{0}' is not a whole number")]
    NotANumber(String),
    /// `unit` follows the range: " trials", " µs".
    #[error("must be {lo}..={hi}{unit}, not {n}")]
    OutOfRange {
        lo: u64,
        hi: u64,
        unit: &'static str,
        n: u64,
    },
    #[error("an empty filter matches every claim; leave --filter out to run all")]
    EmptyFilter,
}

fn in_range(s: &str, lo: u64, hi: u64, unit: &'static str) -> Result<u64, ArgError> {
    let n: u64 = (s.trim().parse()).map_err(|_| ArgError::NotANumber(s.into()))?;
    if n < lo || n > hi {
        return Err(ArgError::OutOfRange { lo, hi, unit, n });
    }
    Ok(n)
}

/// Trials per claim or per program: 1..=[`MAX_TRIALS`].
pub fn trials(s: &str) -> Result<usize, ArgError> {
    in_range(s, 1, MAX_TRIALS as u64, " trials").map(|n| n as usize)
}

/// `--exclusive`'s timeout: 1 s to a day. Waiting is for a GPU that becomes free; a day is
/// already beyond any batch job's patience.
pub fn exclusive_secs(s: &str) -> Result<u64, ArgError> {
    in_range(s, 1, 86_400, " s")
}

/// `trace --overhead=PAIRS`: untraced and traced runs in turn, 1..=20 pairs (each pair runs the
/// user's command twice).
pub fn overhead_pairs(s: &str) -> Result<u32, ArgError> {
    in_range(s, 1, 20, " pairs").map(|n| n as u32)
}

/// A spin length in µs: 1 µs up to the programs' own limit ([`MAX_SPIN_NS`]).
pub fn spin_us(s: &str) -> Result<u64, ArgError> {
    in_range(s, 1, MAX_SPIN_NS / 1000, " µs")
}

/// The catalogue's spin length in µs: its kernels last 0.04 to 120 spins, so 1 µs up to
/// [`catalogue::MAX_SPIN`], where its longest kernel reaches the programs' limit.
pub fn catalogue_spin_us(s: &str) -> Result<u64, ArgError> {
    in_range(s, 1, catalogue::MAX_SPIN.as_micros() as u64, " µs")
}

/// Random programs for `fuzz`: 1..=[`MAX_FUZZ_CASES`].
pub fn cases(s: &str) -> Result<usize, ArgError> {
    in_range(s, 1, MAX_FUZZ_CASES as u64, " cases").map(|n| n as usize)
}

/// Streams for the hardware-queue sweep: 1..=[`MAX_SWEEP_STREAMS`].
pub fn streams(s: &str) -> Result<usize, ArgError> {
    in_range(s, 1, MAX_SWEEP_STREAMS as u64, " streams").map(|n| n as usize)
}

/// A claim filter: any text but the empty one, which would match every claim by accident.
pub fn filter(s: &str) -> Result<String, ArgError> {
    if s.is_empty() {
        return Err(ArgError::EmptyFilter);
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
            stream_litmus::report::shown::path(output),
            stream_litmus::report::shown::path(input)
        )));
    }
    Ok(())
}
