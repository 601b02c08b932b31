//! Random valid programs: the proptest strategy behind the model's property tests and the `fuzz`
//! command.

use crate::program::{EventId, HostFnApi, Program, StreamId, StreamKind, SyncTarget};
use proptest::prelude::*;
use std::time::Duration;

/// The shape of generated programs.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Streams declared (2..=max); the legacy null and per-thread kinds are one stream each, so a
    /// program may end up with fewer distinct streams.
    pub max_streams: usize,
    pub max_ops: usize,
    pub events: usize,
    /// Spin length; generated spins last 1×, ½× or ¼× of it.
    pub spin: Duration,
    /// Whether host synchronizations (of a stream, an event or the device) appear between the
    /// other ops, 3 in 16 ops on average. The model orders everything issued after one behind the
    /// work it covers, and on the GPU such an order is the host's (docs/design.md, decision 13).
    pub host_syncs: bool,
    /// Whether host functions appear (1 op in 18 on average, and a third of the programs open a
    /// stream with one): an op behind a host function waits for the host, which is what once
    /// made readiness read a wait as launch latency.
    pub host_fns: bool,
    /// Whether graphs appear: two spins captured on a created stream, launched at once on any
    /// stream (1 op in 18 on average); the launch takes part in the checked pairs as the span of
    /// its graph's nodes.
    pub graphs: bool,
}

impl Default for Shape {
    /// 2–6 streams of mixed kinds, 2–16 ops, 3 events, 20 µs spins, host syncs, host functions
    /// and graphs included.
    fn default() -> Shape {
        Shape {
            max_streams: 6,
            max_ops: 16,
            events: 3,
            spin: Duration::from_micros(20),
            host_syncs: true,
            host_fns: true,
            graphs: true,
        }
    }
}

fn stream_kind() -> impl Strategy<Value = StreamKind> {
    prop_oneof![
        1 => Just(StreamKind::LegacyNull),
        1 => Just(StreamKind::PerThread),
        2 => Just(StreamKind::Blocking),
        3 => Just(StreamKind::NonBlocking),
    ]
}

/// One op before it is bound to concrete streams and events: (what, stream pick, event pick,
/// duration divisor).
#[derive(Debug, Clone, Copy)]
enum Pick {
    Spin(usize, u32),
    Record(usize, usize),
    Wait(usize, usize),
    SyncStream(usize),
    SyncEvent(usize),
    SyncDevice,
    HostFn(usize, u32),
    /// Capture stream pick, launch stream pick, duration divisor.
    Graph(usize, usize, u32),
}

fn pick(shape: Shape) -> impl Strategy<Value = Pick> {
    let s = 0usize..64;
    let e = 0usize..64;
    let d = prop::sample::select(vec![1u32, 2, 4]);
    let sync_weight = u32::from(shape.host_syncs);
    let host_fn_weight = u32::from(shape.host_fns);
    let graph_weight = u32::from(shape.graphs);
    prop_oneof![
        6 => (s.clone(), prop::sample::select(vec![1u32, 2, 4])).prop_map(|(s, d)| Pick::Spin(s, d)),
        3 => (s.clone(), e.clone()).prop_map(|(s, e)| Pick::Record(s, e)),
        4 => (s.clone(), e.clone()).prop_map(|(s, e)| Pick::Wait(s, e)),
        sync_weight => s.clone().prop_map(Pick::SyncStream),
        sync_weight => e.prop_map(Pick::SyncEvent),
        sync_weight => Just(Pick::SyncDevice),
        host_fn_weight => (s.clone(), d.clone()).prop_map(|(s, d)| Pick::HostFn(s, d)),
        graph_weight => (s.clone(), s.clone(), d).prop_map(|(c, l, d)| Pick::Graph(c, l, d)),
    ]
}

/// Random valid programs of the given shape. Shrinking removes ops and streams and simplifies
/// kinds, so a failing program shrinks towards a minimal one.
pub fn programs(shape: Shape) -> impl Strategy<Value = Program> {
    let lead = match shape.host_fns {
        true => prop::option::weighted(0.33, (0usize..64, prop::sample::select(vec![1u32, 2, 4])))
            .boxed(),
        false => Just(None).boxed(),
    };
    (
        prop::collection::vec(stream_kind(), 2..=shape.max_streams.max(2)),
        lead,
        prop::collection::vec(pick(shape), 2..=shape.max_ops.max(2)),
    )
        .prop_map(move |(kinds, lead, mut picks)| {
            if let Some((s, d)) = lead {
                picks.insert(0, Pick::HostFn(s, d));
            }
            build(&kinds, &picks, shape)
        })
}

fn build(kinds: &[StreamKind], picks: &[Pick], shape: Shape) -> Program {
    let mut p = Program::builder("random");
    let streams: Vec<StreamId> = kinds.iter().map(|&k| p.stream(k)).collect();
    let events: Vec<EventId> = (0..shape.events.max(1))
        .map(|i| p.event(format!("E{i}")))
        .collect();
    let stream = |i: usize| streams[i % streams.len()];
    let event = |i: usize| events[i % events.len()];
    let (mut kernels, mut hosts) = (0, 0);
    for &pk in picks {
        match pk {
            Pick::Spin(s, div) => {
                kernels += 1;
                p.spin(stream(s), format!("K{kernels}"), shape.spin / div);
            }
            Pick::Record(s, e) => {
                p.record(stream(s), event(e));
            }
            Pick::Wait(s, e) => {
                p.wait(stream(s), event(e));
            }
            Pick::SyncStream(s) => {
                p.host_sync(SyncTarget::Stream(stream(s)));
            }
            Pick::SyncEvent(e) => {
                p.host_sync(SyncTarget::Event(event(e)));
            }
            Pick::SyncDevice => {
                p.host_sync(SyncTarget::Device);
            }
            Pick::HostFn(s, div) => {
                hosts += 1;
                p.host_fn(
                    stream(s),
                    format!("H{hosts}"),
                    shape.spin / div,
                    HostFnApi::LaunchHostFunc,
                );
            }
            Pick::Graph(c, l, div) => {
                // Only a created stream can be captured; without one, two plain spins.
                let created: Vec<StreamId> = (kinds.iter().zip(&streams))
                    .filter(|(k, _)| !k.is_builtin())
                    .map(|(_, &s)| s)
                    .collect();
                let Some(&cs) = created.get(c % created.len().max(1)) else {
                    continue;
                };
                p.begin_capture(cs);
                for _ in 0..2 {
                    kernels += 1;
                    p.spin(cs, format!("K{kernels}"), shape.spin / div);
                }
                let graph = p.end_capture(cs);
                p.graph_launch(stream(l), graph);
            }
        }
    }
    p.build()
}
