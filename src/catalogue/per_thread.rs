//! The per-thread default stream (CUDA 7's `--default-stream per-thread`, `CU_STREAM_PER_THREAD`).

use super::both_issue_orders;
use super::seeds::S003;
use crate::judge::claim::{Claim, Source};
use crate::judge::relation::Check;
use crate::judge::verdict::Expect;
use crate::program::{StreamKind, SyncTarget};
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

/// What the legacy barrier gives an event record on the per-thread stream: the record completes
/// only after the legacy work (an event sync waits for it), but a stream sync of the per-thread
/// stream, whose only op is the record, returns at once. Found by 100,000 random programs on an
/// H100 (docs/model.md, "Findings"); no note or document says it. `legacy` lasts 20 spins, so
/// that "at once" and "after it" are far apart.
pub fn per_thread_record_under_legacy(spin: Duration, event_sync: bool) -> Claim {
    let (id, statement) = match event_sync {
        false => (
            "per_thread.stream_sync_skips_legacy_record",
            "A stream sync of the per-thread stream whose only op is an event record does not \
             wait for the legacy-stream work issued before the record",
        ),
        true => (
            "per_thread.event_sync_waits_for_legacy",
            "An event sync of a record on the per-thread stream waits for the legacy-stream work \
             issued before the record (the implicit barrier orders the record after it)",
        ),
    };
    let mut c = Claim::builder(
        id,
        statement,
        Source::new(
            S003,
            "学习 6. GPU Pro Tip: CUDA 7 Streams Simplify Concurrency",
        ),
    );
    let null = c.stream(StreamKind::LegacyNull);
    let pt = c.stream(StreamKind::PerThread);
    let e = c.event("E");
    let legacy = c.spin(null, "N", spin.saturating_mul(20));
    c.record(pt, e);
    let sync = c.host_sync(match event_sync {
        false => SyncTarget::Stream(pt),
        true => SyncTarget::Event(e),
    });
    c.check(match event_sync {
        false => Check::ReturnsBefore {
            call: sync,
            span: legacy,
        },
        true => Check::ReturnsAfter {
            call: sync,
            span: legacy,
        },
    });
    c.rationale(
        "Measured first in a plain CUDA C program (cudaStreamLegacy, 5 ms kernel): \
         cudaEventRecord(e, cudaStreamPerThread) then cudaStreamSynchronize(cudaStreamPerThread) \
         returned after 0.01 ms, cudaEventSynchronize(e) after 5 ms.",
    );
    c.build(Expect::Holds)
}
