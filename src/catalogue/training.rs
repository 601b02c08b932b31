//! Seed 003's gradient-hook experiments (03, 04, 05): a chain of "backward" kernels on a compute
//! stream, and after each a "communication" kernel with a "gradient hook" kernel that waits for
//! it. The question is whether the compute chain is delayed.

use super::seeds::S003;
use crate::judge::claim::{Claim, ClaimBuilder, Source};
use crate::judge::verdict::Expect;
use crate::program::{OpId, StreamKind};
use std::time::Duration;

/// backward 1 on compute; communication 1 and hook 1 on a second stream, started by an event
/// after backward 1; then backward 2 on compute. Returns (B1, C1, H1, B2).
fn joined_by_events(c: &mut ClaimBuilder, spin: Duration) -> (OpId, OpId, OpId, OpId) {
    let compute = c.stream_labelled(StreamKind::NonBlocking, "compute");
    let comm = c.stream_labelled(StreamKind::NonBlocking, "comm");
    let grad = c.event("grad1");
    let b1 = c.spin(compute, "B1", spin);
    c.record(compute, grad);
    c.wait(comm, grad);
    let c1 = c.spin(comm, "C1", spin);
    let h1 = c.spin(comm, "H1", spin / 4);
    let b2 = c.spin(compute, "B2", spin);
    (b1, c1, h1, b2)
}

/// 03: the hook on the compute stream blocks the next backward kernel.
pub fn hook_on_compute_stream(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "training.hook_same_stream",
        "With no stream set, communication and the gradient hook run in the compute stream and \
         the next backward kernel waits for them (\"hook会阻塞backward\")",
        Source::new(S003, "测试 03_test_graph_block"),
    );
    let compute = c.stream_labelled(StreamKind::NonBlocking, "compute");
    let b1 = c.spin(compute, "B1", spin);
    let c1 = c.spin(compute, "C1", spin);
    let h1 = c.spin(compute, "H1", spin / 4);
    let b2 = c.spin(compute, "B2", spin);
    c.chain(&[b1, c1, h1, b2]);
    c.build(Expect::Holds)
}

/// 04: on its own stream, joined by an event, communication does not delay the compute chain.
pub fn hook_on_comm_stream(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "training.hook_own_stream",
        "With communication and the hook on their own stream, joined by an event, the next \
         backward kernel runs while they do (\"hook没有阻塞backward\")",
        Source::new(S003, "测试 04_test_graph_no_block"),
    );
    let (b1, c1, _, b2) = joined_by_events(&mut c, spin);
    c.precedes(b1, c1).precedes(b1, b2).overlaps(c1, b2);
    c.env("CUDA_DEVICE_MAX_CONNECTIONS", None);
    c.build(Expect::Holds)
}

/// 05: the same with one hardware queue delays the compute chain again.
pub fn hook_one_connection(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "training.hook_one_connection",
        "With CUDA_DEVICE_MAX_CONNECTIONS=1 the separate communication stream no longer helps: the \
         next backward kernel, queued behind the hook, waits for the communication kernel \
         (\"会阻塞backward\")",
        Source::new(S003, "测试 05_test_graph_no_block_queue1"),
    );
    let (_, c1, _, b2) = joined_by_events(&mut c, spin);
    c.precedes(c1, b2)
        .env("CUDA_DEVICE_MAX_CONNECTIONS", Some("1"));
    c.build(Expect::Holds)
}
