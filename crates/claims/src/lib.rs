//! # stream-litmus-claims
//!
//! Claim files: `litmus` (the claim-file format, parsed and printed, on programs and on traces,
//! and the model's prediction) and `catalogue` (the claims of the study notes, claim files under
//! the repository's `claims/catalogue/`, compiled in).
//!
//! The `stream-litmus` crate re-exports all of it; use that one. The layers below are named
//! here as they are in their crates (`crate::program`, `crate::trace`, …).

pub use stream_litmus_core::{border, judge, measured, model, program, record};
pub use stream_litmus_traces::{explain, trace, trace_claims};

pub mod catalogue;
pub mod litmus;
