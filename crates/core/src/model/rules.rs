//! The rules, one function each, with the documentation they encode, over a program as the
//! model reads it ([`Issued`]).
//!
//! Node numbering: the start of op `i` is `2i`, its end `2i + 1`. An edge `(u, v, rule)` means v
//! cannot happen before u. Every edge goes from a lower to a higher node, because every rule only
//! makes later-issued ops wait for earlier-issued ones.
//!
//! The edges are few: O(ops × streams), not O(ops²). Where a rule orders an op after every op
//! before it (a device sync) or every op after it (any host sync), only the edges that are not
//! already implied are made: the last op of each stream stands for the ops before it on that
//! stream (stream order chains them), and a host sync orders the ops up to the next host sync,
//! which orders the rest. The closure is the same as with every edge written out
//! (`tests/cpu/model_compact.rs` holds the two against each other), and a program of 150,000 ops
//! (a trace) has a few hundred thousand edges instead of billions.

use super::issued::{Issued, What};
use super::Refinement;
use crate::program::{StreamKind, SyncTarget};
use serde::Serialize;

/// Which rule an edge comes from: what a chain of edges is named by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// An op starts before it ends.
    Duration,
    /// Same-stream order.
    Stream,
    /// A graph's orders: captured ops among themselves and against their launch, the parts of a
    /// launch seen in a trace against its end.
    Graph,
    /// The legacy default stream's implicit barrier.
    Legacy,
    /// An event wait after its record.
    Event,
    /// A host sync: the work it covers before it, everything issued after it behind it.
    HostSync,
    /// A collective's ranks.
    Collective,
    /// Dispatch order in a hardware queue (`Refinement::Queues` only).
    Queue,
}

impl Rule {
    pub fn word(self) -> &'static str {
        match self {
            Rule::Duration => "duration",
            Rule::Stream => "stream order",
            Rule::Graph => "graph",
            Rule::Legacy => "legacy default stream",
            Rule::Event => "event waits",
            Rule::HostSync => "host syncs",
            Rule::Collective => "collectives",
            Rule::Queue => "hardware queues",
        }
    }
}

/// An edge: `to` cannot happen before `from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    pub from: u32,
    pub to: u32,
    pub rule: Rule,
}

fn start(op: usize) -> usize {
    2 * op
}
fn end(op: usize) -> usize {
    2 * op + 1
}

/// Where the rules put the edges they make.
struct Edges<'a>(&'a mut dyn FnMut(Edge));

impl Edges<'_> {
    /// Nodes as `u32` (12 bytes an edge, not 24: a 200 MB trace's model holds a million): a
    /// program of two billion ops is far past every read limit.
    fn push(&mut self, from: usize, to: usize, rule: Rule) {
        debug_assert!(u32::try_from(to).is_ok(), "node numbers fit in u32");
        (self.0)(Edge {
            from: from as u32,
            to: to as u32,
            rule,
        });
    }
}

/// All edges of `p` under `refinement`.
pub(super) fn edges(p: &Issued, refinement: Refinement) -> Vec<Edge> {
    let mut all = Vec::with_capacity(3 * p.ops.len());
    each_edge(p, refinement, &mut |e| all.push(e));
    all
}

/// Each edge of `p` under `refinement`, given to `emit` in the order [`edges`] lists them: the
/// same every time, so that a caller can count them first and place them after without
/// holding them all (`orders.rs`).
pub(super) fn each_edge(p: &Issued, refinement: Refinement, emit: &mut dyn FnMut(Edge)) {
    let mut e = Edges(emit);
    for i in 0..p.ops.len() {
        e.push(start(i), end(i), Rule::Duration);
    }
    let captures = p.captures();
    stream_order(p, &captures, &mut e);
    legacy_null_stream(p, &captures, &mut e);
    event_waits(p, &mut e);
    host_syncs(p, &captures, &mut e);
    collectives(p, &mut e);
    if let Refinement::Queues(n) = refinement {
        hardware_queues(p, n, &captures, &mut e);
    }
}

