//! The timing lines at the end of `run` and `check`: where the run's time went (issue 16), and
//! with `--bench` the table per claim family. `judge` prints both for a recorded run, so that
//! runs kept from before and after a change can be compared without a GPU.

use super::{out, CliError};
use stream_litmus::report::timing_text;
use stream_litmus::RunRecord;

/// How many of the slowest claims are listed.
const SLOWEST: usize = 5;

/// Prints nothing for a record without claim timings (written before issue 16).
pub fn print(record: &RunRecord, bench: bool) -> Result<(), CliError> {
    let summary = timing_text::summary(record, SLOWEST);
    if summary.is_empty() {
        return Ok(());
    }
    out!("{summary}");
    if bench {
        out!("{}", timing_text::bench(record));
    }
    Ok(())
}
