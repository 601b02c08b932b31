//! Copies: what pinned memory buys, copy/compute overlap, copy engines, what cudaMalloc returns,
//! and writers that race. No kernel can stamp a copy: every copy span here comes from the
//! witness (CUPTI activity records, or events around the copy when CUPTI is missing).

use super::seeds::{S000, S001};
use crate::judge::claim::{Claim, Source};
use crate::judge::relation::Check;
use crate::judge::verdict::Expect;
use crate::program::{CopyDir, Place, StreamKind};
use std::time::Duration;

/// Bytes of the copies that test host asynchrony and bandwidth: long enough (milliseconds from
/// pageable memory) that a staged copy's blocking is unmistakable.
pub const BIG_COPY: u64 = 32 << 20;
/// Bytes of the copies that test overlap: a few hundred µs from pinned memory.
pub const COPY_BYTES: u64 = 16 << 20;

/// An async H2D copy from `host` memory, and whether the host got control back before it ended.
pub fn copy_returns(host: Place) -> Claim {
    let (id, statement) = match host {
        Place::Pageable => (
            "copy.pageable_returns_late",
            "cudaMemcpyAsync H2D from pageable memory holds the host while the data moves: it \
             returns only once the data is staged through the driver's page-locked buffers",
        ),
        _ => (
            "copy.pinned_returns_early",
            "cudaMemcpyAsync H2D from pinned memory returns to the host at once, before the \
             copy ends",
        ),
    };
    let mut c = Claim::builder(
        id,
        statement,
        Source::new(S000, "7.5 cudaMalloc和页锁定内存"),
    );
    let s = c.stream(StreamKind::NonBlocking);
    let copy = c.copy_new(s, "C", CopyDir::H2D, BIG_COPY, host);
    c.host_sync(crate::program::SyncTarget::Stream(s));
    match host {
        Place::Pageable => {
            c.check(Check::Blocks {
                call: copy,
                span: copy,
            });
            c.observe(Check::ReturnsAfter {
                call: copy,
                span: copy,
            })
        }
        _ => c.check(Check::ReturnsBefore {
            call: copy,
            span: copy,
        }),
    };
    c.build(Expect::Holds)
}

/// The same H2D copy from pageable memory, then from pinned memory: the pinned one is faster,
/// and the ratio of their durations is the bandwidth ratio.
pub fn pinned_bandwidth() -> Claim {
    let mut c = Claim::builder(
        "copy.pinned_faster",
        "An H2D copy from pinned memory is faster than the same copy from pageable memory",
        Source::new(S001, "锁页内存（Pinned Memory）"),
    );
    let s = c.stream(StreamKind::NonBlocking);
    let pageable = c.copy_new(s, "pageable", CopyDir::H2D, BIG_COPY, Place::Pageable);
    c.host_sync(crate::program::SyncTarget::Device);
    let pinned = c.copy_new(s, "pinned", CopyDir::H2D, BIG_COPY, Place::Pinned);
    c.check(Check::Faster {
        slow: (pageable, pageable),
        fast: (pinned, pinned),
    });
    c.build(Expect::Holds)
}

/// A kernel on one stream and an H2D copy from `host` memory on another, issued kernel first or
/// copy first.
///
/// Pageable memory issued copy first is the exception, and its claim says so: the staging call
/// holds the host until (nearly) all the data has moved, so the kernel is launched only when the
/// copy is about to end and cannot overlap more than its last staged piece. Asking "do they
/// overlap?" there has no fair answer (the later op was not issued while the copy ran, which the
/// overlap check rightly reports as inconclusive); what decides is whether the call held the host.
/// The overlap is still measured and printed as an observation.
pub fn copy_overlaps_kernel(host: Place, kernel_first: bool, spin: Duration) -> Claim {
    let order = if kernel_first {
        "kernel_first"
    } else {
        "copy_first"
    };
    let staged_first = host == Place::Pageable && !kernel_first;
    let statement = if staged_first {
        "An H2D copy from pageable memory issued first leaves nothing to overlap a kernel issued \
         after it on another stream: the copy's call holds the host until the data is staged, \
         so the kernel is launched only as the copy ends"
            .to_string()
    } else {
        format!(
            "A kernel on one stream overlaps an H2D copy from {} memory on another ({} issued \
             first)",
            host.name(),
            if kernel_first { "kernel" } else { "copy" }
        )
    };
    let mut c = Claim::builder(
        format!("copy.overlaps_kernel.{}.{order}", host.name()),
        statement,
        Source::new(S000, "7.3 数据传输和核函数重叠"),
    );
    let (s1, s2) = (
        c.stream(StreamKind::NonBlocking),
        c.stream(StreamKind::NonBlocking),
    );
    let kernel_len = spin * 10;
    let (k, copy) = if kernel_first {
        let k = c.spin(s1, "K", kernel_len);
        (k, c.copy_new(s2, "C", CopyDir::H2D, COPY_BYTES, host))
    } else {
        let copy = c.copy_new(s2, "C", CopyDir::H2D, COPY_BYTES, host);
        (c.spin(s1, "K", kernel_len), copy)
    };
    let blocks = Check::Blocks {
        call: copy,
        span: copy,
    };
    if staged_first {
        c.check(blocks);
        c.observe(Check::Overlaps { a: k, b: copy });
    } else {
        c.overlaps(k, copy);
        if host == Place::Pageable {
            c.observe(blocks);
        }
    }
    c.build(Expect::Holds)
}

