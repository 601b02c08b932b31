//! The synchronization claims of the notes (issue 3), each run on the GPU: streams and events,
//! priorities, host functions and host asynchrony, implicit synchronization, the stream-ordered
//! allocator and graphs. Sources are cited in `src/catalogue/`; docs/claims.md has their measured verdicts.
//! Last, the newcomers' claims of issue 13 whose orders the host makes (tests/cpu/host_order.rs judges
//! them on hand-made timelines).

use crate::common::assert_claim;
use rstest::rstest;
use serial_test::serial;
use std::time::Duration;
use stream_litmus::catalogue::Between;
use stream_litmus::catalogue::{self, DEFAULT_SPIN};
use stream_litmus::{
    ApiCall, Claim, ClaimBuilder, Expect, HostFnApi, Source, StreamKind, SyncTarget, Verdict,
};

#[rstest]
#[case::per_thread_independent_of_blocking(catalogue::per_thread_vs_blocking)]
#[case::per_thread_syncs_with_legacy(catalogue::per_thread_vs_legacy)]
#[case::event_rerecord(catalogue::event_rerecord)]
#[case::event_third_stream(catalogue::event_third_stream)]
#[case::seed002_non_blocking(catalogue::seed002_non_blocking)]
#[case::seed002_without_kernel2(catalogue::seed002_without_null)]
#[case::one_connection_adjacent_streams(catalogue::connections_one_adjacent)]
#[case::training_hook_same_stream(catalogue::hook_on_compute_stream)]
#[case::training_hook_own_stream(catalogue::hook_on_comm_stream)]
#[case::training_hook_one_connection(catalogue::hook_one_connection)]
#[case::priority_high_jumps_ahead(catalogue::priority_jumps_ahead)]
#[case::priority_no_preemption(catalogue::priority_no_preemption)]
#[case::priority_equal_waits_behind(catalogue::priority_equal_waits)]
#[case::event_elapsed_time(catalogue::event_elapsed_time)]
#[case::host_launch_host_func(|s| catalogue::host_fn_in_stream_order(HostFnApi::LaunchHostFunc, s))]
#[case::host_stream_add_callback(|s| catalogue::host_fn_in_stream_order(HostFnApi::StreamAddCallback, s))]
#[case::host_launch_returns_early(catalogue::launch_returns_early)]
#[case::host_queries_until_done(catalogue::queries_until_done)]
#[case::host_syncs_return_after_work(catalogue::syncs_return_after_work)]
#[case::implicit_mem_alloc(|s| catalogue::implicit_sync(Between::Api(ApiCall::MemAlloc), s))]
#[case::implicit_mem_free(|s| catalogue::implicit_sync(Between::Api(ApiCall::MemFree), s))]
#[case::implicit_host_alloc(|s| catalogue::implicit_sync(Between::Api(ApiCall::HostAlloc), s))]
#[case::implicit_host_free(|s| catalogue::implicit_sync(Between::Api(ApiCall::HostFree), s))]
#[case::implicit_memset(|s| catalogue::implicit_sync(Between::Api(ApiCall::Memset), s))]
#[case::implicit_copy_d2d(|s| catalogue::implicit_sync(Between::Api(ApiCall::CopyD2D), s))]
#[case::implicit_context_sync(|s| catalogue::implicit_sync(Between::ContextSync, s))]
#[case::implicit_unrelated_stream_sync(|s| catalogue::implicit_sync(Between::UnrelatedStreamSync, s))]
#[case::alloc_async_same_stream(catalogue::alloc_async_same_stream)]
#[case::alloc_async_other_stream(catalogue::alloc_async_other_stream)]
#[case::graph_keeps_captured_order(catalogue::graph_keeps_order)]
#[case::graph_launch_cost_100(|s| catalogue::graph_launch_cost(100, s))]
#[case::graph_launch_cost_1000(|s| catalogue::graph_launch_cost(1000, s))]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn synchronization_claim(#[case] claim: fn(Duration) -> Claim) {
    assert_claim(&claim(DEFAULT_SPIN));
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
