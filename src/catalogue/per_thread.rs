//! The per-thread default stream (CUDA 7's `--default-stream per-thread`, `CU_STREAM_PER_THREAD`).

use super::both_issue_orders;
use super::seeds::S003;
use crate::judge::claim::{Claim, Source};
use crate::judge::verdict::Expect;
use crate::program::StreamKind;
use std::time::Duration;

/// It does not synchronize with blocking streams, in either issue order.
pub fn per_thread_vs_blocking(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "per_thread.independent_of_blocking",
        "The per-thread default stream does not block other streams: a kernel on it and a kernel \
         on a blocking stream overlap, whichever is issued first (\"每个host线程创建自己的默认流，\
         并且默认流不会阻塞其他流\")",
        Source::new(
            S003,
            "学习 6. GPU Pro Tip: CUDA 7 Streams Simplify Concurrency",
        ),
    );
    let pt = c.stream(StreamKind::PerThread);
    let s1 = c.stream(StreamKind::Blocking);
    for (a, b) in both_issue_orders(&mut c, (pt, "P"), (s1, "B"), spin) {
        c.overlaps(a, b);
    }
    c.build(Expect::Holds)
}

/// It does synchronize with the legacy null stream, in both issue orders.
pub fn per_thread_vs_legacy(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "per_thread.syncs_with_legacy",
        "The per-thread default stream still synchronizes with the legacy null stream, in both \
         issue orders (Driver API: \"The per-thread default stream is not a non-blocking stream \
         and will synchronize with the legacy default stream\")",
        Source::new(
            S003,
            "学习 6. GPU Pro Tip: CUDA 7 Streams Simplify Concurrency",
        ),
    );
    let pt = c.stream(StreamKind::PerThread);
    let null = c.stream(StreamKind::LegacyNull);
    for (a, b) in both_issue_orders(&mut c, (pt, "P"), (null, "N"), spin) {
        c.precedes(a, b);
    }
    c.build(Expect::Holds)
}
