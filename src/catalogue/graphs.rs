//! CUDA graphs: a captured graph keeps the orderings and overlaps of the stream work it was
//! captured from, and launching it costs the host less than launching its kernels one by one.

use super::seeds::S001;
use crate::judge::claim::{Claim, Source};
use crate::judge::relation::Check;
use crate::judge::verdict::Expect;
use crate::program::StreamKind;
use std::time::Duration;

/// Spin of each kernel in the launch-cost claims, as a fraction of the catalogue's spin (2 µs at
/// the default): short, as the claim is about host time, yet about as long as one launch takes
/// the host, so the direct launches do not pile up in the stream.
pub const COST_SPIN_DIVISOR: u32 = 25;

/// Fork-join captured from two streams with events: K1; then K2 on s2 beside K3 on s1; then K4.
pub fn graph_keeps_order(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "graph.keeps_captured_order",
        "A graph captured from work on two streams joined by events keeps the captured orderings \
         and overlaps when launched",
        Source::new(S001, "CUDA Graphs | 图模型批量调度 | 优化 launch 开销"),
    );
    let s1 = c.stream(StreamKind::Blocking);
    let s2 = c.stream(StreamKind::Blocking);
    let (fork, join) = (c.event("fork"), c.event("join"));
    c.begin_capture(s1);
    let k1 = c.spin(s1, "K1", spin);
    c.record(s1, fork);
    c.wait(s2, fork);
    let k2 = c.spin(s2, "K2", spin);
    let k3 = c.spin(s1, "K3", spin);
    c.record(s2, join);
    c.wait(s1, join);
    let k4 = c.spin(s1, "K4", spin);
    let end = c.end_capture(s1);
    c.graph_launch(s1, end);
    c.chain(&[k1, k2, k4]);
    c.chain(&[k1, k3, k4]);
    c.overlaps(k2, k3);
    c.build(Expect::Holds)
}

/// `n` kernels launched one by one, then the same `n` captured and launched as one graph.
pub fn graph_launch_cost(n: usize, spin: Duration) -> Claim {
    let each = spin / COST_SPIN_DIVISOR;
    let mut c = Claim::builder(
        format!("graph.launch_cost.{n}"),
        format!(
            "Launching a graph of {n} kernels costs the host less time than launching the {n} \
             kernels one by one (\"优化 launch 开销\")"
        ),
        Source::new(S001, "CUDA Graphs | 图模型批量调度 | 优化 launch 开销"),
    );
    let s = c.stream(StreamKind::Blocking);
    let direct: Vec<_> = (0..n).map(|i| c.spin(s, format!("D{i}"), each)).collect();
    c.begin_capture(s);
    for i in 0..n {
        c.spin(s, format!("G{i}"), each);
    }
    let end = c.end_capture(s);
    let launch = c.graph_launch(s, end);
    c.check(Check::LaunchCheaper {
        graph: launch,
        first: direct[0],
        last: direct[n - 1],
    });
    c.build(Expect::Holds)
}
