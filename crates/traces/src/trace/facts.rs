//! What a trace shows about each op's issue: whether it depended on nothing in its stream (its
//! start minus its call is then launch delay, `tolerance.rs`), and the facts that can explain a
//! wait (`causes.rs`): a first launch, an event wait, the call before it on its thread, its
//! process's recorded environment, its blocks per SM, its kind.

use super::events::{DriverEnv, GpuKind, TraceFile};
use super::host_fns::behind;
use super::syncs::{StreamInfo, SyncKind};
use std::collections::HashMap;

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
pub struct Facts {
    /// The first launch of its kernel's name in its process.
    pub first_launch: bool,
    /// Its issuing thread called `cudaStreamWaitEvent` since its previous launch.
    pub event_wait: bool,
    /// Its thread's CUDA call before its own, on the trial's axis.
    pub before: Option<HeldBy>,
    /// What the driver read from its process's environment, where the trace recorded it.
    pub env: Option<DriverEnv>,
    /// A kernel's blocks per SM at launch, in hundredths, where the profiler wrote it.
    pub blocks_per_sm: Option<u32>,
    pub kind: Option<GpuKind>,
    /// The streams its stream waited for by `cudaStreamWaitEvent` since the op before it there
    /// (None in the list: a wait whose record the trace lacks), where the trace records its
    /// process's syncs; None where it does not.
    pub recorded_waits: Option<Vec<Option<u64>>>,
    /// Its stream's kind and priority, where the trace records them.
    pub stream: Option<StreamInfo>,
}

/// By op of `file`, the event waits recorded on its stream since the op before it there (issued
/// after that op's call began and before its own): the streams each waited for. Ops with none
/// are left out.
pub(super) fn recorded_waits(file: &TraceFile) -> HashMap<usize, Vec<Option<u64>>> {
    // By (process, stream): each wait's call begin and the stream it waited for.
    type Waits = Vec<(i64, Option<u64>)>;
    let mut waits: HashMap<(i64, u64), Waits> = HashMap::new();
    for s in &file.syncs {
        if let (SyncKind::StreamWaitEvent, Some(stream)) = (s.kind, s.stream) {
            let source = s.source.map(|e| e.stream);
            (waits.entry((s.pid, stream)).or_default()).push((s.call.begin_ns, source));
        }
    }
    if waits.is_empty() {
        return HashMap::new();
    }
    // By (process, stream), the ops in order of their calls.
    let mut lanes: HashMap<(i64, u64), Vec<(i64, usize)>> = HashMap::new();
    for (o, op) in file.ops.iter().enumerate() {
        if let Some(call) = &op.call {
            (lanes.entry((op.pid, op.stream)).or_default()).push((call.begin_ns, o));
        }
    }
    let mut found = HashMap::new();
    for (key, lane) in lanes.iter_mut() {
        let Some(list) = waits.get(key) else {
            continue;
        };
        lane.sort_unstable();
        let mut from = i64::MIN;
        for &(begin, o) in lane.iter() {
            let lo = list.partition_point(|w| w.0 <= from);
            let hi = list.partition_point(|w| w.0 < begin);
            if lo < hi {
                found.insert(o, list[lo..hi].iter().map(|w| w.1).collect());
            }
            from = begin;
        }
    }
    found
}

/// A host call on the trial's axis (ns from the trial's first instant; before it, negative).
#[derive(Debug, Clone, Default)]
pub struct HeldBy {
    pub name: crate::trace::names::Name,
    pub begin_ns: i64,
    pub end_ns: i64,
}
