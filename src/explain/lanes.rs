//! A step's ops by GPU lane (file, process, device, stream), each with its launch call, in the
//! order of their calls: what every must-precede rule walks (`model.rs`, `recorded_orders.rs`),
//! built once per step.

use crate::program::OpId;
use crate::trace::{CallSpan, GpuKind, Trace, Trial};
use std::collections::HashMap;

/// A GPU lane of a step: (file, process, device, stream).
pub(super) type Lane = (usize, i64, u32, u64);

/// The step's ops by lane, each with its call, in order of their calls' begin; and the lanes of
/// each (file, process, stream), whatever their device.
pub(super) struct Lanes {
    pub(super) ops: HashMap<Lane, Vec<(CallSpan, OpId)>>,
    by_stream: HashMap<(usize, i64, u64), Vec<Lane>>,
}

pub(super) fn lanes(trace: &Trace, trial: &Trial) -> Lanes {
    let mut ops: HashMap<Lane, Vec<(CallSpan, OpId)>> = HashMap::new();
    for (i, &r) in trial.ops.iter().enumerate() {
        let op = trace.op(r);
        let (Some(call), Some(place)) = (&op.call, trial.place(OpId(i))) else {
            continue;
        };
        if op.kind == GpuKind::HostFn {
            continue;
        }
        let span = CallSpan {
            tid: call.tid,
            begin_ns: call.begin_ns,
            end_ns: call.end_ns,
        };
        ops.entry(place).or_default().push((span, OpId(i)));
    }
    let mut by_stream: HashMap<(usize, i64, u64), Vec<Lane>> = HashMap::new();
    for (lane, list) in ops.iter_mut() {
        list.sort_by_key(|(c, o)| (c.begin_ns, *o));
        (by_stream.entry((lane.0, lane.1, lane.3)).or_default()).push(*lane);
    }
    Lanes { ops, by_stream }
}

/// The lanes of `(file, pid)` on `stream`, any device.
pub(super) fn lanes_of(
    lanes: &Lanes,
    file: usize,
    pid: i64,
    stream: u64,
) -> impl Iterator<Item = &Vec<(CallSpan, OpId)>> {
    (lanes
        .by_stream
        .get(&(file, pid, stream))
        .into_iter()
        .flatten())
    .filter_map(|l| lanes.ops.get(l))
}
