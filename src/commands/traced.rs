//! `stream-litmus check [--trace TRACE…] FILE…` for claims on traces: judged on recorded
//! traces of the user's own program, with no GPU (docs/checking-your-program.md).
//!
//! Each claim is judged on the traces given with `--trace`, or else on the traces its file
//! names (`trace "…"`, relative to the claim file). Traces are read once however many claims
//! name them. Exit status: 0 when every verdict is the expected one, 1 when one is not, 2 when
//! a file cannot be read or a claim cannot be judged on its trace (it selects nothing, it is
//! over a claim's budget, or the claims before it spent what one run judges in all: then it is
//! shown Inconclusive, not judged, and the claims after it are still reported).

use super::{errln, outln, CliError, CliResult};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use stream_litmus::atomic_write::Writer;
use stream_litmus::litmus::{self, LitmusError};
use stream_litmus::report::shown::one_line;
use stream_litmus::trace::{GpuKind, Trace, TraceError};
use stream_litmus::trace_claims::{
    judge_ahead, judge_in_run, Ahead, Reasons, RunBudget, TraceClaim, TraceJudgement, Unjudged,
    RUN_WORK_ENV,
};
use stream_litmus::Verdict;

/// The claims judged at once ([`judge_ahead`]): each holds its trials' cuts and outcomes while
/// it is judged (2 MB or so a claim on the docs' 200 MB benchmark); four at once held 7 MiB
/// more than two, past a quarter of the trace's size, for 0.44× `json.load` against 0.49× on 16
/// cores (docs/measurements.md).
const MAX_AHEAD: usize = 2;

/// A claim file and its claims on traces, or the error that says why it has none.
pub type Parsed = (PathBuf, Result<Vec<TraceClaim>, LitmusError>);

/// The traces a claim is judged on: their paths, and the names of its recordings.
type Key = (Vec<PathBuf>, Vec<String>);

/// Each path's claims on traces, parsed once, when every path is a file of claims on traces
/// (then `check` judges them here); `None` when one is not.
pub fn all_traced(paths: &[PathBuf]) -> Option<Vec<Parsed>> {
    if paths.is_empty() {
        return None;
    }
    (paths.iter())
        .map(|p| match p.is_file() {
            true => Some((p.clone(), litmus::load_if_traced(p)?)),
            false => None,
        })
        .collect()
}

/// Each file's claims on traces, parsed (for `--trace`, where every file must hold them).
pub fn load_each(paths: &[PathBuf]) -> Vec<Parsed> {
    (paths.iter())
        .map(|p| (p.clone(), litmus::load_traced(p)))
        .collect()
}

/// How the claims came out: as expected, not, and not judged.
#[derive(Default)]
struct Tally {
    expected: usize,
    not: usize,
    errors: usize,
    /// Claims not judged: the run's budget was spent (`trace_claims/run_budget.rs`).
    past_budget: usize,
}

