//! The `stream-litmus` command: runs the claim catalogue on the GPU and prints a verdict per
//! claim; re-judges a results file without a GPU; lists and shows claims.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use stream_litmus::report::terminal;
use stream_litmus::{catalogue, Claim, ClaimRecord, Lab, RunRecord};

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
    /// Trials per claim [default: $STREAM_LITMUS_TRIALS, else 5].
    #[arg(long)]
    trials: Option<usize>,
    /// Run only claims whose id contains this text (repeatable).
    #[arg(long = "filter", short = 'f')]
    filters: Vec<String>,
    /// Spin length of the catalogue's kernels, in microseconds.
    #[arg(long, default_value_t = catalogue::DEFAULT_SPIN.as_micros() as u64)]
    spin_us: u64,
    /// Write the results (claims, programs, raw stamps, verdicts) as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write results.json, report.html and trace.json into this directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the evidence and a timeline picture for every claim, not only unexpected ones.
    #[arg(long)]
    details: bool,
}

#[derive(clap::Args)]
struct FuzzArgs {
    /// Random programs to run.
    #[arg(long, default_value_t = 100)]
    cases: usize,
    /// Seed of the program generator: the same seed generates the same programs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Spin length of the generated kernels, in microseconds.
    #[arg(long, default_value_t = stream_litmus::fuzz::DEFAULT_FUZZ_SPIN.as_micros() as u64)]
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
    /// Print one claim: statement, source, program and checks (as JSON with --json).
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Re-judge a results file on any machine and print its report.
    Judge { results: PathBuf },
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
    /// Internal: run programs from stdin for a parent process.
    #[command(hide = true)]
    Child,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => run(cli.run),
        Some(Command::Run(args)) => run(args),
        Some(Command::List) => {
            for c in catalogue::all(catalogue::DEFAULT_SPIN) {
                println!(
                    "{:<36} expect {:<9} {} — {}",
                    c.id, c.expect, c.source, c.statement
                );
            }
            ExitCode::SUCCESS
        }
        Some(Command::Show { id, json }) => show(&id, json),
        Some(Command::Judge { results }) => judge(&results),
        Some(Command::Render { results, out }) => render(&results, &out),
        Some(Command::Compare { a, b }) => compare(&a, &b),
        Some(Command::Fuzz(args)) => fuzz(args),
        Some(Command::Child) => ExitCode::from(stream_litmus::serve_child() as u8),
    }
}

fn selected(args: &RunArgs) -> Vec<Claim> {
    catalogue::all(Duration::from_micros(args.spin_us.max(1)))
        .into_iter()
        .filter(|c| {
            args.filters.is_empty() || args.filters.iter().any(|f| c.id.contains(f.as_str()))
        })
        .collect()
}

