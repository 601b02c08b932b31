//! Traces of the user's own programs: the second source of timelines beside the GPU.
//!
//! The lab runs programs it wrote and stamps them (`gpu/`); a trace records a program someone
//! else wrote (a PyTorch training step under `torch.profiler`, or any program under
//! `stream-litmus trace --`). Here a trace is read (`kineto.rs`, streamed; names clipped and
//! interned in `names.rs`, numbers checked in `number.rs`), its calls' event waits and host
//! functions found (`events.rs`, `host_fns.rs`), its tolerances measured (`tolerance.rs`), and
//! it is cut into trials (`trials.rs`: each `ProfilerStep#N`, each instance of a named range, or
//! each launch of a marker kernel), every trial a
//! [`Timeline`](crate::measured::timeline::Timeline) as the lab's own. `causes.rs` says what
//! held an op back and why, as far as the trace shows. `recorded.rs` joins what
//! `stream-litmus trace -- CMD` recorded through CUPTI (`crates/inject/src/inject.rs`) into one such trace.
//! Judging claims on those timelines is `trace_claims/`, one floor up.
//!
//! **May import:** `measured` (timelines, tolerances), `program` (op ids), `border` (reading
//! input). Inside, from the ground up: `number`, `glob` (name patterns), `events`, `kept` (what
//! a file may keep in memory), `names`, `host_fns`, `shapes` (events as serde reads them), `collector` (what each event keeps),
//! `syncs` (event waits, syncs and streams as recorded), `split` (`traceEvents` taken out one
//! event at a time), `kineto`, `tolerance`, `facts` (what a trace shows about an op's issue), `trials`, `causes`,
//! `recorded`.

mod behind;
mod causes;
mod chains;
mod chunked;
mod collector;
mod error;
mod event_batches;
mod events;
mod facts;
mod glob;
mod host_fns;
mod kept;
mod kineto;
mod names;
mod number;
mod recorded;
mod shapes;
mod split;
mod syncs;
mod tolerance;
mod trials;

pub use behind::{Behind, Order, Process, Source, MAX_SEARCH};
pub use causes::{held_back, held_by, CauseKind, Held};
pub use collector::MAX_DURATION_US;
pub use error::{EventError, TraceError};
pub use events::{
    Before, Call, DeviceSync, DriverEnv, GpuKind, GpuOp, HostMemory, HostRange, TraceFile,
};
pub use glob::{NameMemo, Pattern, PatternError};
pub use kept::{max_kept, MAX_KEPT};
pub use kineto::read;
pub use names::MAX_NAME_BYTES;
pub use names::{clip, clip_at};
pub use recorded::{join, Joined};
pub use syncs::{CallSpan, EventSource, RecordCall, StreamInfo, SyncCall, SyncKind};
pub use tolerance::{TraceTolerances, CUPTI_TIMER_STEP_NS, MIN_IDLE_ISSUED};
pub use trials::{short_name, Cut, Trace, Trial, TrialSpec, MAX_TRIAL_OPS};