pub fn check_traced(
    parsed: Vec<Parsed>,
    traces: &[PathBuf],
    filters: &[String],
    outputs: &Outputs,
) -> CliResult {
    let began = Instant::now();
    let claims = claims_kept(parsed, filters)?;
    files_checked(outputs, &claims, traces)?;
    let folder = match outputs.out {
        Some(dir) => Some(outputs_checked(dir, &claims, traces)?),
        None => None,
    };
    let mut read: HashMap<Key, Result<Trace, TraceError>> = HashMap::new();
    let mut tally = Tally::default();
    // What the run judges in all, over its claims (`trace_claims/run_budget.rs`).
    let mut budget = RunBudget::default();
    // Every claim's outcome, judged or why not, with its traces and time: for --json and --junit.
    let mut done: Vec<Done> = Vec::new();
    let keys: Vec<Result<Key, Unjudged>> = (claims.iter())
        .map(|(file, claim)| traces_of(file, claim, traces))
        .collect();
    // Claims judged ahead of their turn, once their trace is read (`trace_claims/ahead.rs`).
    let mut ahead: HashMap<usize, Ahead> = HashMap::new();
    // Each trial's words only where an output shows each trial.
    let reasons = match outputs.wants_trials() {
        true => Reasons::Every,
        false => Reasons::Witnesses,
    };
    for (i, ((file, claim), key)) in claims.iter().zip(keys.iter().cloned()).enumerate() {
        let started = Instant::now();
        let key = match key {
            Ok(key) => key,
            Err(e) => {
                errln!("error: {e}\n");
                tally.errors += 1;
                done.push((file, claim, None, Err(e), 0.0));
                continue;
            }
        };
        let fresh = !read.contains_key(&key);
        let trace = read
            .entry(key.clone())
            .or_insert_with(|| Trace::read_runs(&key.0, &key.1));
        let trace = match trace {
            Ok(t) => t,
            Err(e) => {
                if fresh {
                    errln!("error: {e}\n");
                }
                tally.errors += 1;
                done.push((
                    file,
                    claim,
                    Some(key),
                    Err(Unjudged::Refused(e.clone())),
                    0.0,
                ));
                continue;
            }
        };
        if fresh {
            describe(&key, trace)?;
            // What the run judges grows with what it reads (`RunBudget::grow_for`).
            budget.grow_for(trace.files.iter().map(|f| f.ops.len()).sum());
        }
        // The claim's time: its trace's reading, where it read it, and its own judging.
        let reading = started.elapsed();
        // A wave of this claim and the next on its trace, judged at once against the budget as
        // it stands: a wave at a time, so that what is judged ahead and then turned away
        // (claims past the run's budget) is one wave at most.
        if !ahead.contains_key(&i) {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let wave: Vec<usize> = (i..claims.len())
                .filter(|&j| keys[j].as_ref().is_ok_and(|k| *k == key))
                .take(cores.min(MAX_AHEAD))
                .collect();
            if wave.len() > 1 {
                let these: Vec<&TraceClaim> = wave.iter().map(|&j| &claims[j].1).collect();
                let judged = judge_ahead(&these, trace, &budget, cores, reasons);
                ahead.extend(wave.into_iter().zip(judged));
            }
        }
        // Judged ahead, where that is what judging it now gives; else now.
        let (settled, mut judging) = match ahead.remove(&i) {
            Some(a) => {
                let took = a.took;
                (a.settle(&mut budget), took)
            }
            None => (None, std::time::Duration::ZERO),
        };
        let judged = match settled {
            Some(j) => Ok(j),
            None => {
                let now = Instant::now();
                let j = judge_in_run(claim, trace, &mut budget, reasons);
                judging = now.elapsed();
                j
            }
        };
        let outcome = match judged {
            Ok(mut j) => {
                match verdict_line(claim, &j)? {
                    true => tally.expected += 1,
                    false => tally.not += 1,
                }
                // Its trials' outcomes are written only to --out, --json and --junit: without
                // them, each claim's (a few MB on a large trace) is let go once its line is out.
                if !outputs.wants_trials() {
                    j.trials = Vec::new();
                }
                Ok(j)
            }
            Err(Unjudged::PastRunBudget(why)) => {
                skipped(file, claim, &why, tally.past_budget)?;
                tally.past_budget += 1;
                tally.errors += 1;
                Err(Unjudged::PastRunBudget(why))
            }
            // Refused on this trace (judging finds no `NoTraces`: its traces were read).
            Err(e) => {
                errln!("error: {}: {e}\n", stream_litmus::report::shown::path(file));
                tally.errors += 1;
                Err(e)
            }
        };
        done.push((
            file,
            claim,
            Some(key),
            outcome,
            (reading + judging).as_secs_f64(),
        ));
    }
    if tally.past_budget > 0 {
        errln!(
            "error: {} claims were not judged, Inconclusive: a claim needed more than was left \
             of what one `check` run judges in all ({} ops in trials and pairs measured, \
             trace_claims::MAX_RUN_WORK; {RUN_WORK_ENV} sets it): judge them in runs of their \
             own (split the claim file, or pick claims with --filter), or raise the bound\n",
            tally.past_budget,
            budget.total()
        );
    }
    if let Some(dir) = outputs.out {
        let rows: Vec<_> = (done.iter())
            .filter_map(|(_, c, k, j, _)| {
                Some((*c, read.get(k.as_ref()?)?.as_ref().ok()?, j.as_ref().ok()?))
            })
            .collect();
        write_outputs(dir, &rows, folder)?;
    }
    if let Some(path) = outputs.json {
        write_json(path, &done)?;
    }
    if let Some(path) = outputs.junit {
        write_junit(path, &done)?;
    }
    tally.summary(claims.len(), began)
}

