//! Commands that need no GPU: `judge`, `render` and `compare` read results files.
//!
//! Every file is read one claim at a time (`RunRecord::read_each`), each claim checked and
//! re-judged under the current rules as it comes, and nothing is printed, drawn, compared or
//! written back before the whole file was read and checked; every output is written
//! atomically, so `judge IN --write IN` cannot lose IN on a full disk. Claims are judged on
//! several threads where the machine has cores to spare ([`judge_threads`]), prepared and taken
//! back in the file's order, so that verdicts, messages and the neighbours' shares carried from
//! claim to claim are those of one thread. Memory holds the stamps of the claims being judged
//! (at most [`JUDGED_BYTES`] beyond one claim), and what the reports draw of the others
//! (`ClaimRecord::kept`).

use super::arguments::{not_the_input, writable_file};
use super::{out, outln, write_reports, CliError, CliResult};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use stream_litmus::in_order::{spare_cores, InOrder};
use stream_litmus::limits::{describe_bytes, kept_limit, KEPT_LIMIT_ENV};
use stream_litmus::report::terminal;
use stream_litmus::{Rejudge, Rejudging, RunRecord, RunWriter, Verdict};

/// A results file re-judged claim by claim: the re-judged records as a run keeps them
/// (`ClaimRecord::kept`: every outcome, the stamps of the first trials and the witness), in the
/// file's order, and each one's recorded verdict.
struct Replayed {
    run: RunRecord,
    recorded: Vec<Option<Verdict>>,
}

impl Replayed {
    /// How many re-judged verdicts differ from the recorded ones.
    fn moved(&self) -> usize {
        self.recorded
            .iter()
            .zip(&self.run.claims)
            .filter(|(old, new)| **old != new.verdict())
            .count()
    }
}

/// Reads `path` one claim at a time, re-judging each under the current rules, so that memory
/// holds one claim's stamps whatever the trial count; with `write`, each re-judged claim goes to
/// that file as it is judged, and the writer is handed back unfinished (the caller finishes it
/// once it has printed its report). A file from before every trial was clock-synced may need a
/// second pass (`Rejudging::elsewhere`); the file is then read again, and written again.
fn replay(path: &Path, write: Option<&Path>) -> Result<(Replayed, Option<RunWriter>), CliError> {
    let (first, writer, again) = replay_pass(path, write, None)?;
    match again {
        None => Ok((first, writer)),
        Some(elsewhere) => {
            drop(writer);
            let (second, writer, _) = replay_pass(path, write, Some(&elsewhere))?;
            Ok((second, writer))
        }
    }
}

/// One pass of [`replay`]: the records, the writer of `write`, and what a second pass must tell
/// the claims with unsynced trials (`None`: no second pass is needed, or this was it).
fn replay_pass(
    path: &Path,
    write: Option<&Path>,
    elsewhere: Option<&str>,
) -> Result<(Replayed, Option<RunWriter>, Option<String>), CliError> {
    let mut taking = Taking {
        path,
        judging: Rejudging::default(),
        claims: Vec::new(),
        refused: false,
        kept: 0,
        budget: kept_limit(),
        writer: write.map(RunWriter::start),
    };
    let mut recorded = Vec::new();
    let judge = |r: Rejudge| r.judge();
    let head = std::thread::scope(|scope| {
        let mut judges =
            InOrder::start(scope, judge_threads(), "rejudge", JUDGED_PER_WORKER, &judge)
                .within(JUDGED_BYTES);
        let read = RunRecord::read_each(path, |c| {
            recorded.push(c.verdict());
            let r = taking.judging.prepare(c, elsewhere);
            let weight = r.claim().held_bytes();
            judges.send_weighed(r, weight, &mut |r| taking.take(r))
        });
        // The claims with the judges come before whatever stopped the reading: an error in
        // taking them is the first in the file's order.
        match read {
            Err(e) if taking.refused => Err(e),
            Err(e) => judges.finish(&mut |r| taking.take(r)).and(Err(e)),
            Ok(head) => judges.finish(&mut |r| taking.take(r)).map(|()| head),
        }
    })?;
    let again = taking.judging.elsewhere().filter(|_| elsewhere.is_none());
    let run = RunRecord {
        claims: taking.claims,
        ..head
    };
    Ok((Replayed { run, recorded }, taking.writer, again))
}

/// The most threads that judge a file's claims again: with the threads that parse them
/// (`record::reader`), four kept up with the thread that cuts the benchmark's file.
const MAX_JUDGE_THREADS: usize = 4;

/// The claims each judge may hold (judged or being judged) before the oldest is taken back: 3,
/// as for the parsers (`record::reader`, where the measurements are).
const JUDGED_PER_WORKER: usize = 3;

/// The stamps the judges hold at once, beyond one claim: a results file's claims hold a few KB
/// to half a GB of stamps each (`scenario.sleep.grid` at 1,000 trials), and the reading held one
/// claim's at a time before they were judged on several threads.
const JUDGED_BYTES: u64 = 64 << 20;

