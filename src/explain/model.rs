//! The must-precede pairs a trace states, checked against its spans.
//!
//! Of the model (docs/model.md) every trace states two orders for sure (those a trace records
//! with their stream and event arguments are `recorded_orders.rs`): **stream order** (an op of a stream starts only after the op issued before it on
//! that stream has ended: its launch call returned before the other's began, or both came from
//! one thread in that order; calls of two threads that overlap are not ordered) and **device
//! syncs** (`cudaDeviceSynchronize` returns only once every op its process issued before it has
//! ended: checked for processes whose ops ran on one device, since the call names none). A
//! broken pair is a finding, never smoothed over: the tolerance is the GPU timer's step for two
//! spans, the trace's clock error for a span against a call.

use super::lanes::Lanes;
use crate::program::OpId;
use crate::trace::{GpuKind, Trace, TraceTolerances, Trial};
use std::collections::{HashMap, HashSet};

/// The rule a pair comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleKind {
    StreamOrder,
    DeviceSync,
    /// A recorded `cudaStreamWaitEvent` (`recorded_orders.rs`).
    EventWait,
    /// A recorded `cudaStreamSynchronize` or `cudaEventSynchronize`.
    HostSync,
    /// The legacy default stream against a blocking stream, their kinds recorded.
    LegacyStream,
}

impl RuleKind {
    pub fn word(self) -> &'static str {
        match self {
            RuleKind::StreamOrder => "stream order",
            RuleKind::DeviceSync => "device syncs",
            RuleKind::EventWait => "event waits",
            RuleKind::HostSync => "event and stream syncs",
            RuleKind::LegacyStream => "legacy default stream",
        }
    }
}

/// A must-precede pair the spans broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub rule: RuleKind,
    /// The op that must end first.
    pub first: OpId,
    /// The op that must start after it (stream order); none for a sync.
    pub then: Option<OpId>,
    /// By how much the order was broken (ns beyond the tolerance's edge).
    pub by_ns: i64,
    /// What was broken, with its figures on the step's axis.
    pub text: String,
}

pub(super) fn us(ns: i64) -> String {
    format!("{:.2} µs", ns as f64 / 1e3)
}

/// The (file, process) pairs whose GPU ops all ran on one device: a device sync of theirs
/// covers them all. The others are named in `notes` where they have syncs.
pub(super) fn single_device_processes(
    trace: &Trace,
    notes: &mut Vec<String>,
) -> HashSet<(usize, i64)> {
    let mut devices: HashMap<(usize, i64), HashSet<u32>> = HashMap::new();
    for (f, file) in trace.files.iter().enumerate() {
        for op in file.ops.iter().filter(|o| o.kind != GpuKind::HostFn) {
            devices.entry((f, op.pid)).or_default().insert(op.device);
        }
    }
    let mut one = HashSet::new();
    for (key, set) in devices {
        let has_syncs = trace.files[key.0]
            .device_syncs
            .iter()
            .any(|s| s.pid == key.1);
        match set.len() {
            1 => {
                one.insert(key);
            }
            n if has_syncs => notes.push(format!(
                "process {} of {} used {n} devices: its device syncs are not checked (the \
                 trace does not say which device each one named)",
                key.1, trace.files[key.0].path
            )),
            _ => {}
        }
    }
    one
}

/// The pairs checked in one step, and those broken.
pub(super) fn check(
    trace: &Trace,
    trial: &Trial,
    tol: &TraceTolerances,
    syncable: &HashSet<(usize, i64)>,
    lanes: &Lanes,
) -> (Vec<(RuleKind, usize)>, Vec<Violation>) {
    let (a, mut broken) = stream_order(trial, tol, lanes);
    let (b, more) = device_syncs(trace, trial, tol, syncable);
    broken.extend(more);
    (
        vec![(RuleKind::StreamOrder, a), (RuleKind::DeviceSync, b)],
        broken,
    )
}

fn stream_order(trial: &Trial, tol: &TraceTolerances, lanes: &Lanes) -> (usize, Vec<Violation>) {
    let t = &trial.timeline;
    let step = tol.tolerances.timer_step_ns as i64;
    let (mut pairs, mut broken) = (0, Vec::new());
    for ops in lanes.ops.values() {
        for w in ops.windows(2) {
            let ((ca, a), (cb, b)) = (w[0], w[1]);
            let (Some(sa), Some(sb)) = (t.span(a), t.span(b)) else {
                continue;
            };
            if !ca.before(&cb) {
                continue;
            }
            pairs += 1;
            let early = sa.end() as i64 - sb.start() as i64;
            if early > step {
                broken.push(Violation {
                    rule: RuleKind::StreamOrder,
                    first: a,
                    then: Some(b),
                    by_ns: early - step,
                    text: format!(
                        "{} started at {}, {} before {} ended at {}, though issued after it on \
                         its stream (beyond the timer step of {} ns)",
                        trial.label(b),
                        us(sb.start() as i64),
                        us(early),
                        trial.label(a),
                        us(sa.end() as i64),
                        step
                    ),
                });
            }
        }
    }
    (pairs, broken)
}

fn device_syncs(
    trace: &Trace,
    trial: &Trial,
    tol: &TraceTolerances,
    syncable: &HashSet<(usize, i64)>,
) -> (usize, Vec<Violation>) {
    let err = tol.clock_error_ns as i64;
    // The step's ops of each process, by when their call returned.
    let mut by_process: HashMap<(usize, i64), Vec<(i64, OpId)>> = HashMap::new();
    for (i, &(f, o)) in trial.ops.iter().enumerate() {
        let op = &trace.files[f].ops[o];
        if let Some(c) = op.call.as_ref().filter(|_| op.kind != GpuKind::HostFn) {
            by_process
                .entry((f, op.pid))
                .or_default()
                .push((c.end_ns, OpId(i)));
        }
    }
    let (mut pairs, mut broken) = (0, Vec::new());
    for ((f, pid), ops) in by_process.iter_mut() {
        if !syncable.contains(&(*f, *pid)) {
            continue;
        }
        ops.sort_unstable();
        let syncs = trace.files[*f]
            .device_syncs
            .iter()
            .filter(|s| s.pid == *pid);
        let mut next = 0;
        // Each op against the first sync that began after its call returned: later syncs
        // follow from that one.
        for s in syncs {
            while next < ops.len() && ops[next].0 <= s.begin_ns {
                let (_, op) = ops[next];
                next += 1;
                let Some(end) = trial.timeline.span(op).map(|sp| sp.end() as i64) else {
                    continue;
                };
                pairs += 1;
                let returned = s.end_ns - trial.origin_ns;
                if end > returned + err {
                    broken.push(Violation {
                        rule: RuleKind::DeviceSync,
                        first: op,
                        then: None,
                        by_ns: end - returned - err,
                        text: format!(
                            "{} ended at {}, {} after the cudaDeviceSynchronize issued after it \
                             returned at {} (beyond the clock error of {})",
                            trial.label(op),
                            us(end),
                            us(end - returned),
                            us(returned),
                            us(err)
                        ),
                    });
                }
            }
        }
    }
    (pairs, broken)
}
