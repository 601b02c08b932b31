//! `CUDA_DEVICE_MAX_CONNECTIONS`: how many hardware work queues a context's streams map onto.
//!
//! With one connection every stream feeds one queue, in issue order. The queue waits when its
//! head must wait, so a kernel of another stream queued behind a dependent kernel picks up a false
//! dependency. What it does not do is run one kernel at a time: once the head is dispatched, the
//! next independent kernel is dispatched beside it.

use super::seeds::S003;
use crate::judge::claim::{Claim, ClaimBuilder, Source};
use crate::judge::verdict::Expect;
use crate::program::{OpId, StreamKind};
use std::time::Duration;

const VAR: &str = "CUDA_DEVICE_MAX_CONNECTIONS";

/// A1 then A2 on s1, then B1 on s2 (non-blocking streams, issued in that order).
fn two_then_one(c: &mut ClaimBuilder, spin: Duration) -> (OpId, OpId, OpId) {
    let s1 = c.stream(StreamKind::NonBlocking);
    let s2 = c.stream(StreamKind::NonBlocking);
    let a1 = c.spin(s1, "A1", spin);
    let a2 = c.spin(s1, "A2", spin);
    let b1 = c.spin(s2, "B1", spin);
    (a1, a2, b1)
}

/// With the default number of connections, B1 overlaps A1.
pub fn connections_default(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "connections.default.independent",
        "With the default number of hardware connections, B1 on s2 runs beside A1 on s1 even \
         though it was issued after A2",
        Source::new(S003, "测试 04_test_graph_no_block"),
    );
    let (a1, _, b1) = two_then_one(&mut c, spin);
    c.overlaps(a1, b1).env(VAR, None);
    c.build(Expect::Holds)
}

/// With one connection, B1 cannot start before A1 ends: a false dependency.
pub fn connections_one_false_dependency(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "connections.one.false_dependency",
        "With CUDA_DEVICE_MAX_CONNECTIONS=1, B1 on s2 waits for A1 on s1: queued behind A2, which \
         waits for A1, it inherits a dependency no stream asked for (\"会使得可用硬件工作队列为1\")",
        Source::new(S003, "测试 05_test_graph_no_block_queue1"),
    );
    let (a1, _, b1) = two_then_one(&mut c, spin);
    c.precedes(a1, b1).env(VAR, Some("1"));
    c.build(Expect::Holds)
}

/// The strong reading: "with one connection there is effectively only one stream".
pub fn connections_one_single_stream(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "connections.one.single_stream",
        "With CUDA_DEVICE_MAX_CONNECTIONS=1 there is effectively only one stream: B1 waits for \
         everything issued before it, A2 included (\"导致实际上也只有一个stream\")",
        Source::new(S003, "测试 05_test_graph_no_block_queue1"),
    );
    let (_, a2, b1) = two_then_one(&mut c, spin);
    c.precedes(a2, b1).env(VAR, Some("1")).rationale(
        "One queue serializes dispatch, not execution: B1 has no dependency on A2, so it is \
         dispatched as soon as A2 is and runs beside it. Expected to be violated.",
    );
    c.build(Expect::Violated)
}

/// The strong reading on two adjacent launches: with one connection, are two streams one?
pub fn connections_one_adjacent(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "connections.one.adjacent_streams",
        "With CUDA_DEVICE_MAX_CONNECTIONS=1 there is effectively only one stream: B on s2, issued \
         right after A on s1, waits for A (\"导致实际上也只有一个stream\")",
        Source::new(S003, "测试 05_test_graph_no_block_queue1"),
    );
    let s1 = c.stream(StreamKind::NonBlocking);
    let s2 = c.stream(StreamKind::NonBlocking);
    let a = c.spin(s1, "A", spin);
    let b = c.spin(s2, "B", spin);
    c.precedes(a, b).env(VAR, Some("1")).rationale(
        "Neither kernel depends on anything, so the single queue dispatches both at once: one \
         queue is not one stream. Expected to be violated.",
    );
    c.build(Expect::Violated)
}
