//! The tests that bound what a command may cost, in a test binary of their own: the CLI run as a
//! child on traces and results files made large or hostile, each judged within a time and a
//! memory bound (issues 36, 44, 51), and the process's turn measured in milliseconds.
//!
//! Apart from `tests/cpu/`, because a bound on time holds only beside work of its own size: in
//! the CPU tests' binary, `trace_costs`' judgements, well within their 2 s alone, went past it
//! beside the model's property tests and the gzip writers' threads. Here the neighbours are these
//! files' own cases, as when each file was a binary, and every timed command runs alone
//! (`common::peak::one_at_a_time`, taken before its clock starts).

#[path = "../common/mod.rs"]
mod common;

mod hostile_results;
mod hostile_traces;
mod recorded_syncs;
mod trace_bounds;
mod trace_commands;
mod trace_costs;
mod turn;