/// Where `check` writes what it judged on traces, besides the terminal.
#[derive(Default)]
pub struct Outputs<'a> {
    /// `--out DIR`: report.html and trace.json.
    pub out: Option<&'a Path>,
    /// `--json FILE`: every claim's verdict as data.
    pub json: Option<&'a Path>,
    /// `--junit FILE`: one test case per claim.
    pub junit: Option<&'a Path>,
}

impl Outputs<'_> {
    /// Whether an output shows each trial's outcomes (the terminal shows a claim's line).
    fn wants_trials(&self) -> bool {
        self.out.is_some() || self.json.is_some() || self.junit.is_some()
    }
}

/// A claim of the run: its file, itself, its traces where they were found, and its judgement or
/// why it has none, with the seconds it took.
type Done<'a> = (
    &'a PathBuf,
    &'a TraceClaim,
    Option<Key>,
    Result<TraceJudgement, Unjudged>,
    f64,
);

/// Writes `check --json`: each claim with the SHA-256 of the traces it was judged on (each file
/// read once more, only here).
fn write_json(path: &Path, done: &[Done]) -> Result<(), CliError> {
    use stream_litmus::report::traced_json::{traced_json, Row, TraceDigest};
    let mut digests: HashMap<&Key, Vec<TraceDigest>> = HashMap::new();
    for key in done.iter().filter_map(|d| d.2.as_ref()) {
        digests.entry(key).or_insert_with(|| {
            (key.0.iter())
                .map(|p| {
                    let (bytes, sha256) =
                        stream_litmus::digest::sha256_file(p).unwrap_or((0, String::new()));
                    TraceDigest {
                        path: p.display().to_string(),
                        bytes,
                        sha256,
                    }
                })
                .collect()
        });
    }
    let rows: Vec<Row> = (done.iter())
        .map(|(file, claim, key, outcome, _)| Row {
            file: file.display().to_string(),
            claim,
            traces: key.as_ref().and_then(|k| digests.get(k)).map_or(&[], |d| d),
            outcome: outcome.as_ref(),
        })
        .collect();
    let doc = traced_json(&rows);
    let text: Writer = Box::new(move |w: &mut dyn Write| {
        serde_json::to_writer_pretty(&mut *w, &doc).map_err(std::io::Error::other)?;
        w.write_all(b"\n")
    });
    stream_litmus::atomic_write::write_each_or_none(&mut [(path.to_path_buf(), text)])?;
    outln!(
        "verdicts written to {}",
        stream_litmus::report::shown::path(path)
    );
    Ok(())
}

/// Writes `check --junit`: one test case per claim, its class the claim file.
fn write_junit(path: &Path, done: &[Done]) -> Result<(), CliError> {
    use stream_litmus::report::junit::{junit_xml, Case, Outcome};
    let cases: Vec<Case> = (done.iter())
        .map(|(file, claim, _, outcome, secs)| {
            let (outcome, out) = match outcome {
                Ok(j) if j.verdict.matches(claim.expect) => {
                    (Outcome::Passed, format!("{} {}", j.verdict, j.counts))
                }
                Ok(j) => (
                    Outcome::Failed {
                        message: format!("{} {}, expected {}", j.verdict, j.counts, claim.expect),
                        text: j.evidence(claim),
                    },
                    format!("{} {}", j.verdict, j.counts),
                ),
                Err(why) => (
                    Outcome::Error {
                        message: "not judged".into(),
                        text: why.to_string(),
                    },
                    "not judged".into(),
                ),
            };
            Case {
                name: claim.id.clone(),
                classname: file.display().to_string(),
                time_s: Some(*secs),
                outcome,
                out,
            }
        })
        .collect();
    let xml = junit_xml("stream-litmus check", &cases);
    let text: Writer = Box::new(move |w: &mut dyn Write| w.write_all(xml.as_bytes()));
    stream_litmus::atomic_write::write_each_or_none(&mut [(path.to_path_buf(), text)])?;
    outln!(
        "JUnit XML written to {}",
        stream_litmus::report::shown::path(path)
    );
    Ok(())
}

