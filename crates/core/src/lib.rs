//! # stream-litmus-core
//!
//! The ground floor of stream-litmus, with no GPU: programs as plain data (`program`), the
//! happens-before model of stream semantics (`model`), what a run measured (`measured`), claims,
//! relations and verdicts (`judge`), and the results file (`record`), on the bounds and helpers
//! every input goes through (`border`).
//!
//! The `stream-litmus` crate re-exports all of it; use that one. The layers, from the ground up;
//! each folder's module docs say what it may import, `tests/cpu/layers.rs` holds every
//! `use crate::` line to that, and Cargo keeps the crates above out.

pub mod border;
pub mod judge;
pub mod measured;
pub mod model;
pub mod program;
pub mod record;
