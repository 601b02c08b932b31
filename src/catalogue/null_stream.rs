//! The legacy null stream: a barrier for blocking streams, nothing to non-blocking ones.

use super::both_issue_orders;
use super::seeds::S002;
use crate::judge::claim::{Claim, Source};
use crate::judge::verdict::Expect;
use crate::program::StreamKind;
use std::time::Duration;

/// A on blocking s1, N on the null stream, B on blocking s2: A before N before B.
pub fn null_barrier(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "null.barrier",
        "The legacy null stream synchronizes with every blocking stream: A on blocking s1, N on \
         the null stream, B on blocking s2 run one after another (\"空流与其他所有阻塞流同步执行\")",
        Source::new(S002, "4. 流同步"),
    );
    let s1 = c.stream(StreamKind::Blocking);
    let null = c.stream(StreamKind::LegacyNull);
    let s2 = c.stream(StreamKind::Blocking);
    let a = c.spin(s1, "A", spin);
    let n = c.spin(null, "N", spin);
    let b = c.spin(s2, "B", spin);
    c.chain(&[a, n, b]);
    c.build(Expect::Holds)
}

/// A on non-blocking s1 and N on the null stream overlap, in both issue orders.
pub fn non_blocking_exempt(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "null.non_blocking_exempt",
        "A non-blocking stream does not synchronize with the legacy null stream: its kernel and a \
         null-stream kernel overlap whichever is issued first (\"空流与非阻塞流异步\")",
        Source::new(S002, "4. 流同步"),
    );
    let s1 = c.stream(StreamKind::NonBlocking);
    let null = c.stream(StreamKind::LegacyNull);
    for (a, b) in both_issue_orders(&mut c, (s1, "A"), (null, "N"), spin) {
        c.overlaps(a, b);
    }
    c.build(Expect::Holds)
}

/// Kernels on two non-blocking streams overlap.
pub fn non_blocking_pair(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "streams.non_blocking_pair",
        "Kernels on two non-blocking streams run concurrently (\"非空流之间都异步\")",
        Source::new(S002, "4. 流同步"),
    );
    let s1 = c.stream(StreamKind::NonBlocking);
    let s2 = c.stream(StreamKind::NonBlocking);
    let a = c.spin(s1, "A", spin);
    let b = c.spin(s2, "B", spin);
    c.overlaps(a, b);
    c.build(Expect::Holds)
}

/// Seed 002's example with non-blocking s1 and s2: all three kernels run concurrently.
pub fn seed002_non_blocking(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "null.seed002_non_blocking",
        "kernel1 on s1, kernel2 on the null stream, kernel3 on s2 run concurrently when s1 and s2 \
         are non-blocking (\"如果将stream1和stream2创建为非阻塞流，则三个核函数相对于GPU而言是并发执行的\")",
        Source::new(S002, "4. 流同步"),
    );
    let s1 = c.stream(StreamKind::NonBlocking);
    let null = c.stream(StreamKind::LegacyNull);
    let s2 = c.stream(StreamKind::NonBlocking);
    let k1 = c.spin(s1, "kernel1", spin);
    let k2 = c.spin(null, "kernel2", spin);
    let k3 = c.spin(s2, "kernel3", spin);
    c.overlaps(k1, k2).overlaps(k2, k3).overlaps(k1, k3);
    c.build(Expect::Holds)
}

/// Seed 002's question: without kernel2, do kernel1 and kernel3 on blocking streams overlap?
pub fn seed002_without_null(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "null.seed002_without_kernel2",
        "Without the null-stream kernel, kernel1 on blocking s1 and kernel3 on blocking s2 run \
         concurrently on a GPU with Hyper-Q (\"支持Hyper-Q时kernel1与kernel3可以并发执行\")",
        Source::new(S002, "4. 流同步"),
    );
    let s1 = c.stream(StreamKind::Blocking);
    let s2 = c.stream(StreamKind::Blocking);
    let k1 = c.spin(s1, "kernel1", spin);
    let k3 = c.spin(s2, "kernel3", spin);
    c.overlaps(k1, k3);
    c.build(Expect::Holds)
}