/// The files --json and --junit name, checked before anything is read: writable, no link, not
/// one another or a file of --out, and none of them a claim file or a trace judged.
fn files_checked(
    outputs: &Outputs,
    claims: &[(PathBuf, TraceClaim)],
    traces: &[PathBuf],
) -> Result<(), CliError> {
    let files: Vec<(&Path, &str)> = [(outputs.json, "--json"), (outputs.junit, "--junit")]
        .into_iter()
        .filter_map(|(p, flag)| Some((p?, flag)))
        .collect();
    let out_files: Vec<PathBuf> = (outputs.out.iter())
        .flat_map(|d| [d.join("trace.json"), d.join("report.html")])
        .collect();
    for (i, (path, flag)) in files.iter().enumerate() {
        for input in inputs_of(claims, traces) {
            super::arguments::not_the_input(path, &input, flag)?;
        }
        let others = (files[..i].iter().map(|(p, _)| p.to_path_buf())).chain(out_files.clone());
        for other in others {
            if stream_litmus::atomic_write::same_file(path, &other) || *path == other {
                return Err(CliError::usage(format!(
                    "{flag} {} is also another output of this run; choose another {flag}",
                    stream_litmus::report::shown::path(path)
                )));
            }
        }
        super::arguments::writable_file(path)?;
    }
    Ok(())
}

/// Every file the run reads: the claim files and the traces they are judged on.
fn inputs_of(claims: &[(PathBuf, TraceClaim)], traces: &[PathBuf]) -> Vec<PathBuf> {
    (claims.iter())
        .flat_map(|(f, c)| {
            let named = match traces.is_empty() {
                true => c.trace_paths(f),
                false => Vec::new(),
            };
            std::iter::once(f.clone()).chain(named)
        })
        .chain(traces.iter().cloned())
        .collect()
}

impl Tally {
    /// The last line, and the exit status: 2 where a claim could not be judged, 1 where one came
    /// out not as expected.
    fn summary(&self, claims: usize, began: Instant) -> CliResult {
        outln!(
            "{} as expected, {} not, of {claims} claims{}; judged in {:.2} s, no GPU used",
            self.expected,
            self.not,
            match self.errors {
                0 => String::new(),
                n => format!(" ({n} could not be judged)"),
            },
            began.elapsed().as_secs_f64()
        );
        Ok(ExitCode::from(if self.errors > 0 {
            2
        } else if self.not > 0 {
            1
        } else {
            0
        }))
    }
}

/// The claims of every file that the filters keep, or the error when a file has errors (each
/// printed) or no claim is kept.
fn claims_kept(
    parsed: Vec<Parsed>,
    filters: &[String],
) -> Result<Vec<(PathBuf, TraceClaim)>, CliError> {
    let mut claims: Vec<(PathBuf, TraceClaim)> = Vec::new();
    let mut failed = false;
    for (f, loaded) in parsed {
        match loaded {
            Ok(cs) => claims.extend(cs.into_iter().map(|c| (f.clone(), c))),
            Err(e) => {
                errln!("{e}\n");
                failed = true;
            }
        }
    }
    if failed {
        return Err(CliError::usage(
            "the claim files above have errors; nothing was judged",
        ));
    }
    super::filters::kept(claims, |(_, c)| c.id.as_str(), filters, "in these files")
}

/// The traces `claim` is judged on: those given with `--trace`, or else those its file names;
/// an error when it names none or names recordings `--trace` cannot give.
fn traces_of(file: &Path, claim: &TraceClaim, traces: &[PathBuf]) -> Result<Key, Unjudged> {
    let paths = match traces.is_empty() {
        false => traces.to_vec(),
        true => claim.trace_paths(file),
    };
    if paths.is_empty() {
        return Err(Unjudged::NoTraces(format!(
            "{}: claim `{}` names no trace: add `trace \"FILE\"` to it or give `--trace FILE`",
            stream_litmus::report::shown::path(file),
            one_line(&claim.id)
        )));
    }
    // Recordings are named in the claim file; traces given on the command line are one.
    let runs = match traces.is_empty() {
        true => claim.runs.clone(),
        false => Vec::new(),
    };
    if !traces.is_empty() && claim.selections.iter().any(|s| s.run.is_some()) {
        return Err(Unjudged::NoTraces(format!(
            "{}: claim `{}` selects from named recordings (`from NAME`): name its traces in the \
             claim file (`trace \"FILE\" as NAME`), not with `--trace`",
            stream_litmus::report::shown::path(file),
            one_line(&claim.id)
        )));
    }
    Ok((paths, runs))
}

