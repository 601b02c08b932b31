//! The timing lines at the end of `run` and `check`: where the run's time went (issue 16), and
//! with `--bench` the table per claim family.

use super::{out, CliError};
use stream_litmus::report::timing;
use stream_litmus::RunRecord;

/// How many of the slowest claims are listed.
const SLOWEST: usize = 5;

pub fn print(record: &RunRecord, bench: bool) -> Result<(), CliError> {
    out!("{}", timing::summary(record, SLOWEST));
    if bench {
        out!("{}", timing::bench(record));
    }
    Ok(())
}
