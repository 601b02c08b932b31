//! Events: an event wait orders two streams, and only up to the record it captured.

use super::seeds::S000;
use crate::claim::{Claim, ClaimBuilder, Source};
use crate::program::{OpId, StreamKind};
use crate::verdict::Expect;
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
