//! The synchronization claims of the notes (issue 3) that the lab's ops express, each run on the
//! GPU. Sources are cited in `src/catalogue/`; docs/claims.md has their measured verdicts.

mod common;

use common::assert_claim;
use rstest::rstest;
use serial_test::serial;
use std::time::Duration;
use stream_litmus::catalogue::{self, DEFAULT_SPIN};
use stream_litmus::Claim;

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
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn synchronization_claim(#[case] claim: fn(Duration) -> Claim) {
    assert_claim(&claim(DEFAULT_SPIN));
}
