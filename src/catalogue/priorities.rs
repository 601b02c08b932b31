//! Stream priorities (seed 001: "创建两个优先级不同的 Stream，让运行次序更可控").
//!
//! A low-priority kernel of several waves of large blocks runs first; a second kernel follows on
//! another stream. Priorities act on the block dispatcher: when a low-priority block finishes, a
//! pending high-priority block takes its place before the low-priority kernel's remaining blocks.
//! They do not preempt running blocks. The per-block stamps show both: when each block started,
//! and whether any block ran longer than its cycles take.

use super::seeds::S001;
use crate::judge::claim::{Claim, ClaimBuilder, Source};
use crate::judge::verdict::Expect;
use crate::program::{OpId, Priority, StreamKind};
use std::time::Duration;

/// Blocks of the low-priority kernel: 4 waves of 2 blocks of 1024 threads per SM on a 132-SM GPU
/// (more waves on smaller GPUs).
const LOW_BLOCKS: u32 = 1056;
/// Blocks of the second kernel: about one wave.
const HIGH_BLOCKS: u32 = 264;
const THREADS: u32 = 1024;

/// LOW on the first stream, then HIGH on the second; `None` priorities: both default.
fn low_then_high(c: &mut ClaimBuilder, spin: Duration, prioritized: bool) -> (OpId, OpId) {
    let (low, high) = if prioritized {
        (
            c.stream_with_priority(StreamKind::NonBlocking, Priority::Lowest),
            c.stream_with_priority(StreamKind::NonBlocking, Priority::Highest),
        )
    } else {
        (
            c.stream(StreamKind::NonBlocking),
            c.stream(StreamKind::NonBlocking),
        )
    };
    let l = c.spin_grid(low, "LOW", spin, LOW_BLOCKS, THREADS);
    let h = c.spin_grid(high, "HIGH", spin, HIGH_BLOCKS, THREADS);
    (l, h)
}

/// A high-priority kernel's blocks are dispatched before the remaining low-priority blocks.
pub fn priority_jumps_ahead(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "priority.high_jumps_ahead",
        "A kernel on a high-priority stream gets its blocks dispatched before the remaining \
         blocks of a low-priority kernel issued earlier (\"高优先级\" … \"让运行次序更可控\")",
        Source::new(S001, "创建不同优先级的 Stream"),
    );
    let (low, high) = low_then_high(&mut c, spin, true);
    c.interleaves(low, high);
    c.build(Expect::Holds)
}

/// Running low-priority blocks are not preempted by the high-priority kernel.
pub fn priority_no_preemption(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "priority.no_preemption",
        "Priorities do not preempt: no block of the low-priority kernel is interrupted when the \
         high-priority kernel arrives; every one runs for the time its cycles take",
        Source::new(S001, "创建不同优先级的 Stream"),
    );
    let (low, high) = low_then_high(&mut c, spin, true);
    c.uninterrupted(low, high);
    c.build(Expect::Holds)
}

/// With equal priorities, the second kernel waits behind all of the first one's blocks.
pub fn priority_equal_waits(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "priority.equal_waits_behind",
        "With equal priorities the second kernel jumps nothing: its first block starts only after \
         every block of the first kernel has been dispatched",
        Source::new(S001, "创建不同优先级的 Stream"),
    );
    let (low, high) = low_then_high(&mut c, spin, false);
    c.behind(low, high);
    c.build(Expect::Holds)
}
