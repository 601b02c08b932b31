//! The `stream-litmus` command: runs the claim catalogue on the GPU and prints a verdict per
//! claim; writes and compares reports; fuzzes the model; sweeps; lists and shows claims.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use stream_litmus::catalogue;

mod commands;

use commands::{
    arguments, check, compare, fuzz, hog, judge, outln, predict, record, render, run, show, sweep,
    CliResult,
};

#[derive(Parser)]
#[command(name = "stream-litmus", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(clap::Args, Clone)]
struct RunArgs {
    /// Run only claims whose id contains this text (repeatable; each must match a claim).
    #[arg(long = "filter", short = 'f', value_parser = arguments::filter)]
    filters: Vec<String>,
    /// Spin length of the catalogue's kernels, in microseconds (1..=1000000).
    #[arg(long, default_value_t = catalogue::DEFAULT_SPIN.as_micros() as u64,
          value_parser = arguments::spin_us)]
    spin_us: u64,
    #[command(flatten)]
    options: RunOptions,
}

/// How claims run and what is written: shared by the catalogue (`run`) and claim files (`check`).
#[derive(clap::Args, Clone)]
struct RunOptions {
    /// Trials per claim, 1..=10000 [default: $STREAM_LITMUS_TRIALS, else 5].
    #[arg(long, value_parser = arguments::trials)]
    trials: Option<usize>,
    /// Write the results (claims, programs, raw stamps, verdicts) as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write results.json, report.html and trace.json into this directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the evidence and a timeline picture for every claim, not only unexpected ones.
    #[arg(long)]
    details: bool,
    /// Before each claim, wait until no other process holds a context on the GPU (seen through
    /// NVML), for at most SECS seconds; then stop with exit status 2 and write nothing.
    #[arg(long, value_name = "SECS", num_args = 0..=1, default_missing_value = "60",
          value_parser = arguments::exclusive_secs)]
    exclusive: Option<u64>,
    /// Also print wall, GPU time and the lab's overhead per claim family (see README).
    #[arg(long)]
    bench: bool,
}

#[derive(clap::Args)]
struct CheckArgs {
    /// Claim files (docs/writing-claims.md), or directories of them.
    #[arg(required_unless_present = "traces")]
    files: Vec<PathBuf>,
    /// Run only claims whose id contains this text (repeatable).
    #[arg(long = "filter", short = 'f', value_parser = arguments::filter)]
    filters: Vec<String>,
    /// Judge claims on traces on these traces (the ranks of one run: `--trace R0 R1`, after the
    /// claim files, or `--trace R0 --trace R1`) instead of the traces their files name; no GPU is
    /// used (docs/checking-your-program.md).
    #[arg(long = "trace", value_name = "TRACE", num_args = 1..)]
    traces: Vec<PathBuf>,
    #[command(flatten)]
    options: RunOptions,
}

#[derive(clap::Args)]
struct FuzzArgs {
    /// Random programs to run.
    #[arg(long, default_value_t = 100, value_parser = arguments::cases)]
    cases: usize,
    /// Seed of the program generator: the same seed generates the same programs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Spin length of the generated kernels, in microseconds (1..=1000000).
    #[arg(long, default_value_t = stream_litmus::fuzz::DEFAULT_FUZZ_SPIN.as_micros() as u64,
          value_parser = arguments::spin_us)]
    spin_us: u64,
    /// Write the whole report (violations, precision) as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Where shrunk violations are written, one program each, to replay later.
    #[arg(long, default_value = "fuzz-regressions.json")]
    regressions: PathBuf,
}

#[derive(Subcommand)]
enum Command {
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
        #[arg(long, default_value_t = 10, value_parser = arguments::trials)]
        trials: usize,
        /// Largest number of streams in the hardware-queue sweep (1..=128).
        #[arg(long, default_value_t = 16, value_parser = arguments::streams)]
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
              value_parser = arguments::overhead_pairs)]
        overhead: Option<u32>,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Internal: keep the GPU busy for a while, as a neighbour for tests of shared GPUs.
    #[command(hide = true)]
    Hog {
        #[arg(long, default_value_t = 10, value_parser = arguments::exclusive_secs)]
        seconds: u64,
    },
    /// Internal: run programs from stdin for a parent process.
    #[command(hide = true)]
    Child,
}

fn main() -> ExitCode {
    // Output piped into `head` or `less` should end the program quietly when the reader leaves,
    // as for any Unix filter, not panic in `println!`: restore the default SIGPIPE action, which
    // the Rust runtime sets to "ignore".
    // SAFETY: called before any other thread exists; SIG_DFL is a valid action for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let result: CliResult = match cli.command {
        None => run(cli.run),
        Some(Command::Run(args)) => run(args),
        Some(Command::List) => list(),
        Some(Command::Show { id, json, litmus }) => show(&id, json, litmus),
        Some(Command::Check(args)) => check(args),
        Some(Command::Hog { seconds }) => hog(seconds),
        Some(Command::Predict { files }) => predict(&files),
        Some(Command::Judge { results, write }) => judge(&results, write.as_deref()),
        Some(Command::Render { results, out }) => render(&results, &out),
        Some(Command::Compare { a, b }) => compare(&a, &b),
        Some(Command::Fuzz(args)) => fuzz(args),
        Some(Command::Sweep {
            trials,
            max_streams,
        }) => sweep(trials, max_streams),
        Some(Command::Trace {
            out,
            overhead,
            command,
        }) => record(&out, overhead, &command),
        Some(Command::Child) => Ok(ExitCode::from(stream_litmus::serve_child() as u8)),
    };
    // The one place where an error becomes a message and an exit status.
    result.unwrap_or_else(commands::CliError::report)
}

fn list() -> CliResult {
    for c in catalogue::all(catalogue::DEFAULT_SPIN) {
        outln!(
            "{:<36} expect {:<9} {} — {}",
            c.id,
            c.expect,
            c.source,
            c.statement
        );
    }
    for c in catalogue::multi_gpu(catalogue::DEFAULT_SPIN) {
        outln!(
            "{:<36} expect {:<9} (needs {} GPUs) {} — {}",
            c.id,
            c.expect,
            catalogue::multi::DEVICES,
            c.source,
            c.statement
        );
    }
    Ok(ExitCode::SUCCESS)
}
