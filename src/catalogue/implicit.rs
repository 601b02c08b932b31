//! Implicit synchronization: which host calls, issued between kernels of two non-blocking
//! streams, keep the kernels apart, and whether they block the host.
//!
//! The CUDA C++ Programming Guide ("Implicit Synchronization") says: "Two commands from different
//! streams cannot run concurrently if any one of the following operations is issued in-between
//! them by the host thread: a page-locked host memory allocation, a device memory allocation, a
//! device memory set, a memory copy between two addresses to the same device memory, any CUDA
//! command to the NULL stream, …". Every row runs the same experiment: K1 on s1 (long, so no call
//! outlasts it by accident), the call, K2 on s2. The claim is the guide's "cannot run
//! concurrently" ([`Check::Separates`]); whether the call held the host until K1 ended is
//! observed beside it ([`Check::ReturnsAfter`]), with the host time it took in the evidence.

use crate::judge::claim::{Claim, Source};
use crate::judge::relation::Check;
use crate::judge::verdict::Expect;
use crate::program::{ApiCall, OpKind, StreamKind, SyncTarget};
use std::time::Duration;

/// Bytes each allocation, free, memset or copy works on.
pub const IMPLICIT_BYTES: u64 = 1 << 20;

/// K1's length in spins: long enough that no call here outlasts it without waiting for it
/// (the slowest, a page-locked allocation of 1 MiB, takes a few hundred µs).
const K1_SPINS: u32 = 40;

/// The host calls of the experiment, beyond the guide's list: a free, a page-locked free, a
/// context synchronize, and a synchronize of a stream with no work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Between {
    Api(ApiCall),
    ContextSync,
    UnrelatedStreamSync,
}

impl Between {
    /// Every row of the table in docs/claims.md.
    pub const ALL: [Between; 8] = [
        Between::Api(ApiCall::MemAlloc),
        Between::Api(ApiCall::MemFree),
        Between::Api(ApiCall::HostAlloc),
        Between::Api(ApiCall::HostFree),
        Between::Api(ApiCall::Memset),
        Between::Api(ApiCall::CopyD2D),
        Between::ContextSync,
        Between::UnrelatedStreamSync,
    ];

