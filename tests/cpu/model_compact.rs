//! The model's compact edges against the rules written out in full.
//!
//! `crates/core/src/model/rules.rs` writes a device sync's edges from the last op of each stream only, and a
//! host sync's edges to the ops up to the next host sync only: the rest follow by stream order
//! and by the next sync. Here the rules are written as the documentation reads, every covered op
//! and every later op an edge of its own (quadratic: fine for programs of tens of ops), and the
//! two closures must be the same relation, pair for pair (and the search one pair at a time,
//! `model/orders.rs`, must find a chain exactly where they do), on random programs with host syncs,
//! host functions and graphs, on every catalogue claim (several devices included) and on the
//! regression corpus, documented and under one and eight hardware queues.

use proptest::prelude::*;
use std::time::Duration;
use stream_litmus::fuzz::{programs, Shape};
use stream_litmus::model::{HappensBefore, Issued, Orders, Refinement, Search};
use stream_litmus::{OpId, OpKind, Program, StreamKind, SyncTarget};

/// Every must-precede pair by the rules written out in full.
fn reference(program: &Program, refinement: Refinement) -> Vec<Vec<bool>> {
    let n = program.ops.len();
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); 2 * n];
    for (from, to) in edges(program, refinement) {
        assert!(from < to, "edges point forward");
        succ[from].push(to);
    }
    let mut reach = vec![vec![false; 2 * n]; 2 * n];
    for v in (0..2 * n).rev() {
        for &w in &succ[v].clone() {
            reach[v][w] = true;
            let r = reach[w].clone();
            for (x, y) in reach[v].iter_mut().zip(r) {
                *x |= y;
            }
        }
    }
    (0..n)
        .map(|a| (0..n).map(|b| reach[2 * a + 1][2 * b]).collect())
        .collect()
}

fn same(program: &Program, search: bool) -> Result<(), String> {
    for refinement in [
        Refinement::Documented,
        Refinement::Queues(1),
        Refinement::Queues(8),
    ] {
        let want = reference(program, refinement);
        let got = HappensBefore::with(program, refinement);
        let orders = Orders::of(&Issued::of(program), refinement);
        for (a, row) in want.iter().enumerate() {
            for (b, &w) in row.iter().enumerate() {
                let searched = match search {
                    true => orders.chain(a, b, &|_| true, usize::MAX),
                    false => Search::Undecided,
                };
                if search && matches!(searched, Search::Ordered(_)) != w {
                    return Err(format!(
                        "{refinement:?}: op {a} before op {b}: written out {w}, searched {searched:?}"
                    ));
                }
                if got.must_precede(OpId(a), OpId(b)) != w {
                    return Err(format!(
                        "{refinement:?}: op {a} before op {b}: written out {w}, compact {}\n{}",
                        !w,
                        serde_json::to_string(program).unwrap()
                    ));
                }
            }
        }
    }
    Ok(())
}