/// Same-stream order. CUDA Programming Guide, "Streams": "a stream is a sequence of commands …
/// that execute in order". Driver API `cuStreamCreate`: work in a stream runs in issue order. Every
/// stream op (kernel, event record, event wait, host function) starts after the previous op of
/// its stream ends.
///
/// Graphs. A captured op runs only when its graph is launched, so it takes no place in its
/// stream's order: the captured ops keep among themselves the orderings capture recorded (the
/// same rules, inside the capture), and stream order outside the capture passes them by. The
/// launch is a stream op like a kernel, and its graph runs inside it: driver API `cuGraphLaunch`,
/// "Each launch is ordered behind both any previous work in hStream and any previous launches of
/// hGraphExec". So every captured op ends before the end of its graph's first launch (which
/// stands for the span of the graph's nodes in checks), a later launch of the same graph starts
/// after the previous one ends, and the captured ops start after the work their launch stream
/// held before the capture began (work issued on it later is issued after them, and edges point
/// forward in issue order only, so the model leaves that order out: it predicts less, never a
/// false order).
///
/// A graph launch seen in a trace is its nodes' kernels (the parts, sharing the launch's call)
/// and then a join: each part starts after the work its stream held before the launch, the
/// parts have no order among themselves (a trace does not show the graph's edges), and the join
/// starts once every part has ended, so the stream's later work waits for all of them.
fn stream_order(p: &Issued, captures: &[Option<usize>], e: &mut Edges<'_>) {
    let first_launch = p.graph_launches();
    let mut last: Vec<Option<usize>> = vec![None; p.streams.len()];
    let mut last_captured = last.clone();
    // Per end-capture op: the last op of each stream when its capture began.
    let mut at_begin: Vec<Option<usize>> = Vec::new();
    let mut previous_launch: Vec<Option<usize>> = vec![None; p.ops.len()];
    for (i, act) in p.ops.iter().enumerate() {
        let Some(s) = act.what.stream() else { continue };
        if captures[i].is_some() {
            if let Some(prev) = last_captured[s.0] {
                e.push(end(prev), start(i), Rule::Graph);
            }
            // The work on the launch stream before the capture began, if launched at all.
            if let Some(l) = first_launch[i] {
                let launch_stream = p.ops[l].what.stream();
                if let Some(b) = launch_stream.and_then(|ls| at_begin.get(ls.0).copied().flatten())
                {
                    e.push(end(b), start(i), Rule::Graph);
                }
                e.push(end(i), end(l), Rule::Graph);
            }
            last_captured[s.0] = Some(i);
            continue;
        }
        if let Some(prev) = last[s.0] {
            e.push(end(prev), start(i), Rule::Stream);
        }
        if let Some(join) = act.part_of {
            // A part: after its stream's work, before its launch's join; not itself in the
            // stream's order.
            e.push(end(i), start(join as usize), Rule::Graph);
            continue;
        }
        match act.what {
            What::BeginCapture { .. } => {
                last_captured.iter_mut().for_each(|l| *l = None);
                at_begin = last.clone();
            }
            What::GraphLaunch { graph, .. } => {
                if let Some(prev) = previous_launch.get_mut(graph) {
                    if let Some(q) = prev.replace(i) {
                        e.push(end(q), start(i), Rule::Graph);
                    }
                }
            }
            _ => {}
        }
        last[s.0] = Some(i);
    }
}