    fn id(self) -> &'static str {
        match self {
            Between::Api(ApiCall::MemAlloc) => "implicit.mem_alloc",
            Between::Api(ApiCall::MemFree) => "implicit.mem_free",
            Between::Api(ApiCall::HostAlloc) => "implicit.host_alloc",
            Between::Api(ApiCall::HostFree) => "implicit.host_free",
            Between::Api(ApiCall::Memset) => "implicit.memset",
            Between::Api(ApiCall::CopyD2D) => "implicit.copy_d2d",
            Between::ContextSync => "implicit.context_sync",
            Between::UnrelatedStreamSync => "implicit.unrelated_stream_sync",
        }
    }

    /// The verdict expected on the GPU, and why where the documentation does not settle it.
    ///
    /// The guide's list says "cannot run concurrently", but it dates from GPUs that had one
    /// hardware queue; the H100 and H200 run K2 beside K1 for all four listed calls on
    /// non-blocking streams (docs/claims.md). Those rows are expected Violated as a measured
    /// finding, not as a documented rule. The frees block the host until K1 ends, which the
    /// guide does not list either.
    pub fn expectation(self) -> (Expect, Option<&'static str>) {
        const LISTED: &str = "Measured finding: the guide's list (written for GPUs with one \
            hardware queue) says the kernels cannot overlap, but the call neither blocks the host \
            nor holds K2 back between non-blocking streams on an H100 or H200; the Driver API's \
            \"API synchronization behavior\" page documents no wait for it either";
        match self {
            Between::Api(ApiCall::MemAlloc | ApiCall::HostAlloc) => {
                (Expect::Violated, Some(LISTED))
            }
            Between::Api(ApiCall::Memset | ApiCall::CopyD2D) => (Expect::Violated, Some(LISTED)),
            Between::Api(ApiCall::MemFree) => (
                Expect::Holds,
                Some(
                    "The guide's list leaves frees out; NVIDIA's stream-ordered allocator blog \
                      (seed 003, item 7) says cudaFree synchronizes, without a guarantee in the \
                      Driver API reference. Measured: it blocks the host until K1 ends",
                ),
            ),
            Between::Api(ApiCall::HostFree) => (
                Expect::Holds,
                Some(
                    "Measured finding: no document says cuMemFreeHost waits for the device, but \
                      it blocks the host until K1 ends on an H100 and H200",
                ),
            ),
            Between::ContextSync => (Expect::Holds, None),
            Between::UnrelatedStreamSync => (
                Expect::Violated,
                Some(
                    "Control row: synchronizing a stream with no work returns at once and holds \
                      nothing back",
                ),
            ),
        }
    }

    /// What the documentation says, and the source it says it in.
    fn documented(self) -> (&'static str, &'static str) {
        const GUIDE: &str = "CUDA C++ Programming Guide, Implicit Synchronization";
        match self {
            Between::Api(ApiCall::MemAlloc) => (GUIDE, "\"a device memory allocation\""),
            Between::Api(ApiCall::HostAlloc) => (GUIDE, "\"a page-locked host memory allocation\""),
            Between::Api(ApiCall::Memset) => (GUIDE, "\"a device memory set\""),
            Between::Api(ApiCall::CopyD2D) => (
                GUIDE,
                "\"a memory copy between two addresses to the same device memory\"",
            ),
            Between::Api(ApiCall::MemFree) => (
                "NVIDIA blog, Using the CUDA Stream-Ordered Memory Allocator, Part 1 (seed 003, \
                 item 7)",
                "cudaFree \"synchronizes\" outstanding work (not in the guide's list)",
            ),
            Between::Api(ApiCall::HostFree) => (
                GUIDE,
                "not in the list: the documentation says nothing of cuMemFreeHost",
            ),
            Between::ContextSync => (
                "CUDA Driver API, cuCtxSynchronize",
                "\"Blocks until the device has completed all preceding requested tasks\"",
            ),
            Between::UnrelatedStreamSync => (
                "CUDA Driver API, cuStreamSynchronize",
                "waits for the given stream's tasks only",
            ),
        }
    }
}

/// One row: K1 on s1, the call, K2 on s2; the guide's claim that K1 and K2 do not overlap.
pub fn implicit_sync(between: Between, spin: Duration) -> Claim {
    let (document, section) = between.documented();
    let name = match between {
        Between::Api(call) => call.name(),
        Between::ContextSync => "cuCtxSynchronize",
        Between::UnrelatedStreamSync => "cuStreamSynchronize of an idle stream",
    };
    let mut c = Claim::builder(
        between.id(),
        format!(
            "{name}, issued by the host between kernels on two non-blocking streams, keeps them \
             from running concurrently"
        ),
        Source::new(document, section),
    );
    let s1 = c.stream(StreamKind::NonBlocking);
    let s2 = c.stream(StreamKind::NonBlocking);
    let k1 = c.spin(s1, "K1", spin * K1_SPINS);
    let call = match between {
        Between::Api(call) => c.api(call, IMPLICIT_BYTES),
        Between::ContextSync => c.push(
            "cuCtxSynchronize",
            OpKind::HostSync {
                target: SyncTarget::Device,
            },
        ),
        Between::UnrelatedStreamSync => {
            let idle = c.stream(StreamKind::NonBlocking);
            c.push(
                "sync idle s3",
                OpKind::HostSync {
                    target: SyncTarget::Stream(idle),
                },
            )
        }
    };
    let k2 = c.spin(s2, "K2", spin);
    c.check(Check::Separates {
        call,
        before: k1,
        after: k2,
    });
    c.observe(Check::ReturnsAfter { call, span: k1 });
    let (expect, why) = between.expectation();
    if let Some(why) = why {
        c.rationale(why);
    }
    c.build(expect)
}
