//! Commands that need no GPU: `judge`, `render` and `compare` read results files.

use super::write_reports;
use std::process::ExitCode;
use stream_litmus::report::terminal;
use stream_litmus::{ClaimRecord, RunRecord};

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
    for table in stream_litmus::scenario::tables(&rejudged.claims) {
        println!("\n{table}");
    }
    println!("{}", terminal::footer(&rejudged));
    Some((rejudged, same))
}

pub fn judge(path: &std::path::Path, write: Option<&std::path::Path>) -> ExitCode {
    let judged = rejudge(path);
    if let (Some((run, _)), Some(out)) = (&judged, write) {
        if let Err(e) = run.save(out) {
            eprintln!("stream-litmus: {e}");
            return ExitCode::from(2);
        }
        println!("re-judged results written to {}", out.display());
    }
    match judged {
        None => ExitCode::from(2),
        Some((run, true)) if run.all_as_expected() => ExitCode::SUCCESS,
        Some(_) => ExitCode::FAILURE,
    }
}

pub fn render(path: &std::path::Path, out: &std::path::Path) -> ExitCode {
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

pub fn compare(a: &std::path::Path, b: &std::path::Path) -> ExitCode {
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
