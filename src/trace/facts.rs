//! What a trace shows about each op's issue: whether it depended on nothing in its stream (its
//! start minus its call is then launch delay, `tolerance.rs`), and the facts that can explain a
//! wait (`causes.rs`): a first launch, an event wait, the call before it on its thread, its
//! process's recorded environment, its blocks per SM, its kind.

use super::events::{DriverEnv, GpuKind, TraceFile};
use super::host_fns::behind;

/// By op of `file`, whether it depended on nothing in its stream: the op before it there had
/// ended when its call began (and the call did not follow a `cudaStreamWaitEvent`, nor outlast
/// the op, nor come while a host function was pending).
pub(super) fn free(file: &TraceFile) -> Vec<bool> {
    let before = file.stream_before();
    (file.ops.iter().zip(before))
        .map(|(op, before)| {
            let Some(call) = &op.call else {
                return false;
            };
            if op.kind == GpuKind::HostFn || behind(&file.host_fn_pending, op.pid, call.begin_ns) {
                return false;
            }
            let before = before.map(|p| &file.ops[p]);
            // A call that returned only after its op ended (a synchronous copy) did not issue
            // it asynchronously: its op's start minus the call's return is no launch delay.
            !call.after_wait
                && call.end_ns <= op.end_ns
                && before.map_or(true, |p| p.end_ns < call.begin_ns)
        })
        .collect()
}

/// What a trace shows about an op's issue that can explain a wait (`trace_claims/checks.rs`, `held_back`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Facts {
    /// The first launch of its kernel's name in its process.
    pub(crate) first_launch: bool,
    /// Its issuing thread called `cudaStreamWaitEvent` since its previous launch.
    pub(crate) event_wait: bool,
    /// Its thread's CUDA call before its own, on the trial's axis.
    pub(crate) before: Option<HeldBy>,
    /// What the driver read from its process's environment, where the trace recorded it.
    pub(crate) env: Option<DriverEnv>,
    /// A kernel's blocks per SM at launch, in hundredths, where the profiler wrote it.
    pub(crate) blocks_per_sm: Option<u32>,
    pub(crate) kind: Option<GpuKind>,
}

/// A host call on the trial's axis (ns from the trial's first instant; before it, negative).
#[derive(Debug, Clone, Default)]
pub(crate) struct HeldBy {
    pub(crate) name: std::sync::Arc<str>,
    pub(crate) begin_ns: i64,
    pub(crate) end_ns: i64,
}
