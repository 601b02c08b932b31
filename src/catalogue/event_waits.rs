//! Events: an event wait orders two streams, and only up to the record it captured.

use super::seeds::{S000, S001};
use crate::judge::claim::{Claim, ClaimBuilder, Source};
use crate::judge::verdict::Expect;
use crate::program::{OpId, StreamKind};
use std::time::Duration;

/// A on s1, record E on s1, C on s1 after the record, s2 waits on E, B on s2.
fn record_then_wait(c: &mut ClaimBuilder, spin: Duration) -> (OpId, OpId, OpId) {
    let s1 = c.stream(StreamKind::NonBlocking);
    let s2 = c.stream(StreamKind::NonBlocking);
    let e = c.event("E");
    let a = c.spin(s1, "A", spin);
    c.record(s1, e);
    let after = c.spin(s1, "C", spin);
    c.wait(s2, e);
    let b = c.spin(s2, "B", spin);
    (a, after, b)
}

/// s2 waits on an event recorded after A on s1: B on s2 starts after A ends.
pub fn event_wait_orders(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "event.wait_orders",
        "A stream that waits on an event recorded after A in another stream starts its next \
         kernel B only after A ends (\"cudaStreamWaitEvent(stream2, event, 0)\")",
        Source::new(S000, "7.6 两个比较直观的例子"),
    );
    let (a, _, b) = record_then_wait(&mut c, spin);
    c.precedes(a, b);
    c.build(Expect::Holds)
}

/// Work issued on s1 after the record is not waited for: B overlaps it.
pub fn event_wait_snapshot(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "event.wait_snapshot",
        "An event wait covers only the work recorded before the event: kernel C, issued on s1 \
         after the record, is not waited for, and B overlaps it",
        Source::new(S000, "7.6 两个比较直观的例子"),
    );
    let (_, after, b) = record_then_wait(&mut c, spin);
    c.overlaps(b, after);
    c.build(Expect::Holds)
}

/// A wait uses the most recent record at the time it is issued; re-recording afterwards does not
/// change what it waited for.
pub fn event_rerecord(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "event.rerecord",
        "A wait uses the record most recent when the wait is issued: re-recording the event after \
         the wait does not make the waiting stream wait for the later work",
        Source::new(
            "CUDA Driver API, cuStreamWaitEvent",
            "\"uses the most recent call to cuEventRecord() on hEvent\"",
        ),
    );
    let s1 = c.stream(StreamKind::NonBlocking);
    let s2 = c.stream(StreamKind::NonBlocking);
    let e = c.event("E");
    let a = c.spin(s1, "A", spin);
    c.record(s1, e);
    c.wait(s2, e);
    let later = c.spin(s1, "C", spin);
    c.record(s1, e);
    let b = c.spin(s2, "B", spin);
    c.precedes(a, b).overlaps(b, later);
    c.build(Expect::Holds)
}

/// Seed 000's example: kernel2 waits for kernel1's event while a third stream keeps running.
pub fn event_third_stream(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "event.third_stream_keeps_running",
        "kernel2 waits for kernel1 through an event while independent work on a third stream runs \
         beside both (\"kernel2需要kernel1的输出作为输入\")",
        Source::new(S000, "7.6 两个比较直观的例子"),
    );
    let s1 = c.stream(StreamKind::NonBlocking);
    let s2 = c.stream(StreamKind::NonBlocking);
    let s3 = c.stream(StreamKind::NonBlocking);
    let e = c.event("event");
    let k1 = c.spin(s1, "kernel1", spin);
    c.record(s1, e);
    c.wait(s2, e);
    let k2 = c.spin(s2, "kernel2", spin);
    let k3 = c.spin(s3, "kernel3", spin * 3);
    c.precedes(k1, k2).overlaps(k3, k1).overlaps(k3, k2);
    c.build(Expect::Holds)
}

/// Events around a kernel measure its time (seed 001: "测量 Kernel 耗时").
pub fn event_elapsed_time(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "event.elapsed_time",
        "Events recorded before and after a kernel measure its execution time \
         (\"在 Kernel 前后放置事件，精确统计执行时间\"); the difference to the stamped time is \
         what events include that stamps do not",
        Source::new(S001, "事件（Events）"),
    );
    let s = c.stream(StreamKind::NonBlocking);
    let start = c.event("start");
    let stop = c.event("stop");
    c.record(s, start);
    let k = c.spin(s, "kernel", spin);
    c.record(s, stop);
    let read = c.elapsed(start, stop);
    c.elapsed_covers(read, k);
    c.build(Expect::Holds)
}
