//! `stream-litmus [run]`: the catalogue on the GPU, a verdict line per claim, the reports.
//!
//! Arguments and output paths are checked before the GPU opens (`arguments.rs`).

use super::arguments::{trials_from_env, writable_file, writable_folder};
use super::arguments::{RunArgs, RunOptions};
use super::{outln, write_reports, CliError, CliResult, Progress};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use stream_litmus::report::terminal;
use stream_litmus::{catalogue, Claim, ClaimRecord, Gpu, Lab, RunRecord, RunWriter};

/// The claims the filters select; every filter must match at least one claim. The multi-GPU
/// family (`multi.*`, `catalogue::multi_gpu`) is selected like the others and run only where
/// the driver sees enough devices ([`split_multi`]).
fn selected(args: &RunArgs) -> Result<Vec<Claim>, CliError> {
    let spin = Duration::from_micros(args.spin_us);
    let mut all = catalogue::all(spin);
    all.extend(catalogue::multi_gpu(spin));
    let where_ = "of the catalogue (`stream-litmus list`)";
    super::filters::kept(all, |c| c.id.as_str(), &args.filters, where_)
}

pub fn run(args: RunArgs) -> CliResult {
    let claims = split_multi(selected(&args)?)?;
    run_claims(&claims, &args.options)
}

/// Leaves out the claims whose programs use more GPUs than the machine has (the catalogue's
/// `multi.*` family needs [`catalogue::MULTI_GPU_DEVICES`]), printing one `skip` line for each:
/// they are not run, not counted, and not failures. `run` and `check` share it.
pub(super) fn split_multi(claims: Vec<Claim>) -> Result<Vec<Claim>, CliError> {
    if !claims.iter().any(|c| c.program.device_count() > 1) {
        return Ok(claims);
    }
    let have = stream_litmus::device_count();
    let (multi, single): (Vec<Claim>, Vec<Claim>) = claims
        .into_iter()
        .partition(|c| c.program.device_count() > have);
    // No device at all: the GPU error that follows says why, alone.
    for c in multi.iter().filter(|_| have > 0) {
        outln!(
            "skip {:<36} needs {} GPUs (this machine has {have})",
            c.id,
            c.program.device_count()
        );
    }
    Ok(single)
}

