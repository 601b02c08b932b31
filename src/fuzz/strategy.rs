//! Random valid programs: the proptest strategy behind the model's property tests and the `fuzz`
//! command.

use crate::program::{EventId, Program, StreamId, StreamKind, SyncTarget};
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
}

impl Default for Shape {
    /// 2–6 streams of mixed kinds, 2–16 ops, 3 events, 20 µs spins, host syncs included.
    fn default() -> Shape {
        Shape {
            max_streams: 6,
            max_ops: 16,
            events: 3,
            spin: Duration::from_micros(20),
            host_syncs: true,
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
}

fn pick(host_syncs: bool) -> impl Strategy<Value = Pick> {
    let s = 0usize..64;
    let e = 0usize..64;
    let sync_weight = if host_syncs { 1 } else { 0 };
    prop_oneof![
        6 => (s.clone(), prop::sample::select(vec![1u32, 2, 4])).prop_map(|(s, d)| Pick::Spin(s, d)),
        3 => (s.clone(), e.clone()).prop_map(|(s, e)| Pick::Record(s, e)),
        4 => (s.clone(), e.clone()).prop_map(|(s, e)| Pick::Wait(s, e)),
        sync_weight => s.prop_map(Pick::SyncStream),
        sync_weight => e.prop_map(Pick::SyncEvent),
        sync_weight => Just(Pick::SyncDevice),
    ]
}

/// Random valid programs of the given shape. Shrinking removes ops and streams and simplifies
/// kinds, so a failing program shrinks towards a minimal one.
pub fn programs(shape: Shape) -> impl Strategy<Value = Program> {
    (
        prop::collection::vec(stream_kind(), 2..=shape.max_streams.max(2)),
        prop::collection::vec(pick(shape.host_syncs), 2..=shape.max_ops.max(2)),
    )
        .prop_map(move |(kinds, picks)| build(&kinds, &picks, shape))
}

fn build(kinds: &[StreamKind], picks: &[Pick], shape: Shape) -> Program {
    let mut p = Program::builder("random");
    let streams: Vec<StreamId> = kinds.iter().map(|&k| p.stream(k)).collect();
    let events: Vec<EventId> = (0..shape.events.max(1))
        .map(|i| p.event(format!("E{i}")))
        .collect();
    let stream = |i: usize| streams[i % streams.len()];
    let event = |i: usize| events[i % events.len()];
    let mut kernels = 0;
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
        }
    }
    p.build()
}
