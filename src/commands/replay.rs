//! Commands that need no GPU: `judge`, `render` and `compare` read results files.
//!
//! Every file is checked on load (`RunRecord::load`) and re-judged under the current rules
//! before anything is printed, drawn, compared or written back; every output is written
//! atomically, so `judge IN --write IN` cannot lose IN on a full disk.

use super::arguments::{not_the_input, writable_file};
use super::{out, outln, write_reports, CliError, CliResult};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use stream_litmus::report::terminal;
use stream_litmus::RunRecord;

/// The record with every judgement recomputed from the stamps, and how many verdicts moved.
fn rejudged(recorded: &RunRecord) -> (RunRecord, usize) {
    let run = recorded.rejudged();
    let moved = recorded
        .claims
        .iter()
        .zip(&run.claims)
        .filter(|(old, new)| old.verdict() != new.verdict())
        .count();
    (run, moved)
}

/// Loads a results file, re-judges it from its stamps and prints the report. The flag says
/// whether every re-judged verdict equals the recorded one.
fn rejudge(path: &Path) -> Result<(RunRecord, bool), CliError> {
    let recorded = RunRecord::load(path)?;
    if let Some(cal) = &recorded.calibration {
        out!("{}", terminal::header(cal, recorded.trials_per_claim));
    }
    let (rejudged, moved) = rejudged(&recorded);
    for (old, new) in recorded.claims.iter().zip(&rejudged.claims) {
        outln!("{}", terminal::claim_line(new));
        if old.verdict() != new.verdict() {
            outln!(
                "     recorded verdict {:?} differs from the re-judged {:?}",
                old.verdict(),
                new.verdict()
            );
        }
    }
    for table in stream_litmus::report::scenario::tables(&rejudged.claims) {
        outln!("\n{table}");
    }
    outln!("{}", terminal::footer(&rejudged));
    super::timing::print(&rejudged, true)?;
    Ok((rejudged, moved == 0))
}

pub fn judge(path: &Path, write: Option<&Path>) -> CliResult {
    if let Some(out) = write {
        // Writing over the input is allowed here, on purpose: the write is atomic.
        writable_file(out)?;
    }
    let (run, same) = rejudge(path)?;
    if let Some(out) = write {
        run.save(out)?;
        outln!("re-judged results written to {}", out.display());
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
    let (run, same) = rejudge(path)?;
    if !same {
        let _ = writeln!(
            std::io::stderr(),
            "stream-litmus: re-judging changed verdicts; the report shows the re-judged ones"
        );
    }
    let folder = super::arguments::writable_folder(out)?;
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
    let (ra, moved_a) = rejudged(&RunRecord::load(a)?);
    let (rb, moved_b) = rejudged(&RunRecord::load(b)?);
    for (name, path, moved) in [("a", a, moved_a), ("b", b, moved_b)] {
        if moved > 0 {
            outln!(
                "note   {name} ({}): {moved} recorded verdict(s) differ from the current rules'; \
                 compared as re-judged",
                path.display()
            );
        }
    }
    let (text, differ) = stream_litmus::report::compare::compare(&ra, &rb);
    out!("{text}");
    Ok(if differ == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
