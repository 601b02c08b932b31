//! The copy, overlap and data claims of the notes (issue 4), each run on the GPU: pinned and
//! pageable copies, copy/compute overlap, copy engines, what cudaMalloc returns, racing writers,
//! and the notes' scenarios (seed 000's sleep experiment, seed 004's pipeline, seed 002's weight
//! prefetch with each dependency removed). Copy spans come from CUPTI, or from events without it.

use crate::common::assert_claim;
use rstest::rstest;
use serial_test::serial;
use stream_litmus::catalogue::scenarios::{pipeline, prefetch, sleep, Regime};
use stream_litmus::catalogue::{self, DEFAULT_SPIN};
use stream_litmus::{Claim, Place};

#[rstest]
#[case::pinned_returns_early(|| catalogue::copy_returns(Place::Pinned))]
#[case::pageable_holds_the_host(|| catalogue::copy_returns(Place::Pageable))]
#[case::pinned_faster(catalogue::pinned_bandwidth)]
#[case::overlap_pinned_kernel_first(|| catalogue::copy_overlaps_kernel(Place::Pinned, true, DEFAULT_SPIN))]
#[case::overlap_pinned_copy_first(|| catalogue::copy_overlaps_kernel(Place::Pinned, false, DEFAULT_SPIN))]
#[case::overlap_pageable_kernel_first(|| catalogue::copy_overlaps_kernel(Place::Pageable, true, DEFAULT_SPIN))]
#[case::overlap_pageable_copy_first(|| catalogue::copy_overlaps_kernel(Place::Pageable, false, DEFAULT_SPIN))]
#[case::engines_both_ways(catalogue::copy_engines_both_ways)]
#[case::engines_same_way(catalogue::copy_engines_same_way)]
#[case::malloc_is_not_page_locked(|| catalogue::malloc_memory(Place::Pinned))]
#[case::malloc_is_device(|| catalogue::malloc_memory(Place::Device))]
#[case::unsynchronized_writers_race(|| catalogue::racing_writers(false))]
#[case::event_orders_writers(|| catalogue::racing_writers(true))]
#[case::sleep_grid(|| sleep(4096, DEFAULT_SPIN))]
#[case::sleep_one_block(|| sleep(1, DEFAULT_SPIN))]
#[case::pipeline_1(|| pipeline(1, DEFAULT_SPIN * 13))]
#[case::pipeline_2(|| pipeline(2, DEFAULT_SPIN * 13))]
#[case::pipeline_4(|| pipeline(4, DEFAULT_SPIN * 13))]
#[case::pipeline_8(|| pipeline(8, DEFAULT_SPIN * 13))]
#[case::prefetch_slow(|| prefetch(Regime::SlowKernels, None))]
#[case::prefetch_fast(|| prefetch(Regime::FastKernels, None))]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn copy_claim(#[case] claim: fn() -> Claim) {
    assert_claim(&claim());
}

#[rstest]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn prefetch_without_a_dependency(
    #[values(Regime::SlowKernels, Regime::FastKernels)] regime: Regime,
    #[values(1, 2, 3, 4, 5)] dep: usize,
) {
    assert_claim(&prefetch(regime, Some(dep)));
}
