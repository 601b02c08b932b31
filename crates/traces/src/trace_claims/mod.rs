//! Claims judged on traces of the user's own programs.
//!
//! A claim on a trace ([`TraceClaim`], written in a claim file with `select` and quantified
//! checks) names ops by kind, name pattern, stream, device, rank and annotated range
//! (`select.rs`). `pairs.rs` finds the pairs a quantified check measures (those that could have
//! met, by a sweep over the ops by start on `start_index.rs`, within one pair budget per claim);
//! `checks.rs` decides one check on one trial with the lab's relations and the trace's
//! tolerances (what held an op back and why comes from `trace/causes.rs`); `judgement.rs` counts
//! the verdict over the trials as the lab counts its trials ("Always 5/5 steps"). The trials
//! themselves come from the trace reader (`trace/`), which knows nothing of claims.
//!
//! **May import:** `trace` (trials, patterns), `judge` (relations, verdicts), `measured`
//! (timelines, tolerances), `program` (op ids), `border`. Inside, from the ground up: `select`,
//! `trace_claim`, `on_trial`, `start_index`, `pairs`, `run_budget`, `checks`, `judgement`, `ahead`.
//! `run_budget.rs` holds what one `check` run judges in all, over its claims; `ahead.rs` judges a
//! trace's claims on several threads, keeping what judging them in turn would give.

mod ahead;
mod checks;
mod judgement;
mod on_trial;
mod pairs;
mod run_budget;
mod select;
mod start_index;
mod trace_claim;

pub use ahead::{judge_ahead, Ahead};
pub use checks::CheckOutcome;
pub use judgement::{judge, judge_in_run, members, Reasons, TraceJudgement, TracedTrial};
pub use pairs::MAX_PAIRS;
pub use run_budget::{RunBudget, Unjudged, MAX_RUN_WORK, RUN_WORK_ENV};
pub use select::{Host, KindFilter, Selection};
pub use trace_claim::{Quantifier, TraceCheck, TraceClaim, TraceRelation};
