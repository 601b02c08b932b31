//! Traces of the user's own programs: the second source of timelines beside the GPU.
//!
//! The lab runs programs it wrote and stamps them; a trace records a program someone else wrote
//! (a PyTorch training step under `torch.profiler`). Here a trace is read (`kineto.rs`, streamed),
//! cut into trials (`trials.rs`: each `ProfilerStep#N`, or each instance of a named range), and
//! every trial becomes a [`Timeline`](crate::measured::timeline::Timeline) that the lab's own
//! relations judge with tolerances measured from the trace (`tolerance.rs`). A claim on a trace
//! ([`TraceClaim`], written in a claim file with `select` and quantified checks) names ops by
//! kind, name pattern, stream, device, rank and annotated range (`select.rs`), and `judge.rs`
//! counts its verdict over the trials as the lab counts trials. `recorded.rs` joins what
//! `stream-litmus trace -- CMD` recorded through CUPTI (`gpu/inject.rs`) into one such trace.
//!
//! **May import:** `judge` (relations, verdicts), `measured` (timelines, tolerances), `program`
//! (op ids), `border` (reading input). Inside, from the ground up: `events`, `held` (what a file
//! may keep), `host_fns` (host functions' runs, from the ranges they open), `kineto`, `select`,
//! `claim`, `tolerance`, `trials`, `recorded`, `sweep` (ops indexed by start and latest end),
//! `pairs` (the pairs a check measures), `checks` (one check on one trial), `judge`.

mod checks;
mod claim;
mod events;
mod glob;
mod held;
mod host_fns;
mod judge;
mod kineto;
mod names;
mod number;
mod pairs;
mod recorded;
mod select;
mod sweep;
mod tolerance;
mod trials;

pub use checks::CheckOutcome;
pub use claim::{Quantifier, TraceCheck, TraceClaim, TraceRelation, TrialSpec};
pub use events::{Call, CopyDir, GpuKind, GpuOp, HostMemory, HostRange, TraceFile};
pub use held::MAX_KEPT;
pub use judge::{judge, TraceJudgement, TracedTrial};
pub use kineto::{read, MAX_DURATION_US};
pub use names::MAX_NAME_BYTES;
pub use pairs::MAX_PAIRS;
pub use recorded::{join, Joined};
pub use select::{Dir, Host, KindFilter, Pattern, Selection};
pub use tolerance::{TraceTolerances, CUPTI_TIMER_STEP_NS, MIN_IDLE_ISSUED};
pub use trials::{short_name, Trace, Trial, MAX_TRIAL_OPS};