fn run(args: RunArgs) -> ExitCode {
    let started = Instant::now();
    let claims = selected(&args);
    if claims.is_empty() {
        eprintln!(
            "stream-litmus: no claim matches {:?}; see `stream-litmus list`",
            args.filters
        );
        return ExitCode::from(2);
    }
    let mut lab = Lab::new();
    if let Some(n) = args.trials {
        lab = lab.with_trials(n);
    }
    let gpu = match lab.gpu() {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("stream-litmus: {e}");
            return ExitCode::from(2);
        }
    };
    print!("{}", terminal::header(gpu.calibration(), lab.trials()));
    let mut record = RunRecord::new(Some(gpu.calibration().clone()), lab.trials());
    let mut progress = Progress::new(claims.len());
    record.claims = lab.check_all(&claims, |rec| {
        progress.clear();
        println!("{}", terminal::claim_line(rec));
        progress.step(&rec.claim.id);
    });
    progress.clear();
    for rec in &record.claims {
        if args.details || !rec.as_expected() {
            println!("\n{}", terminal::details(rec));
        }
    }
    record.timing.setup_ns = gpu.setup_time().as_nanos() as u64;
    record.timing.child_ns = lab.child_time().as_nanos() as u64;
    record.timing.gpu_ns = record
        .claims
        .iter()
        .filter_map(ClaimRecord::trials)
        .map(|t| t.gpu_time_ns)
        .sum();
    record.timing.wall_ns = started.elapsed().as_nanos() as u64;
    println!("{}", terminal::footer(&record));
    if let Some(path) = &args.json {
        if let Err(e) = record.save(path) {
            eprintln!("stream-litmus: {e}");
            return ExitCode::from(2);
        }
        println!("results written to {}", path.display());
    }
    if let Some(dir) = &args.out {
        let saved = std::fs::create_dir_all(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))
            .and_then(|_| {
                record
                    .save(&dir.join("results.json"))
                    .map_err(|e| e.to_string())
            })
            .and_then(|_| write_reports(&record, dir));
        if let Err(e) = saved {
            eprintln!("stream-litmus: {e}");
            return ExitCode::from(2);
        }
    }
    if record.all_as_expected() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn show(id: &str, json: bool) -> ExitCode {
    let Some(claim) = catalogue::all(catalogue::DEFAULT_SPIN)
        .into_iter()
        .find(|c| c.id == id)
    else {
        eprintln!("stream-litmus: no claim '{id}'; see `stream-litmus list`");
        return ExitCode::from(2);
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&claim).expect("claims serialize")
        );
    } else {
        println!(
            "claim  {} — {}\nsource {}\nexpect {}",
            claim.id, claim.statement, claim.source, claim.expect
        );
        for var in &claim.env {
            println!("env    {var}");
        }
        print!("{}", claim.program);
        let connections = claim
            .env
            .iter()
            .find(|v| v.name == "CUDA_DEVICE_MAX_CONNECTIONS")
            .and_then(|v| v.value.as_deref());
        let refinement = stream_litmus::model::Refinement::for_connections(connections);
        let model = stream_litmus::model::HappensBefore::with(&claim.program, refinement);
        for check in &claim.checks {
            let predicted = match *check {
                stream_litmus::Check::Precedes { before, after } => {
                    model.must_precede(before, after)
                }
                stream_litmus::Check::Overlaps { a, b } => model.may_overlap(a, b),
            };
            println!(
                "  check {:<10} model ({refinement:?}): {}",
                check.describe(&claim.program),
                if predicted {
                    "predicted"
                } else {
                    "not predicted"
                }
            );
        }
    }
    ExitCode::SUCCESS
}

/// Loads a results file, re-judges it from its stamps and prints the report; `None` (after
/// printing why) when the file cannot be read. The flag says whether every re-judged verdict
/// equals the recorded one.
fn rejudge(path: &std::path::Path) -> Option<(RunRecord, bool)> {
    let recorded = match RunRecord::load(path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("stream-litmus: {e}");
            return None;
        }
    };
    if let Some(cal) = &recorded.calibration {
        print!("{}", terminal::header(cal, recorded.trials_per_claim));
    }
    let mut rejudged = recorded.clone();
    rejudged.claims = recorded.claims.iter().map(ClaimRecord::rejudge).collect();
    let mut same = true;
    for (old, new) in recorded.claims.iter().zip(&rejudged.claims) {
        println!("{}", terminal::claim_line(new));
        if old.verdict() != new.verdict() {
            same = false;
            println!(
                "     recorded verdict {:?} differs from the re-judged {:?}",
                old.verdict(),
                new.verdict()
            );
        }
    }
    println!("{}", terminal::footer(&rejudged));
    Some((rejudged, same))
}

fn judge(path: &std::path::Path) -> ExitCode {
    match rejudge(path) {
        None => ExitCode::from(2),
        Some((run, true)) if run.all_as_expected() => ExitCode::SUCCESS,
        Some(_) => ExitCode::FAILURE,
    }
}

fn render(path: &std::path::Path, out: &std::path::Path) -> ExitCode {
    let Some((run, same)) = rejudge(path) else {
        return ExitCode::from(2);
    };
    if !same {
        eprintln!(
            "stream-litmus: re-judging changed verdicts; the report shows the re-judged ones"
        );
    }
    let written = std::fs::create_dir_all(out)
        .map_err(|e| format!("{}: {e}", out.display()))
        .and_then(|_| write_reports(&run, out));
    match written {
        Err(e) => {
            eprintln!("stream-litmus: {e}");
            ExitCode::from(2)
        }
        Ok(()) if same => ExitCode::SUCCESS,
        Ok(()) => ExitCode::FAILURE,
    }
}