/// Runs `claims` on the GPU as the catalogue runs (verdict lines, tables, details, footer,
/// `--json`, `--out`); `run` and `check` share it.
pub fn run_claims(claims: &[Claim], args: &RunOptions) -> CliResult {
    let started = Instant::now();
    let trials = match args.trials {
        Some(n) => Some(n),
        None => trials_from_env()?,
    };
    for path in args.json.iter().chain(&args.junit) {
        writable_file(path)?;
    }
    let folder = args.out.as_deref().map(writable_folder).transpose()?;
    let lab = lab_of(trials, args.exclusive);
    // The first child's claims run while the GPU opens (`lab/ahead.rs`).
    lab.start_ahead(claims);
    let gpu = super::open_gpu(&lab, lab.trials())?;
    let mut record = RunRecord::new(Some(gpu.calibration().clone()), lab.trials());
    record.sharing = lab.look();
    if let Some(line) = record.sharing.as_ref().map(terminal::sharing_line) {
        outln!("{line}");
    }
    // Each claim's record goes to the results files as soon as it is final, and only what the
    // reports draw stays in memory (`ClaimRecord::kept`): a run of 1,000 trials holds one
    // claim's stamps at a time.
    let mut writers: Vec<(PathBuf, RunWriter)> = args
        .json
        .iter()
        .cloned()
        .chain(args.out.as_ref().map(|dir| dir.join("results.json")))
        .map(|path| {
            let writer = RunWriter::start(&path);
            (path, writer)
        })
        .collect();
    let mut kept: Vec<Option<ClaimRecord>> = vec![None; claims.len()];
    let mut progress = Progress::new(claims.len());
    let mut trimmer = stream_litmus::heap::Trimmer::default();
    let mut stdout_error = None;
    let ran = lab.try_check_each(claims, |i, rec| {
        use std::io::Write;
        progress.clear();
        if stdout_error.is_none() {
            let line = terminal::claim_line(&rec);
            let line = stream_litmus::report::shown::shown(&line);
            stdout_error = writeln!(std::io::stdout(), "{line}").err();
        }
        progress.step(&rec.claim.id);
        kept[i] = Some(rec.kept());
        let bytes = rec.kept_bytes();
        let rec = Arc::new(rec);
        for (_, writer) in &mut writers {
            writer.claim_sized(rec.clone(), bytes);
        }
        drop(rec);
        // What judging the claim allocated is free, and so is its record where no file takes
        // it: handed back to the system every few claims.
        trimmer.freed(bytes);
    });
    progress.clear();
    // `--exclusive` gave up: the writers are dropped unfinished, so no results file holds a
    // partial run.
    ran?;
    record.claims = kept.into_iter().flatten().collect();
    if let Some(e) = stdout_error {
        // The run is done: keep its results before saying that the terminal output was lost.
        save(args, &record, folder, writers)?;
        return Err(CliError::stdout(e));
    }
    for table in stream_litmus::report::scenario::tables(&record.claims) {
        outln!("\n{table}");
    }
    for rec in &record.claims {
        if args.details || !rec.as_expected() {
            outln!("\n{}", terminal::details(rec));
        }
    }
    timed(&mut record, gpu, &lab, started);
    outln!("{}", terminal::footer(&record));
    super::timing_lines::print(&record, args.bench)?;
    save(args, &record, folder, writers)?;
    Ok(if record.all_as_expected() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The lab with the trials and the `--exclusive` wait asked for.
fn lab_of(trials: Option<usize>, exclusive: Option<u64>) -> Lab {
    let mut lab = Lab::new();
    if let Some(n) = trials {
        lab = lab.with_trials(n);
    }
    if let Some(secs) = exclusive {
        lab = lab.with_exclusive(Duration::from_secs(secs));
    }
    lab
}

/// Where the run's time went, from the GPU's setup, the lab's spending and the claims' trials.
fn timed(record: &mut RunRecord, gpu: &Gpu, lab: &Lab, started: Instant) {
    record.timing.setup_ns = gpu.setup_time().as_nanos() as u64;
    let spent = lab.spent();
    record.timing.child_ns = spent.child.as_nanos() as u64;
    record.timing.looks_ns = spent.looks.as_nanos() as u64;
    record.timing.judging_ns = spent.judging.as_nanos() as u64;
    record.timing.setup_split = gpu.setup_split();
    record.timing.child_setup = spent.child_setup;
    record.timing.gpu_ns = record
        .claims
        .iter()
        .filter_map(ClaimRecord::trials)
        .map(|t| t.gpu_time_ns)
        .fold(0, u64::saturating_add);
    record.timing.wall_ns = started.elapsed().as_nanos() as u64;
}

/// Finishes the results files and writes the report folder the arguments ask for, saying how
/// long the writing took beside the run and how long the run waited for it.
fn save(
    args: &RunOptions,
    record: &RunRecord,
    folder: Option<stream_litmus::atomic_write::Folder>,
    writers: Vec<(PathBuf, RunWriter)>,
) -> Result<(), CliError> {
    for (path, writer) in writers {
        let stats = writer.finish(record)?;
        outln!(
            "results written to {} ({:.1} MB of JSON; {:.2} s of writing beside the run, {:.2} s \
             of it added to the run)",
            stream_litmus::report::shown::path(&path),
            stats.bytes as f64 / 1e6,
            stats.busy.as_secs_f64(),
            stats.waited.as_secs_f64()
        );
    }
    if let (Some(dir), Some(folder)) = (&args.out, folder) {
        write_reports(record, dir)?;
        folder.keep();
    }
    if let Some(path) = &args.junit {
        write_junit(path, record)?;
    }
    Ok(())
}

/// Writes `--junit`: one test case per claim, its class the claim's family (the id before its
/// first dot), its evidence the failure's text.
fn write_junit(path: &Path, record: &RunRecord) -> Result<(), CliError> {
    use stream_litmus::report::junit::{junit_xml, Case, Outcome as JOutcome};
    use stream_litmus::Outcome;
    let cases: Vec<Case> = (record.claims.iter())
        .map(|rec| {
            let id = &rec.claim.id;
            let family = id.split('.').next().unwrap_or(id);
            let outcome = match &rec.outcome {
                Outcome::Ran { .. } if rec.as_expected() => JOutcome::Passed,
                Outcome::Ran { judgement, .. } => JOutcome::Failed {
                    message: format!(
                        "{} {}, expected {}",
                        judgement.verdict, judgement.counts, rec.claim.expect
                    ),
                    text: judgement.evidence(&rec.claim.program),
                },
                Outcome::Failed { error } => JOutcome::Error {
                    message: "not judged".into(),
                    text: error.to_string(),
                },
            };
            Case {
                name: id.clone(),
                classname: format!("stream-litmus.{family}"),
                time_s: None,
                outcome,
                out: terminal::claim_line(rec),
            }
        })
        .collect();
    let xml = junit_xml("stream-litmus run", &cases);
    let text: stream_litmus::atomic_write::Writer =
        Box::new(move |w: &mut dyn std::io::Write| w.write_all(xml.as_bytes()));
    stream_litmus::atomic_write::write_each_or_none(&mut [(path.to_path_buf(), text)])?;
    outln!(
        "JUnit XML written to {}",
        stream_litmus::report::shown::path(path)
    );
    Ok(())
}
