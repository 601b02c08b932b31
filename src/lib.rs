//! # stream-litmus
//!
//! Turns claims about CUDA stream and event semantics into GPU experiments with verdicts.
//!
//! A claim ("the legacy null stream is a barrier for blocking streams") becomes a [`Program`] of
//! tiny spin kernels that stamp `%globaltimer`, `%smid` and `clock64`; the [`Lab`] runs it for a
//! number of trials, rebuilds each trial's [`Timeline`] from the stamps, and judges the claim's
//! [`Check`]s into a three-valued [`Verdict`] counted over trials ("Always 5/5").
//!
//! ## Brief overview
//! - [`Program`], [`ProgramBuilder`]: experiments as plain data (serde), validated before use.
//! - [`Claim`], [`ClaimBuilder`]: a statement, its source, a program, checks and an expectation.
//! - [`Lab`]: opens the GPU once, runs programs in process or in a child process (for
//!   `CUDA_DEVICE_MAX_CONNECTIONS` and other variables the driver reads at start-up).
//! - [`Timeline`], [`Span`]: what happened, per op; [`Check`] and [`Measurement`]: relations
//!   judged with named [`Tolerances`] derived from the [`Calibration`].
//! - [`judge`], [`Judgement`]: trials to verdict; [`RunRecord`]: the results file, replayable
//!   without a GPU.
//! - [`catalogue`]: the claims from the study notes.
//! - [`litmus`]: claim files, a text format for claims (parse, print, the model's prediction).
//! - [`model`]: a happens-before model of stream semantics, which predicts for any program what
//!   must precede what and what may overlap; [`fuzz`] runs random programs against it.
//! - [`sweep`]: measurements over a parameter (launch offsets, hardware queues), as tables.
//! - [`limits`]: the bounds every input is checked against; [`atomic_write`]: outputs written
//!   to a temporary file and renamed into place, so no failure destroys a file.
//! - [`trace`]: profiler traces of the user's own programs, read and cut into trials;
//!   [`trace_claims`]: claims judged on them; [`explain`]: what held a traced program back.
//! - [`report`]: terminal lines, the HTML page with SVG timelines, the Chrome trace, compare,
//!   the scenario tables.
//!
//! Only the private `gpu` module touches cudarc; everything from timelines on is pure and tested
//! on the CPU with timelines recorded on real GPUs.
//!
//! ## Example
//! ```no_run
//! use stream_litmus::{Claim, Expect, Lab, Source, StreamKind};
//! use std::time::Duration;
//!
//! let mut c = Claim::builder(
//!     "event.wait_orders",
//!     "A wait on an event orders two streams",
//!     Source::new("000_a5eb0762e7ac500e.txt", "7.6"),
//! );
//! let (s1, s2) = (c.stream(StreamKind::NonBlocking), c.stream(StreamKind::NonBlocking));
//! let e = c.event("E");
//! let a = c.spin(s1, "A", Duration::from_micros(50));
//! c.record(s1, e);
//! c.wait(s2, e);
//! let b = c.spin(s2, "B", Duration::from_micros(50));
//! c.precedes(a, b);
//! let record = Lab::new().check(&c.build(Expect::Holds));
//! assert!(record.as_expected());
//! ```

// The layers, from the ground up; each folder's module docs say what it may import, and
// `tests/cpu/layers.rs` holds every `use crate::` line to that.
// The floors below this crate are crates of their own (`crates/`): Cargo keeps every arrow
// pointing down. Their layers keep their names here (`crate::judge`, …).
pub use stream_litmus_claims::{catalogue, litmus};
pub use stream_litmus_core::model;
use stream_litmus_core::{border, judge, measured, program, record};
use stream_litmus_gpu::{gpu, lab};
pub use stream_litmus_traces::{explain, trace, trace_claims};
pub mod fuzz;
pub mod report;

// Modules that were public before the layers had folders keep their paths.
pub use border::{
    allowed_env, atomic_write, bounded_json, digest, heap, in_order, input_file, limits,
};
pub use judge::disturbance;
pub use lab::collect::{RetryPlan, BUDGET_FACTOR, BUDGET_FLOOR, PROBE_BUDGET_DIVISOR};
pub use lab::parameter_sweeps as sweep;
pub use measured::timing;
pub use record::check::claim_rules;

pub use border::error::{Error, Result};
pub use border::limits::MAX_TRIAL_FACTOR;
#[doc(hidden)]
pub use gpu::testing as gpu_testing;
pub use gpu::turn;
pub use gpu::{
    device_count, probe_nccl, Execution, Gpu, Look, TrialPlan, ADD_SOURCE, CACHE_ENV, CUPTI_ENV,
    NVLS_ENV, NVML_ENV, STAMP_SOURCE,
};
pub use gpu::{find_cupti, FLUSH_PERIOD_MS, TRACE_BASE_ENV, TRACE_DIR_ENV, TRACE_DRIVER_ENV};
pub use judge::claim::{Claim, ClaimBuilder, ClaimHeader, EnvVar, Source, Table};
pub use judge::relation::{Check, Measurement, Truth, Unit, Value};
pub use judge::verdict::{
    judge, judge_claim, observe, CheckRange, Counts, Expect, Judgement, Observed, TrialOutcome,
    Verdict,
};
pub use lab::child::{serve as serve_child, ChildReply, ChildRequest, Job, BIN_ENV};
pub use lab::{Lab, Spent, DEFAULT_TRIALS, TRIALS_ENV};
pub use measured::calibration::{
    Calibration, CopyRate, CopyRates, Device, Tolerances, HOST_FN_LATENCY_NS,
};
pub use measured::contents::{Contents, MemoryKind, ValueCount};
pub use measured::sharing::{Neighbour, Sharing};
pub use measured::timeline::{
    BlockStamp, Blocks, ClockSync, DeviceClock, HostCall, HostSlow, HostSpan, Interval, IssuerPace,
    Pause, Reading, Relaunch, Span, Timeline,
};
pub use measured::witness::{Anchor, WitnessKind, WitnessSpan, WitnessSync};
pub use program::{
    ApiCall, Buffer, BufferId, CopyDir, Event, EventId, HostFnApi, Op, OpId, OpKind, Place,
    Priority, Program, ProgramBuilder, ProgramError, Stream, StreamId, StreamKind, SyncTarget,
    Warning, MAX_BLOCK, MAX_BYTES, MAX_GRID, MAX_SPIN_NS,
};
pub use record::{
    ClaimRecord, Outcome, Rejudge, Rejudging, RunRecord, RunTiming, RunWriter, Trials, WriteStats,
    KEPT_TRIALS, SCHEMA_VERSION,
};
