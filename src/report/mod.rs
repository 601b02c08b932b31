//! Reports: analysis kept apart from output. Everything here reads records and writes text; it
//! never runs or judges anything.
//!
//! - [`terminal`]: the lines `stream-litmus` prints;
//! - [`html`] with [`svg`]: one self-contained page with a timeline per claim;
//! - [`chrome_trace`]: Chrome Trace Event Format, for Perfetto UI and chrome://tracing;
//! - [`traced_chrome`], [`traced_html`]: the Chrome trace and the page of claims judged on traces of
//!   the user's program; [`explained_chrome`], [`explained_html`]: the same of `explain`;
//! - [`placement`]: where every op of a trial is drawn, one function for all three pictures so
//!   they cannot disagree; [`thin`]: dense lanes merged into runs so pictures stay small;
//! - [`compare`]: what differs between two runs;
//! - [`junit`]: verdicts as JUnit XML; [`traced_json`]: claims judged on traces as JSON;
//! - [`fuzz_report`]: the fuzz command's report;
//! - [`scenario`]: the tables of the notes' example systems (seeds 000, 004, 002);
//! - [`sweep_tables`]: the sweep command's tables;
//! - [`timing_text`]: where a run's time went (the lab's own cost beside the GPU's), and `run --bench`;
//! - [`shown`]: text from files shown, not obeyed (control characters escaped).
//!
//! **May import:** every layer but the CLI; reports read records and never run anything.

mod canvas;
pub mod chrome_trace;
pub mod compare;
pub mod explained_chrome;
pub mod explained_html;
pub mod explained_json;
pub mod fuzz_report;
pub mod html;
pub mod junit;
pub mod placement;
pub mod scenario;
pub use crate::border::shown;
pub mod svg;
mod svg_marks;
pub mod sweep_tables;
pub mod terminal;
pub mod thin;
pub mod timing_text;
pub mod traced_chrome;
pub mod traced_html;
pub mod traced_json;
