//! The synchronization claims of the notes (issue 3), each run on the GPU: streams and events,
//! priorities, host functions and host asynchrony, implicit synchronization, the stream-ordered
//! allocator and graphs. Sources are cited in `crates/claims/src/catalogue/`; docs/claims.md has their measured verdicts.
//! Last, the newcomers' claims of issue 13 whose orders the host makes (tests/cpu/host_order.rs judges
//! them on hand-made timelines).

use crate::common::{assert_claim, catalogue_claim};
use rstest::rstest;
use serial_test::serial;
use std::time::Duration;
use stream_litmus::catalogue::DEFAULT_SPIN;
use stream_litmus::{Claim, ClaimBuilder, Expect, Source, StreamKind, SyncTarget, Verdict};

#[rstest]
#[case::per_thread_independent_of_blocking("per_thread.independent_of_blocking")]
#[case::per_thread_syncs_with_legacy("per_thread.syncs_with_legacy")]
#[case::event_rerecord("event.rerecord")]
#[case::event_third_stream("event.third_stream_keeps_running")]
#[case::seed002_non_blocking("null.seed002_non_blocking")]
#[case::seed002_without_kernel2("null.seed002_without_kernel2")]
#[case::one_connection_adjacent_streams("connections.one.adjacent_streams")]
#[case::training_hook_same_stream("training.hook_same_stream")]
#[case::training_hook_own_stream("training.hook_own_stream")]
#[case::training_hook_one_connection("training.hook_one_connection")]
#[case::priority_high_jumps_ahead("priority.high_jumps_ahead")]
#[case::priority_no_preemption("priority.no_preemption")]
#[case::priority_equal_waits_behind("priority.equal_waits_behind")]
#[case::event_elapsed_time("event.elapsed_time")]
#[case::host_launch_host_func("host.launch_host_func")]
#[case::host_stream_add_callback("host.stream_add_callback")]
#[case::host_launch_returns_early("host.launch_returns_early")]
#[case::host_queries_until_done("host.queries_until_done")]
#[case::host_syncs_return_after_work("host.syncs_return_after_work")]
#[case::implicit_mem_alloc("implicit.mem_alloc")]
#[case::implicit_mem_free("implicit.mem_free")]
#[case::implicit_host_alloc("implicit.host_alloc")]
#[case::implicit_host_free("implicit.host_free")]
#[case::implicit_memset("implicit.memset")]
#[case::implicit_copy_d2d("implicit.copy_d2d")]
#[case::implicit_context_sync("implicit.context_sync")]
#[case::implicit_unrelated_stream_sync("implicit.unrelated_stream_sync")]
#[case::alloc_async_same_stream("alloc_async.same_stream_reuses")]
#[case::alloc_async_other_stream("alloc_async.other_stream")]
#[case::graph_keeps_captured_order("graph.keeps_captured_order")]
#[case::graph_launch_cost_100("graph.launch_cost.100")]
#[case::graph_launch_cost_1000("graph.launch_cost.1000")]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn synchronization_claim(#[case] id: &str) {
    assert_claim(&catalogue_claim(id));
}

// ---- orders made by the host: the newcomers' claims of issue 13, written with the builder -----

fn newcomer(id: &str, statement: &str) -> ClaimBuilder {
    Claim::builder(
        id,
        statement,
        Source::new("issue 13", "claims a newcomer writes"),
    )
}

/// A on a non-blocking stream, a device sync, B on another stream: A → B, through the host.
fn ctx_sync_claim(spin: Duration) -> Claim {
    let mut c = newcomer(
        "newcomer.ctx_sync_waits_for_non_blocking",
        "cuCtxSynchronize waits for work on non-blocking streams",
    );
    let (s1, s2) = (
        c.stream(StreamKind::NonBlocking),
        c.stream(StreamKind::NonBlocking),
    );
    let a = c.spin(s1, "A", spin);
    c.host_sync(SyncTarget::Device);
    let b = c.spin(s2, "B", spin);
    c.precedes(a, b);
    c.build(Expect::Holds)
}

/// A (long) on s1, B on s2, a sync of s2, C on s3: B → C through the host, and C runs beside A.
/// With `a_precedes_c`, the claim that the sync waited for A too, which must be refuted.
fn stream_sync_claim(spin: Duration, a_precedes_c: bool) -> Claim {
    let mut c = newcomer(
        if a_precedes_c {
            "newcomer.stream_sync_waits_for_other_streams"
        } else {
            "newcomer.stream_sync_waits_for_its_stream_only"
        },
        "Synchronizing stream s2 does not wait for s1",
    );
    let (s1, s2, s3) = (
        c.stream(StreamKind::NonBlocking),
        c.stream(StreamKind::NonBlocking),
        c.stream(StreamKind::NonBlocking),
    );
    let a = c.spin(s1, "A", spin * 10);
    let b = c.spin(s2, "B", spin);
    c.host_sync(SyncTarget::Stream(s2));
    let cc = c.spin(s3, "C", spin);
    if a_precedes_c {
        c.precedes(a, cc);
        c.build(Expect::Violated)
    } else {
        c.precedes(b, cc).overlaps(a, cc);
        c.build(Expect::Holds)
    }
}

#[rstest]
#[case::ctx_sync(ctx_sync_claim)]
#[case::stream_sync(|s| stream_sync_claim(s, false))]
#[case::stream_sync_control(|s| stream_sync_claim(s, true))]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn newcomer_host_order_claim(#[case] claim: fn(Duration) -> Claim) {
    let record = assert_claim(&claim(DEFAULT_SPIN));
    let j = record.judgement().unwrap();
    if j.verdict == Verdict::Holds {
        let evidence = j.trials[j.witness.unwrap()].measurements[0].reason.clone();
        assert!(
            evidence.starts_with("ordered through the host"),
            "{evidence}"
        );
    }
}
