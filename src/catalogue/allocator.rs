//! The stream-ordered allocator (`cuMemAllocAsync` / `cuMemFreeAsync`): what is reused, on which
//! stream, and at what cost in ordering.

use super::seeds::S003;
use crate::judge::claim::{Claim, Source};
use crate::judge::relation::Check;
use crate::judge::verdict::Expect;
use crate::program::StreamKind;
use std::time::Duration;

/// Bytes of each allocation: large enough to be a pool allocation of its own.
pub const ALLOC_BYTES: u64 = 1 << 20;

/// Allocate, run, free, allocate again on one stream: the second allocation reuses the first.
pub fn alloc_async_same_stream(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "alloc_async.same_stream_reuses",
        "cuMemAllocAsync after cuMemFreeAsync on the same stream reuses the freed memory",
        Source::new(S003, "7. 使用 NVIDIA CUDA 流顺序内存分配器，第 1 部分"),
    );
    let s = c.stream(StreamKind::NonBlocking);
    let a1 = c.alloc_async(s, "A1", ALLOC_BYTES);
    c.spin(s, "K1", spin);
    c.free_async(s, a1);
    let a2 = c.alloc_async(s, "A2", ALLOC_BYTES);
    c.spin(s, "K2", spin);
    c.free_async(s, a2);
    c.check(Check::Reuses {
        first: a1,
        second: a2,
    });
    c.build(Expect::Holds)
}

/// Allocate and free on s1 behind a running kernel, then allocate on s2 and run K2 there.
pub fn alloc_async_other_stream(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "alloc_async.other_stream",
        "An allocation on another stream reuses memory freed with cuMemFreeAsync while the \
         freeing stream's kernel still runs, by making the other stream wait for it (the pool's \
         internal dependencies)",
        Source::new(S003, "7. 使用 NVIDIA CUDA 流顺序内存分配器，第 1 部分"),
    );
    let s1 = c.stream(StreamKind::NonBlocking);
    let s2 = c.stream(StreamKind::NonBlocking);
    let a1 = c.alloc_async(s1, "A1", ALLOC_BYTES);
    let k1 = c.spin(s1, "K1", spin);
    c.free_async(s1, a1);
    let a2 = c.alloc_async(s2, "A2", ALLOC_BYTES);
    let k2 = c.spin(s2, "K2", spin);
    c.free_async(s2, a2);
    c.check(Check::Reuses {
        first: a1,
        second: a2,
    });
    c.precedes(k1, k2);
    c.observe(Check::Overlaps { a: k1, b: k2 });
    c.rationale(
        "The pool attribute CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES (on by default) \
         allows the driver to insert such a dependency; it does not promise to. On an H100 and \
         H200 the driver gives s2 fresh memory 1 MiB further on and K2 runs beside K1: no reuse, \
         no dependency",
    );
    c.build(Expect::Violated)
}