/// The legacy default stream. Driver API, "Stream synchronization behavior", Legacy default
/// stream: "When an action is taken in the legacy stream such as a kernel launch or
/// cuStreamWaitEvent(), the legacy stream first waits on all blocking streams, the action is
/// queued in the legacy stream, and then all blocking streams wait on the legacy stream."
/// Blocking streams are those created without `CU_STREAM_NON_BLOCKING`. The per-thread default
/// stream counts as one: "The per-thread default stream is not a non-blocking stream and will
/// synchronize with the legacy default stream if both are used in a program." Non-blocking
/// streams are exempt: "streams created with CU_STREAM_NON_BLOCKING … perform no implicit
/// synchronization with stream 0". A stream whose kind is unknown (a trace that does not record
/// it) takes no part.
///
/// A wait on an event that was never recorded is no action at all. The `cudaStreamWaitEvent` docs
/// call it "a functional no-op", and the GPU agrees. Taking the sentence above literally instead
/// (the wait as a legacy action) made the model predict orders the H100 did not keep, in 10 of
/// 2000 random programs (tests/fixtures/fuzz-violations-h100.json).
///
/// Per device: the legacy stream is "the NULL stream … of the device" (runtime API, "Default
/// stream") and the rule speaks of the blocking streams of its context, so a legacy action on
/// one device waits for no stream of another device, and no stream of another device waits for
/// it (docs/model.md, "Several devices").
///
/// The parts of a graph launch seen in a trace are actions of their stream like the launch;
/// the join, which ends after them, stands for them afterwards.
fn legacy_null_stream(p: &Issued, captures: &[Option<usize>], e: &mut Edges<'_>) {
    let kind = |s: crate::program::StreamId| p.streams[s.0].kind;
    let device = |s: crate::program::StreamId| p.streams[s.0].device as usize;
    let blocking =
        |k: Option<StreamKind>| matches!(k, Some(StreamKind::Blocking | StreamKind::PerThread));
    let noop = p.noop_waits();
    let mut last_on: Vec<Option<usize>> = vec![None; p.streams.len()];
    let mut last_legacy: Vec<Option<usize>> = vec![None; p.device_count() as usize];
    // Per device, the blocking streams with an op since its last legacy action: the others' last
    // ops precede that action, which stream order puts before the next.
    let mut touched = Touched::new(p);
    for (i, act) in p.ops.iter().enumerate() {
        let Some(s) = act.what.stream() else { continue };
        // A captured op runs inside its graph's launch, which is the stream op this rule orders.
        if noop[i] || captures[i].is_some() {
            continue;
        }
        match kind(s) {
            Some(StreamKind::LegacyNull) => {
                for &t in touched.of(device(s)) {
                    if let Some(prev) = last_on[t] {
                        e.push(end(prev), start(i), Rule::Legacy);
                    }
                }
                // A part of a graph launch leaves the stream's order to the launch's end.
                if act.part_of.is_none() {
                    last_legacy[device(s)] = Some(i);
                    touched.clear(device(s));
                }
            }
            k if blocking(k) => {
                if let Some(n) = last_legacy[device(s)] {
                    e.push(end(n), start(i), Rule::Legacy);
                }
                if act.part_of.is_none() {
                    touched.touch(device(s), s.0);
                }
            }
            _ => {}
        }
        if act.part_of.is_none() {
            last_on[s.0] = Some(i);
        }
    }
}

/// Per device, the streams that had an op since a point (the last legacy action, the last
/// device sync): what a rule that waits for every stream needs edges from, the rest being
/// ordered before that point already. Keeps such a rule's edges O(ops), not O(ops × streams):
/// a trace of a fuzz run holds 60,000 streams.
struct Touched {
    lists: Vec<Vec<usize>>,
    /// Whether a stream is in its device's list.
    listed: Vec<bool>,
}

impl Touched {
    fn new(p: &Issued) -> Touched {
        Touched {
            lists: vec![Vec::new(); p.device_count() as usize],
            listed: vec![false; p.streams.len()],
        }
    }

    fn touch(&mut self, device: usize, stream: usize) {
        if !std::mem::replace(&mut self.listed[stream], true) {
            self.lists[device].push(stream);
        }
    }

    fn of(&self, device: usize) -> &[usize] {
        &self.lists[device]
    }

    fn clear(&mut self, device: usize) {
        for s in self.lists[device].drain(..) {
            self.listed[s] = false;
        }
    }

    /// The last op (by `last`) of each stream of `device` touched, the list then cleared.
    fn take(&mut self, device: usize, last: &[Option<usize>]) -> Vec<usize> {
        let ops = self.lists[device].iter().filter_map(|&s| last[s]).collect();
        self.clear(device);
        ops
    }
}

/// Events. Driver API `cuEventRecord`: "captures the contents of stream at the time of this call"
/// and completes when all that work is done, so the record itself is a stream op ordered by
/// [`stream_order`]. `cuStreamWaitEvent`: "Makes all future work submitted to stream wait for all
/// work captured in event … uses the most recent call to cuEventRecord() on event". A wait issued
/// before any record "has no effect". Re-recording later does not change what an earlier wait
/// waited for.
fn event_waits(p: &Issued, e: &mut Edges<'_>) {
    let mut last_record: Vec<Option<usize>> = vec![None; p.events];
    for (i, act) in p.ops.iter().enumerate() {
        match act.what {
            What::Record { event, .. } => {
                if let Some(r) = last_record.get_mut(event) {
                    *r = Some(i);
                }
            }
            What::Wait { event, .. } => {
                if let Some(&Some(r)) = last_record.get(event) {
                    e.push(end(r), start(i), Rule::Event);
                }
            }
            _ => {}
        }
    }
}