/// `p` with host calls that order nothing (queries, API calls) inserted before the positions
/// given: no random program has them, and a device sync covers them by an edge of their own.
fn with_host_calls(p: &Program, at: &[(usize, bool)]) -> Program {
    let mut b = Program::builder("with-host-calls");
    for s in &p.streams {
        b.stream_labelled(s.kind, s.label.clone());
    }
    for e in &p.events {
        b.event(e.label.clone());
    }
    let mut map = Vec::new();
    for (i, op) in p.ops.iter().enumerate() {
        for &(_, memset) in at.iter().filter(|(k, _)| k % (p.ops.len() + 1) == i) {
            let kind = match memset {
                true => OpKind::Api {
                    call: stream_litmus::ApiCall::Memset,
                    bytes: 4,
                },
                false => OpKind::Query {
                    target: SyncTarget::Device,
                },
            };
            b.push("host".to_string(), kind);
        }
        let kind = match op.kind.clone() {
            OpKind::GraphLaunch { stream, graph } => OpKind::GraphLaunch {
                stream,
                graph: map[graph.0],
            },
            kind => kind,
        };
        map.push(b.push(op.label.clone(), kind));
    }
    b.build()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_compact_edges_close_to_the_rules_written_out(
        p in programs(Shape::default()),
        at in prop::collection::vec((0usize..64, any::<bool>()), 0..4),
    ) {
        let p = with_host_calls(&p, &at);
        prop_assert!(same(&p, false).is_ok(), "{}", same(&p, false).unwrap_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// The search one pair at a time finds a chain exactly where the closure orders.
    #[test]
    fn the_search_finds_a_chain_exactly_where_the_closure_orders(
        p in programs(Shape::default()),
        at in prop::collection::vec((0usize..64, any::<bool>()), 0..4),
    ) {
        let p = with_host_calls(&p, &at);
        prop_assert!(same(&p, true).is_ok(), "{}", same(&p, true).unwrap_err());
    }
}

#[test]
fn the_compact_edges_agree_on_every_catalogue_claim_and_the_regressions() {
    let claims = stream_litmus::catalogue::all(Duration::from_micros(20));
    let programs = claims
        .iter()
        .map(|c| &c.program)
        .cloned()
        .chain(stream_litmus::fuzz::regressions());
    // The written-out closure is cubic: the graph claims of a thousand nodes are left to the
    // random programs' graphs.
    for p in programs.filter(|p| p.ops.len() <= 200) {
        same(&p, true).unwrap();
    }
}

// ---- the rules as the documentation reads, each covered op an edge -------------------------

fn start(op: usize) -> usize {
    2 * op
}
fn end(op: usize) -> usize {
    2 * op + 1
}

/// All edges of `program` under `refinement`.
fn edges(program: &Program, refinement: Refinement) -> Vec<(usize, usize)> {
    let mut e = Vec::new();
    duration(program, &mut e);
    stream_order(program, &mut e);
    legacy_null_stream(program, &mut e);
    event_waits(program, &mut e);
    host_syncs(program, &mut e);
    collectives(program, &mut e);
    if let Refinement::Queues(n) = refinement {
        hardware_queues(program, n, &mut e);
    }
    e
}

/// An op starts before it ends.
fn duration(program: &Program, e: &mut Vec<(usize, usize)>) {
    for i in 0..program.ops.len() {
        e.push((start(i), end(i)));
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
fn stream_order(program: &Program, e: &mut Vec<(usize, usize)>) {
    let captures = program.captures();
    let first_launch = program.graph_launches();
    let mut last: Vec<Option<usize>> = vec![None; program.streams.len()];
    let mut last_captured = last.clone();
    // Per end-capture op: the last op of each stream when its capture began.
    let mut at_begin: Vec<Option<usize>> = Vec::new();
    let mut previous_launch: Vec<Option<usize>> = vec![None; program.ops.len()];
    for (i, op) in program.ops.iter().enumerate() {
        let Some(s) = op.kind.stream() else { continue };
        if captures[i].is_some() {
            if let Some(prev) = last_captured[s.0] {
                e.push((end(prev), start(i)));
            }
            // The work on the launch stream before the capture began, if launched at all.
            if let Some(l) = first_launch[i] {
                let launch_stream = program.ops[l.0].kind.stream();
                if let Some(p) = launch_stream.and_then(|ls| at_begin.get(ls.0).copied().flatten())
                {
                    e.push((end(p), start(i)));
                }
                e.push((end(i), end(l.0)));
            }
            last_captured[s.0] = Some(i);
            continue;
        }
        if let Some(prev) = last[s.0] {
            e.push((end(prev), start(i)));
        }
        match op.kind {
            OpKind::BeginCapture { .. } => {
                last_captured.iter_mut().for_each(|l| *l = None);
                at_begin = last.clone();
            }
            OpKind::GraphLaunch { graph, .. } => {
                if let Some(prev) = previous_launch.get_mut(graph.0) {
                    if let Some(p) = prev.replace(i) {
                        e.push((end(p), start(i)));
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
/// synchronization with stream 0".
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
fn legacy_null_stream(program: &Program, e: &mut Vec<(usize, usize)>) {
    let kind = |s: stream_litmus::StreamId| program.streams[s.0].kind;
    let device = |s: stream_litmus::StreamId| program.streams[s.0].device as usize;
    let blocking = |k: StreamKind| matches!(k, StreamKind::Blocking | StreamKind::PerThread);
    let mut last_on: Vec<Option<usize>> = vec![None; program.streams.len()];
    let mut last_legacy: Vec<Option<usize>> = vec![None; program.device_count() as usize];
    // A captured op runs inside its graph's launch, which is the stream op this rule orders.
    let captures = program.captures();
    for (i, op) in program.ops.iter().enumerate() {
        let Some(s) = op.kind.stream() else { continue };
        if program.is_noop_wait(op.id) || captures[i].is_some() {
            continue;
        }
        match kind(s) {
            StreamKind::LegacyNull => {
                for (t, last) in last_on.iter().enumerate() {
                    if let Some(prev) = *last {
                        let other = &program.streams[t];
                        if blocking(other.kind) && other.device as usize == device(s) {
                            e.push((end(prev), start(i)));
                        }
                    }
                }
                last_legacy[device(s)] = Some(i);
            }
            k if blocking(k) => {
                if let Some(n) = last_legacy[device(s)] {
                    e.push((end(n), start(i)));
                }
            }
            _ => {}
        }
        last_on[s.0] = Some(i);
    }
}

/// Events. Driver API `cuEventRecord`: "captures the contents of stream at the time of this call"
/// and completes when all that work is done, so the record itself is a stream op ordered by
/// [`stream_order`]. `cuStreamWaitEvent`: "Makes all future work submitted to stream wait for all
/// work captured in event … uses the most recent call to cuEventRecord() on event". A wait issued
/// before any record "has no effect". Re-recording later does not change what an earlier wait
/// waited for.
fn event_waits(program: &Program, e: &mut Vec<(usize, usize)>) {
    let mut last_record: Vec<Option<usize>> = vec![None; program.events.len()];
    for (i, op) in program.ops.iter().enumerate() {
        match op.kind {
            OpKind::Record { event, .. } => last_record[event.0] = Some(i),
            OpKind::Wait { event, .. } => {
                if let Some(r) = last_record[event.0] {
                    e.push((end(r), start(i)));
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
fn host_syncs(program: &Program, e: &mut Vec<(usize, usize)>) {
    // Per stream: its last op that does work, and the records that the waits issued on it since
    // then wait for.
    let mut last_on: Vec<Option<usize>> = vec![None; program.streams.len()];
    let mut waited_since: Vec<Vec<usize>> = vec![Vec::new(); program.streams.len()];
    let mut last_record: Vec<Option<usize>> = vec![None; program.events.len()];
    // A captured op has run by a sync only if its graph was launched before the sync (and then
    // the launch, the stream's op, ends after it).
    let captures = program.captures();
    let launches = program.graph_launches();
    let ran_by = |p: usize, i: usize| captures[p].is_none() || launches[p].is_some_and(|l| l.0 < i);
    for (i, op) in program.ops.iter().enumerate() {
        if captures[i].is_some() {
            continue;
        }
        match op.kind {
            OpKind::Record { event, .. } => last_record[event.0] = Some(i),
            OpKind::Wait { stream, event } => {
                if let Some(r) = last_record[event.0] {
                    waited_since[stream.0].push(r);
                }
            }
            OpKind::GraphLaunch { stream, .. } => {
                last_on[stream.0] = Some(i);
                waited_since[stream.0].clear();
            }
            ref kind if kind.takes_time() => {
                if let Some(s) = kind.stream() {
                    last_on[s.0] = Some(i);
                    waited_since[s.0].clear();
                }
            }
            // Begin and end of a capture, stream-ordered allocations: no work of their own, and
            // like a record, nothing a stream sync is seen to wait for.
            _ => {}
        }
        if let OpKind::DeviceSync { device } = op.kind {
            for p in (0..i).filter(|&p| ran_by(p, i)) {
                if program.device_of(program.ops[p].id) == Some(device) {
                    e.push((end(p), start(i)));
                }
            }
            for later in i + 1..program.ops.len() {
                e.push((end(i), start(later)));
            }
            continue;
        }
        let Some(target) = op.kind.host_waits_for() else {
            continue;
        };
        match target {
            SyncTarget::Stream(s) => {
                for p in last_on[s.0].iter().chain(&waited_since[s.0]) {
                    e.push((end(*p), start(i)));
                }
            }
            SyncTarget::Event(ev) => {
                if let Some(r) = last_record[ev.0] {
                    e.push((end(r), start(i)));
                }
            }
            SyncTarget::Device => {
                for p in (0..i).filter(|&p| ran_by(p, i)) {
                    e.push((end(p), start(i)));
                }
            }
        }
        for later in i + 1..program.ops.len() {
            e.push((end(i), start(later)));
        }
    }
}

/// Collectives. An all-reduce completes on no rank before every rank has contributed (NCCL,
/// "Collective operations": every rank must call it, and each rank's result depends on all
/// inputs), so no rank's op can end before every other rank's op has started. Only the forward
/// half of that is an edge here (`start(x) → end(y)` for x issued before y): every edge of the
/// model points forward in issue order. Leaving out the backward half only makes the model
/// predict fewer orders, never a false one.
fn collectives(program: &Program, e: &mut Vec<(usize, usize)>) {
    for group in program.collectives() {
        for (k, x) in group.iter().enumerate() {
            for y in &group[k + 1..] {
                e.push((start(x.0), end(y.0)));
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
/// kernel and takes its place in its stream's queue like a spin.
fn hardware_queues(program: &Program, n: usize, e: &mut Vec<(usize, usize)>) {
    // More queues than streams change nothing (stream `i < n` feeds queue `i` either way), so
    // `n` is capped at the stream count: a huge `n` from the builder costs no memory.
    let n = n.clamp(1, program.streams.len().max(1));
    let devices = program.device_count() as usize;
    let mut last_in_queue: Vec<Option<usize>> = vec![None; n * devices];
    // Per stream: its index among its device's streams.
    let mut seen = vec![0usize; devices];
    let index: Vec<usize> = program
        .streams
        .iter()
        .map(|s| {
            let d = s.device as usize;
            seen[d] += 1;
            seen[d] - 1
        })
        .collect();
    // A captured op reaches a queue only with its graph's launch, which this model leaves out.
    let captures = program.captures();
    for (i, op) in program.ops.iter().enumerate() {
        if captures[i].is_some() {
            continue;
        }
        let stream = match op.kind {
            OpKind::Spin { stream, .. }
            | OpKind::Add { stream, .. }
            | OpKind::AllReduce { stream, .. } => stream,
            OpKind::Wait { stream, .. } if !program.is_noop_wait(op.id) => stream,
            _ => continue,
        };
        let q = program.streams[stream.0].device as usize * n + index[stream.0] % n;
        if let Some(prev) = last_in_queue[q] {
            e.push((start(prev), start(i)));
        }
        last_in_queue[q] = Some(i);
    }
}