/// An H2D and a D2H copy on two streams: separate copy engines run them together.
pub fn copy_engines_both_ways() -> Claim {
    let mut c = Claim::builder(
        "copy.engines.h2d_d2h_overlap",
        "An H2D copy and a D2H copy on two streams run at the same time",
        Source::new(S000, "7.2 memcpy和多流的比较"),
    );
    let (s1, s2) = (
        c.stream(StreamKind::NonBlocking),
        c.stream(StreamKind::NonBlocking),
    );
    let h = c.copy_new(s1, "H2D", CopyDir::H2D, COPY_BYTES, Place::Pinned);
    let d = c.copy_new(s2, "D2H", CopyDir::D2H, COPY_BYTES, Place::Pinned);
    c.overlaps(h, d);
    c.build(Expect::Holds)
}

/// Two H2D copies on two streams: one direction's copies serialize.
pub fn copy_engines_same_way() -> Claim {
    let mut c = Claim::builder(
        "copy.engines.two_h2d_serialize",
        "Two H2D copies on two streams do not run at the same time (\"memcpy在单位时间内只能启动\
         一个操作\": memcpy starts one operation at a time)",
        Source::new(S000, "7.2 memcpy和多流的比较"),
    );
    let (s1, s2) = (
        c.stream(StreamKind::NonBlocking),
        c.stream(StreamKind::NonBlocking),
    );
    let a = c.copy_new(s1, "H2D-1", CopyDir::H2D, COPY_BYTES, Place::Pinned);
    let b = c.copy_new(s2, "H2D-2", CopyDir::H2D, COPY_BYTES, Place::Pinned);
    c.check(Check::Serializes { a, b });
    c.build(Expect::Holds)
}

/// What `cuMemAlloc` (`cudaMalloc`) returns, asked of the driver: `place` is what the claim says
/// it is.
pub fn malloc_memory(claimed: Place) -> Claim {
    let (id, statement, expect) = match claimed {
        Place::Pinned => (
            "memory.malloc_is_page_locked",
            "cudaMalloc allocates page-locked (pinned) host memory",
            Expect::Violated,
        ),
        _ => (
            "memory.malloc_is_device",
            "cudaMalloc allocates device memory",
            Expect::Holds,
        ),
    };
    let mut c = Claim::builder(
        id,
        statement,
        Source::new(S000, "7.5 cudaMalloc和页锁定内存"),
    );
    let s = c.stream(StreamKind::NonBlocking);
    let host = c.buffer("host", Place::Pinned, 4 << 10, 1);
    let dev = c.buffer("cudaMalloc", Place::Device, 4 << 10, 0);
    c.copy(s, "C", host, dev);
    c.check(Check::MemoryIs {
        buffer: dev,
        place: claimed,
    });
    c.rationale(
        "The memory type is the driver's answer for the address (cuPointerGetAttribute, \
         CU_POINTER_ATTRIBUTE_MEMORY_TYPE); pinned host memory reports CU_MEMORYTYPE_HOST",
    );
    c.build(expect)
}

/// Elements of the buffers the racing writers write.
pub const RACE_ELEMENTS: u64 = 1 << 20;

/// Two writers on two streams into one buffer, the second after an event on the first or not.
pub fn racing_writers(with_event: bool) -> Claim {
    let mut c = Claim::builder(
        if with_event {
            "race.event_orders_writers"
        } else {
            "race.unsynchronized_writers"
        },
        if with_event {
            "Two streams writing one buffer, the second waiting on an event after the first: \
             the buffer holds the second writer's values"
        } else {
            "Two streams writing one buffer without synchronization leave the second writer's \
             values (it is issued last)"
        },
        Source::new(S001, "注意事项 2. 同一个设备指针并行访问要避免写冲突"),
    );
    let (s1, s2) = (
        c.stream(StreamKind::NonBlocking),
        c.stream(StreamKind::NonBlocking),
    );
    let bytes = RACE_ELEMENTS * 4;
    let zero = c.buffer("zero", Place::Device, bytes, 0);
    let one = c.buffer("one", Place::Device, bytes, 1);
    let two = c.buffer("two", Place::Device, bytes, 2);
    let out = c.buffer("out", Place::Device, bytes, 0);
    c.read_back(out);
    // W1 has few threads and W2 many: without an order, W2 finishes while W1 still writes.
    let w1 = c.add(s1, "W1", (one, zero), out, 16, 64);
    if with_event {
        let e = c.event("E");
        c.record(s1, e);
        c.wait(s2, e);
    }
    let w2 = c.add(s2, "W2", (two, zero), out, 16, 1024);
    c.check(Check::Contents {
        buffer: out,
        value: 2,
    });
    if with_event {
        c.precedes(w1, w2);
    } else {
        c.observe(Check::Overlaps { a: w1, b: w2 });
    }
    c.build(if with_event {
        Expect::Holds
    } else {
        Expect::Violated
    })
}
