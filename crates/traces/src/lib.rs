//! # stream-litmus-traces
//!
//! stream-litmus on a program's own trace, with no GPU: `trace` (the profiler's Kineto JSON and
//! our CUPTI lines, read into trials and timelines, the program behind them rebuilt for the
//! model), `trace_claims` (claims judged on traces) and `explain` (what held a traced program
//! back).
//!
//! The `stream-litmus` crate re-exports all of it; use that one. The core's layers are named
//! here as they are in the core (`crate::program`, …).

pub use stream_litmus_core::{border, judge, measured, model, program, record};

pub mod explain;
pub mod trace;
pub mod trace_claims;
