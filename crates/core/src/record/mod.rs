//! Records: what a run produced, as the JSON a user keeps, replays and compares.
//!
//! A [`RunRecord`] holds the device and its calibration, and for every claim the claim itself
//! (program, checks, expectation), the raw timelines of every trial and the judgement made from
//! them. Judgements are derived data: [`ClaimRecord::rejudge`] recomputes them from the stamps on
//! any machine, which is how recorded GPU runs become CPU test fixtures.

//! The layer's files: [`run`] (the types), [`file`] (load and save), [`writer`] and [`reader`]
//! (a file claim by claim, while a run goes on and while it is read back), [`gzip`] (compressing
//! on several cores), [`check`] (what a file must satisfy before anything in it is used).
//!
//! **May import:** `judge`, `measured`, `program`, `border`. A record is written by the lab and
//! read by the reports, neither of which it knows.

pub mod check;
mod error;
mod file;
mod flow;
mod gzip;
mod reader;
mod run;
mod splitter;
mod writer;

pub use error::{ClaimProblem, RecordError};
pub use run::{
    ClaimRecord, Outcome, Rejudge, Rejudging, RunRecord, RunTiming, Trials, KEPT_TRIALS,
    SCHEMA_VERSION,
};
pub use writer::{RunWriter, WriteStats};