/// Writes report.html and trace.json into `dir` and says how big they are and how long they took.
fn write_reports(run: &RunRecord, dir: &std::path::Path) -> Result<(), String> {
    let started = Instant::now();
    let html = stream_litmus::report::html::html_report(run);
    let trace = serde_json::to_string(&stream_litmus::report::trace::chrome_trace(run))
        .expect("traces serialize");
    let took = started.elapsed();
    for (name, text) in [("report.html", &html), ("trace.json", &trace)] {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        println!(
            "wrote  {} ({:.1} KiB)",
            path.display(),
            text.len() as f64 / 1024.0
        );
    }
    println!("render {:.1} ms", took.as_secs_f64() * 1e3);
    Ok(())
}

fn compare(a: &std::path::Path, b: &std::path::Path) -> ExitCode {
    let (ra, rb) = match (RunRecord::load(a), RunRecord::load(b)) {
        (Ok(ra), Ok(rb)) => (ra, rb),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("stream-litmus: {e}");
            return ExitCode::from(2);
        }
    };
    let (text, differ) = stream_litmus::report::compare::compare(&ra, &rb);
    print!("{text}");
    if differ == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// A progress line on stderr while claims run, only when stderr is a terminal.
struct Progress {
    total: usize,
    done: usize,
    tty: bool,
}

impl Progress {
    fn new(total: usize) -> Progress {
        use std::io::IsTerminal;
        Progress {
            total,
            done: 0,
            tty: std::io::stderr().is_terminal(),
        }
    }

    fn step(&mut self, last: &str) {
        self.done += 1;
        if self.tty {
            eprint!("\r[{}/{}] {last}", self.done, self.total);
        }
    }

    fn clear(&self) {
        if self.tty {
            eprint!("\r\x1b[2K");
        }
    }
}

fn fuzz(args: FuzzArgs) -> ExitCode {
    use std::io::{IsTerminal, Write};
    use stream_litmus::fuzz::{FuzzConfig, Shape};
    use stream_litmus::model::Refinement;
    let lab = Lab::new().with_trials(1);
    let gpu = match lab.gpu() {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("stream-litmus: {e}");
            return ExitCode::from(2);
        }
    };
    print!("{}", terminal::header(gpu.calibration(), 1));
    let config = FuzzConfig {
        cases: args.cases,
        seed: args.seed,
        shape: Shape {
            spin: Duration::from_micros(args.spin_us.max(1)),
            ..Shape::default()
        },
        refinement: Refinement::for_connections(
            std::env::var("CUDA_DEVICE_MAX_CONNECTIONS").ok().as_deref(),
        ),
    };
    let tty = std::io::stderr().is_terminal();
    let mut exec = |p: &stream_litmus::Program| {
        let trials = gpu.run(p, 1)?;
        let tol = trials.calibration.tolerances();
        let timeline = trials.timelines.into_iter().next().expect("one trial");
        Ok((timeline, tol))
    };
    let mut progress = |done: usize, total: usize| {
        if tty && (done % 25 == 0 || done == total) {
            eprint!("\rfuzz {done}/{total}");
            let _ = std::io::stderr().flush();
            if done == total {
                eprintln!();
            }
        }
    };
    let report = stream_litmus::fuzz::fuzz(&config, &mut exec, &mut progress);
    print!("{}", stream_litmus::report::fuzz::fuzz_report(&report));
    let write = |path: &std::path::Path, json: String| {
        std::fs::write(path, json).map_err(|e| eprintln!("stream-litmus: {}: {e}", path.display()))
    };
    if let Some(path) = &args.json {
        if write(
            path,
            serde_json::to_string_pretty(&report).expect("serializes"),
        )
        .is_err()
        {
            return ExitCode::from(2);
        }
    }
    if !report.violations.is_empty() {
        let programs: Vec<_> = report.violations.iter().map(|v| &v.program).collect();
        let json = serde_json::to_string_pretty(&programs).expect("serializes");
        if write(&args.regressions, json).is_ok() {
            println!(
                "shrunk violations written to {}",
                args.regressions.display()
            );
        }
    }
    if report.violations.is_empty() && report.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
