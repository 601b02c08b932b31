//! The copy, overlap and data claims of the notes (issue 4), each run on the GPU: pinned and
//! pageable copies, copy/compute overlap, copy engines, what cudaMalloc returns, racing writers,
//! and the notes' scenarios (seed 000's sleep experiment, seed 004's pipeline, seed 002's weight
//! prefetch with each dependency removed). Copy spans come from CUPTI, or from events without it.

use crate::common::{assert_claim, catalogue_claim};
use rstest::rstest;
use serial_test::serial;

#[rstest]
#[case::pinned_returns_early("copy.pinned_returns_early")]
#[case::pageable_holds_the_host("copy.pageable_returns_late")]
#[case::pinned_faster("copy.pinned_faster")]
#[case::overlap_pinned_kernel_first("copy.overlaps_kernel.pinned.kernel_first")]
#[case::overlap_pinned_copy_first("copy.overlaps_kernel.pinned.copy_first")]
#[case::overlap_pageable_kernel_first("copy.overlaps_kernel.pageable.kernel_first")]
#[case::overlap_pageable_copy_first("copy.overlaps_kernel.pageable.copy_first")]
#[case::engines_both_ways("copy.engines.h2d_d2h_overlap")]
#[case::engines_same_way("copy.engines.two_h2d_serialize")]
#[case::malloc_is_not_page_locked("memory.malloc_is_page_locked")]
#[case::malloc_is_device("memory.malloc_is_device")]
#[case::unsynchronized_writers_race("race.unsynchronized_writers")]
#[case::event_orders_writers("race.event_orders_writers")]
#[case::sleep_grid("scenario.sleep.grid")]
#[case::sleep_one_block("scenario.sleep.one_block")]
#[case::pipeline_1("scenario.pipeline.1")]
#[case::pipeline_2("scenario.pipeline.2")]
#[case::pipeline_4("scenario.pipeline.4")]
#[case::pipeline_8("scenario.pipeline.8")]
#[case::prefetch_slow("scenario.prefetch.slow_kernels")]
#[case::prefetch_fast("scenario.prefetch.fast_kernels")]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn copy_claim(#[case] id: &str) {
    assert_claim(&catalogue_claim(id));
}

#[rstest]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn prefetch_without_a_dependency(
    #[values("slow_kernels", "fast_kernels")] regime: &str,
    #[values(1, 2, 3, 4, 5)] dep: usize,
) {
    assert_claim(&catalogue_claim(&format!(
        "scenario.prefetch.{regime}.without_dep{dep}"
    )));
}
