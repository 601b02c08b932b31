//! The host side of streams: host functions run in stream order, launches return at once,
//! queries and syncs report completion. Every check here sets a host time against the stamps,
//! through the trial's clock sync (see `timeline.rs`), and prints the alignment error with it.

use super::seeds::{S001, S003, S004};
use crate::judge::claim::{Claim, Source};
use crate::judge::relation::Check;
use crate::judge::verdict::Expect;
use crate::program::{HostFnApi, OpKind, StreamKind, SyncTarget};
use std::time::Duration;

/// K1 (120 spins: 6 ms at the default spin), a host function, K2 on one stream: the host
/// function runs after K1 and K2 after it.
pub fn host_fn_in_stream_order(api: HostFnApi, spin: Duration) -> Claim {
    let (id, call) = match api {
        HostFnApi::LaunchHostFunc => ("host.launch_host_func", "cuLaunchHostFunc"),
        HostFnApi::StreamAddCallback => ("host.stream_add_callback", "cuStreamAddCallback"),
    };
    let mut c = Claim::builder(
        id,
        format!(
            "A host function enqueued with {call} runs after the work before it in the stream \
             completes (\"当某条 Stream 中排队的所有操作完成后，回调会在主机线程被触发\"), and later \
             work in that stream waits for it to return"
        ),
        Source::new(S001, "回调（Callbacks）"),
    );
    let s = c.stream(StreamKind::NonBlocking);
    // K1 outlasts a host function's start latency (HOST_FN_LATENCY_NS, 5 ms): only then does H
    // starting after K1's end prove that it waited for it.
    let k1 = c.spin(s, "K1", spin.saturating_mul(120));
    let h = c.host_fn(s, "H", spin, api);
    let k2 = c.spin(s, "K2", spin);
    c.chain(&[k1, h, k2]);
    c.build(Expect::Holds)
}

/// A launch returns to the host while its kernel still runs.
pub fn launch_returns_early(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "host.launch_returns_early",
        "A kernel launch returns to the host long before the kernel ends (\"异步的优势在于CPU可以\
         同时做其他工作\")",
        Source::new(S004, "1. CUDA Stream基础"),
    );
    let s = c.stream(StreamKind::NonBlocking);
    let k = c.spin(s, "K", spin);
    c.host_sync(SyncTarget::Stream(s));
    c.check(Check::ReturnsBefore { call: k, span: k });
    c.build(Expect::Holds)
}

/// Queries say not ready while the work runs and ready once a sync has returned.
pub fn queries_until_done(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "host.queries_until_done",
        "cuStreamQuery and cuEventQuery say not-ready until the preceding work is done, and ready \
         after it",
        Source::new(S003, "3. 动手学深度学习12.2. 异步计算"),
    );
    let s = c.stream(StreamKind::NonBlocking);
    let e = c.event("E");
    let k = c.spin(s, "K", spin);
    c.record(s, e);
    let qs = c.query("query s1", SyncTarget::Stream(s));
    let qe = c.query("query E", SyncTarget::Event(e));
    c.host_sync(SyncTarget::Stream(s));
    let qs2 = c.query("query s1 after", SyncTarget::Stream(s));
    let qe2 = c.query("query E after", SyncTarget::Event(e));
    for q in [qs, qe, qs2, qe2] {
        c.check(Check::Answers { query: q, span: k });
    }
    c.build(Expect::Holds)
}

/// Event and stream syncs return after the work they wait for, and not before.
pub fn syncs_return_after_work(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "host.syncs_return_after_work",
        "cuEventSynchronize and cuStreamSynchronize return right after the work they wait for is \
         done",
        Source::new(S004, "1. CUDA Stream基础"),
    );
    let s = c.stream(StreamKind::NonBlocking);
    let e = c.event("E");
    let k1 = c.spin(s, "K1", spin);
    c.record(s, e);
    let sync_e = c.push(
        "sync E",
        OpKind::HostSync {
            target: SyncTarget::Event(e),
        },
    );
    let k2 = c.spin(s, "K2", spin);
    let sync_s = c.push(
        "sync s1",
        OpKind::HostSync {
            target: SyncTarget::Stream(s),
        },
    );
    c.check(Check::ReturnsAfter {
        call: sync_e,
        span: k1,
    });
    c.check(Check::ReturnsAfter {
        call: sync_s,
        span: k2,
    });
    c.build(Expect::Holds)
}