/// Host synchronization. `cuStreamSynchronize`, `cuEventSynchronize` and `cuCtxSynchronize` block
/// the host until the work they cover has completed. Everything the host issues afterwards is
/// issued, and so starts, after the call returns.
/// - A stream sync covers the stream's last op that does work (a kernel, copy, host function or
///   graph launch), and for each wait issued on the stream after that op, the record it waits
///   for. It does not cover a record, a wait, a capture's begin or end or a stream-ordered
///   allocation as such: what the legacy stream's implicit barrier makes such an op of a
///   blocking stream wait for, the stream sync does not (measured, no document says it: on an
///   H100 with driver 580, legacy work, then `cudaEventRecord` on the per-thread or a blocking
///   stream, then `cudaStreamSynchronize` of that stream returns at once, while
///   `cudaEventSynchronize` of the record waits for the legacy work; 0.02 % of 100,000 random
///   programs, docs/model.md, "Findings").
/// - An event sync covers the most recent record; without a record it returns at once.
/// - A device sync covers every op issued before it.
///
/// Reading an elapsed time waits for its end event first, so it counts as an event sync.
/// A device sync of one device of several (`cuCtxSynchronize` in that device's context: "Blocks
/// until the device has completed all preceding requested tasks") covers the ops of that device
/// issued before it, and nothing of the other devices.
///
/// Written compactly: a device sync takes an edge from the last op of each stream (stream order
/// chains the ones before it), from each host op that orders nothing (a query or API call: no
/// other edge reaches them) and from nothing else a sync before it already orders; a host sync
/// takes an edge to each op up to the next host sync, which orders the ones after.
fn host_syncs(p: &Issued, captures: &[Option<usize>], e: &mut Edges<'_>) {
    // Per stream: its last op that does work, and the records that the waits issued on it since
    // then wait for.
    let mut last_on: Vec<Option<usize>> = vec![None; p.streams.len()];
    let mut waited_since: Vec<Vec<usize>> = vec![Vec::new(); p.streams.len()];
    let mut last_record: Vec<Option<usize>> = vec![None; p.events];
    // Per stream: its last op of any kind (not captured, not a part), for device syncs; and per
    // device, the streams with an op since its last device sync (the others' last ops precede
    // that sync, which orders the next).
    let mut last_any: Vec<Option<usize>> = vec![None; p.streams.len()];
    let mut touched = Touched::new(p);
    // The host ops that order nothing, for device syncs of every device, each with the first
    // launch of the graph it was captured into (such an op counts once that launch was issued).
    let launches = p.graph_launches();
    let mut hosts: Vec<(usize, Option<usize>)> = Vec::new();
    // The last host sync before the op at hand: its edges reach up to the next one.
    let mut since_sync: Option<usize> = None;
    for (i, act) in p.ops.iter().enumerate() {
        if let Some(s) = since_sync {
            e.push(end(s), start(i), Rule::HostSync);
        }
        if let What::Host { .. } = act.what {
            match captures[i] {
                None => hosts.push((i, None)),
                Some(_) => hosts.extend(launches[i].map(|l| (i, Some(l)))),
            }
        }
        if captures[i].is_some() {
            continue;
        }
        if let (Some(s), None) = (act.what.stream(), act.part_of) {
            last_any[s.0] = Some(i);
            touched.touch(p.streams[s.0].device as usize, s.0);
        }
        match act.what {
            What::Record { event, .. } => {
                if let Some(r) = last_record.get_mut(event) {
                    *r = Some(i);
                }
            }
            What::Wait { stream, event } => {
                if let Some(&Some(r)) = last_record.get(event) {
                    waited_since[stream.0].push(r);
                }
            }
            What::GraphLaunch { stream, .. } | What::Join { stream } => {
                last_on[stream.0] = Some(i);
                waited_since[stream.0].clear();
            }
            ref w if w.takes_time() && act.part_of.is_none() => {
                if let Some(s) = w.stream() {
                    last_on[s.0] = Some(i);
                    waited_since[s.0].clear();
                }
            }
            // Begin and end of a capture, stream-ordered allocations, parts of a launch (its
            // join stands for them): no work of their own, and like a record, nothing a stream
            // sync is seen to wait for.
            _ => {}
        }
        let covered: Vec<usize> = match act.what {
            What::DeviceSync { device } => touched.take(device as usize, &last_any),
            What::HostSync {
                target: SyncTarget::Device,
            } => {
                let mut all: Vec<usize> = (0..touched.lists.len())
                    .flat_map(|d| touched.take(d, &last_any))
                    .collect();
                // The host ops issued by now; one captured into a graph not yet launched waits.
                let ran = |h: &(usize, Option<usize>)| h.1.map_or(true, |l| l < i);
                all.extend(hosts.iter().filter(|h| ran(h)).map(|h| h.0));
                hosts.retain(|h| !ran(h));
                all
            }
            What::HostSync {
                target: SyncTarget::Stream(s),
            } => last_on[s.0]
                .iter()
                .chain(&waited_since[s.0])
                .copied()
                .collect(),
            What::HostSync {
                target: SyncTarget::Event(ev),
            } => last_record
                .get(ev.0)
                .copied()
                .flatten()
                .into_iter()
                .collect(),
            _ => continue,
        };
        for c in covered {
            e.push(end(c), start(i), Rule::HostSync);
        }
        since_sync = Some(i);
    }
}