/// The lines that say what a trace holds, printed the first time a claim is judged on it.
fn describe(key: &Key, trace: &Trace) -> Result<(), CliError> {
    let paths = &key.0;
    let all = trace.files.iter().flat_map(|f| &f.ops);
    let host = all.clone().filter(|o| o.kind == GpuKind::HostFn).count();
    let ops = all.count() - host;
    // "SAME ddp.rank0.json.gz" where the claim names its recordings.
    let names: Vec<String> = (paths.iter().enumerate())
        .map(|(i, p)| match key.1.get(i) {
            Some(run) => format!("{run} {}", stream_litmus::report::shown::path(p)),
            None => stream_litmus::report::shown::path(p),
        })
        .collect();
    let host = match host {
        0 => String::new(),
        n => format!(", {n} host functions"),
    };
    outln!("trace  {} ({ops} GPU ops{host})", names.join(", "));
    outln!("       {}", trace.tolerances.describe());
    for note in trace.files.iter().filter_map(|f| f.join_note.as_deref()) {
        outln!("note   {}", stream_litmus::report::shown::shown(note));
    }
    Ok(())
}

/// The line of a claim not judged because the run's budget was spent; the first also says why
/// on stderr (the count of all comes at the end).
fn skipped(file: &Path, claim: &TraceClaim, why: &str, before: usize) -> Result<(), CliError> {
    outln!(
        "skip {:<40} {:<12} {:<14} {}",
        one_line(&claim.id),
        Verdict::Inconclusive,
        "not judged",
        one_line(why)
    );
    if before == 0 {
        errln!(
            "error: {}: {why}\n",
            stream_litmus::report::shown::path(file)
        );
    }
    Ok(())
}

/// Prints a claim's verdict line; whether the verdict is the expected one.
fn verdict_line(claim: &TraceClaim, j: &TraceJudgement) -> Result<bool, CliError> {
    let ok = j.verdict.matches(claim.expect);
    outln!(
        "{} {:<40} {:<12} {:<14} {}",
        if ok { "ok  " } else { "FAIL" },
        one_line(&claim.id),
        j.verdict,
        format!("{} trials", j.counts),
        one_line(&j.evidence(claim))
    );
    Ok(ok)
}

/// Writes trace.json and report.html into `dir`, both or neither, keeps the folder made for
/// them and says where they are.
fn write_outputs(
    dir: &Path,
    rows: &[(&TraceClaim, &Trace, &TraceJudgement)],
    folder: Option<stream_litmus::atomic_write::Folder>,
) -> Result<(), CliError> {
    let page = stream_litmus::report::traced_html::html_report(rows);
    let path = dir.join("trace.json");
    // The Perfetto trace is written as it is made: it holds every op of every trial.
    let trace: Writer = Box::new(|w: &mut dyn Write| {
        stream_litmus::report::traced_chrome::write_chrome_trace(rows, w)
    });
    let report: Writer = Box::new(|w: &mut dyn Write| w.write_all(page.as_bytes()));
    stream_litmus::atomic_write::write_each_or_none(&mut [
        (path.clone(), trace),
        (dir.join("report.html"), report),
    ])?;
    if let Some(f) = folder {
        f.keep();
    }
    outln!(
        "report {}",
        stream_litmus::report::shown::path(&dir.join("report.html"))
    );
    outln!(
        "trace  {} (open it in ui.perfetto.dev)",
        stream_litmus::report::shown::path(&path)
    );
    Ok(())
}

/// The report folder made and its two files checked before anything is read: writable, no link,
/// and neither one a claim file or a trace judged (which the report would replace).
fn outputs_checked(
    dir: &Path,
    claims: &[(PathBuf, TraceClaim)],
    traces: &[PathBuf],
) -> Result<stream_litmus::atomic_write::Folder, CliError> {
    let folder = super::arguments::writable_folder(dir)?;
    let inputs = inputs_of(claims, traces);
    let outputs = [dir.join("trace.json"), dir.join("report.html")];
    for input in inputs {
        for output in &outputs {
            super::arguments::not_the_input(output, &input, "--out folder")?;
        }
    }
    for output in &outputs {
        stream_litmus::atomic_write::check_writable(output)?;
    }
    Ok(folder)
}