/// Threads that judge claims for the machine: its cores less the two that read the file
/// (cutting it, and taking its claims in order); none below three cores, where each claim is
/// judged as it is read.
fn judge_threads() -> usize {
    spare_cores(2).min(MAX_JUDGE_THREADS)
}

/// What a pass keeps of the claims judged, taken back in the file's order.
struct Taking<'p> {
    path: &'p Path,
    judging: Rejudging,
    claims: Vec<stream_litmus::ClaimRecord>,
    /// Whether a claim was refused (it kept more than the budget): none after it is taken.
    refused: bool,
    /// The bytes the claims kept so far hold, against `budget`.
    kept: u64,
    budget: u64,
    writer: Option<RunWriter>,
}

impl Taking<'_> {
    fn take(&mut self, r: Rejudge) -> Result<(), stream_litmus::Error> {
        let c = self.judging.judged(r);
        let k = c.kept();
        self.kept = self.kept.saturating_add(k.kept_bytes());
        if self.kept > self.budget {
            self.refused = true;
            return Err(stream_litmus::Error::File {
                path: stream_litmus::report::shown::path(self.path),
                detail: format!(
                    "the claims up to `{}` keep over {} for the report (every trial's outcome, \
                     the first trials' stamps), the most the reports keep ({KEPT_LIMIT_ENV} \
                     raises it, in MiB); nothing was printed: judge fewer claims or trials at \
                     a time",
                    k.claim.id,
                    describe_bytes(self.budget)
                ),
            });
        }
        self.claims.push(k);
        if let Some(w) = &mut self.writer {
            let bytes = c.kept_bytes();
            w.claim_sized(Arc::new(c), bytes);
        }
        Ok(())
    }
}

/// Loads a results file, re-judges it from its stamps and prints the report. The flag says
/// whether every re-judged verdict equals the recorded one.
fn rejudge(path: &Path, write: Option<&Path>) -> Result<(RunRecord, bool), CliError> {
    let (replayed, writer) = replay(path, write)?;
    let rejudged = &replayed.run;
    if let Some(cal) = &rejudged.calibration {
        out!("{}", terminal::header(cal, rejudged.trials_per_claim));
    }
    for (old, new) in replayed.recorded.iter().zip(&rejudged.claims) {
        outln!("{}", terminal::claim_line(new));
        if *old != new.verdict() {
            outln!(
                "     recorded verdict {:?} differs from the re-judged {:?}",
                old,
                new.verdict()
            );
        }
    }
    for table in stream_litmus::report::scenario::tables(&rejudged.claims) {
        outln!("\n{table}");
    }
    outln!("{}", terminal::footer(rejudged));
    super::timing_lines::print(rejudged, true)?;
    let same = replayed.moved() == 0;
    if let Some(w) = writer {
        w.finish(&replayed.run)?;
    }
    Ok((replayed.run, same))
}

pub fn judge(path: &Path, write: Option<&Path>) -> CliResult {
    if let Some(out) = write {
        // Writing over the input is allowed here, on purpose: the write is atomic, and the input
        // is read in full before the new file is renamed over it.
        writable_file(out)?;
    }
    let (run, same) = rejudge(path, write)?;
    if let Some(out) = write {
        outln!(
            "re-judged results written to {}",
            stream_litmus::report::shown::path(out)
        );
    }
    Ok(if same && run.all_as_expected() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub fn render(path: &Path, out: &Path) -> CliResult {
    for name in ["report.html", "trace.json"] {
        not_the_input(&out.join(name), path, "--out folder")?;
    }
    // The folder (no link, writable) before any judging: a refusal after minutes of work is
    // work thrown away.
    let folder = super::arguments::writable_folder(out)?;
    for name in ["report.html", "trace.json"] {
        stream_litmus::atomic_write::check_writable(&out.join(name))?;
    }
    let (run, same) = rejudge(path, None)?;
    if !same {
        let _ = writeln!(
            std::io::stderr(),
            "stream-litmus: re-judging changed verdicts; the report shows the re-judged ones"
        );
    }
    write_reports(&run, out)?;
    folder.keep();
    Ok(if same {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Compares two results files, both re-judged under the current rules first, so that a
/// difference is one of behaviour and not of the rules each file was judged with.
pub fn compare(a: &Path, b: &Path) -> CliResult {
    let ra = replay(a, None)?.0;
    let rb = replay(b, None)?.0;
    for (name, path, moved) in [("a", a, ra.moved()), ("b", b, rb.moved())] {
        if moved > 0 {
            outln!(
                "note   {name} ({}): {moved} recorded verdict(s) differ from the current rules'; \
                 compared as re-judged",
                stream_litmus::report::shown::path(path)
            );
        }
    }
    let (text, differ) = stream_litmus::report::compare::compare(&ra.run, &rb.run);
    out!("{text}");
    Ok(if differ == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