/// Collectives. An all-reduce completes on no rank before every rank has contributed (NCCL,
/// "Collective operations": every rank must call it, and each rank's result depends on all
/// inputs), so no rank's op can end before every other rank's op has started. Only the forward
/// half of that is an edge here (`start(x) → end(y)` for x issued before y): every edge of the
/// model points forward in issue order. Leaving out the backward half only makes the model
/// predict fewer orders, never a false one.
fn collectives(p: &Issued, e: &mut Edges<'_>) {
    for group in p.collectives() {
        for (k, &x) in group.iter().enumerate() {
            for &y in &group[k + 1..] {
                e.push(start(x), end(y), Rule::Collective);
            }
        }
    }
}

/// Hardware queues (measured, not documented). With `n` connections, stream `i` feeds queue
/// `i mod n`. A queue hands kernels and event waits to the GPU in issue order: an op cannot start
/// before the op ahead of it in the same queue has started. Combined with the stream order, a
/// kernel queued behind a waiting kernel of another stream inherits its wait; this is the false
/// dependency seed 003 describes for `CUDA_DEVICE_MAX_CONNECTIONS=1`. Event records and no-op waits
/// do not hold the queue in this model.
///
/// Queues are per device (`CUDA_DEVICE_MAX_CONNECTIONS` counts a device's connections): stream
/// `i` of a device is its `i`-th stream among that device's streams. An NCCL all-reduce is a
/// kernel and takes its place in its stream's queue like a spin. A stream without a known slot
/// (a trace that does not record its creation) takes no part, except where there is one queue.
fn hardware_queues(p: &Issued, n: usize, captures: &[Option<usize>], e: &mut Edges<'_>) {
    // More queues than streams change nothing (stream `i < n` feeds queue `i` either way), so
    // `n` is capped at the stream count: a huge `n` from the builder costs no memory.
    let n = n.clamp(1, p.streams.len().max(1));
    let devices = p.device_count() as usize;
    let mut last_in_queue: Vec<Option<usize>> = vec![None; n * devices];
    let noop = p.noop_waits();
    // A captured op reaches a queue only with its graph's launch, which this model leaves out;
    // so do the parts of a launch seen in a trace.
    for (i, act) in p.ops.iter().enumerate() {
        if captures[i].is_some() || act.part_of.is_some() {
            continue;
        }
        let stream = match act.what {
            What::Work {
                stream,
                queued: true,
            }
            | What::AllReduce { stream } => stream,
            What::Wait { stream, .. } if !noop[i] => stream,
            _ => continue,
        };
        let facts = &p.streams[stream.0];
        // With one queue, a stream of unknown place feeds it too.
        let Some(slot) = facts.slot.or((n == 1).then_some(0)) else {
            continue;
        };
        let q = facts.device as usize * n + slot % n;
        if let Some(prev) = last_in_queue[q] {
            e.push(start(prev), start(i), Rule::Queue);
        }
        last_in_queue[q] = Some(i);
    }
}
