//! Orders made by the host (docs/design.md, decision 13).
//!
//! When the later op of a pair was issued after a host call that waits for the earlier one (a
//! stream, event or device sync, or an elapsed-time read, covering the earlier op by the
//! documented [model](crate::model)), the host made the order: the later op could not even be
//! issued before the call returned. The call shows that it waited when it was called before the
//! earlier op ended and returned no sooner than that end, both placed on the `%globaltimer` axis
//! with the trial's clock sync; its error bound plus a timer step (plus the earlier op's own slack)
//! is the tolerance. This module finds such a call, or the reason there is none, and words it.

use super::host_checks::{place, tolerance, Placed};
use super::host_waits::{HostOp, HostWaits};
use crate::measured::calibration::Tolerances;
use crate::measured::timeline::{Interval, Timeline};
use crate::program::OpId;

/// How the host issued `after` with respect to `before`'s end.
pub(super) enum HostOrder<'a> {
    /// A call that waits for `before` was called before its end and returned no sooner: the host
    /// made the order.
    Made(&'a HostOp, Placed),
    /// A blocking call that does not wait for `before` held the host across its end.
    Unrelated(&'a HostOp, Placed),
    /// Blocking calls came between, but the trial has no clock sync to place them.
    NoClock { call: &'a HostOp, covers: bool },
    /// The last call that waits for `before` was called only after (or within the tolerance of)
    /// its end: the host had nothing left to wait for.
    CameLate(&'a HostOp, Placed),
    /// The last call that waits for `before` returned before its end.
    ReturnedBefore(&'a HostOp, Placed),
    /// No blocking call between them: the host issued `after` at its own pace.
    None,
    /// Measured without the program: the calls between them are unknown.
    Unknown,
}

/// Finds the host call that ordered `after` behind `before`, or why none did.
pub(super) fn host_order<'a>(
    waits: &'a HostWaits,
    timeline: &Timeline,
    before: &Interval,
    after: OpId,
    tol: &Tolerances,
) -> HostOrder<'a> {
    if !waits.known {
        return HostOrder::Unknown;
    }
    let calls = waits.between(before.op, after);
    let Some(&(_, last, last_covers)) = calls.last() else {
        return HostOrder::None;
    };
    let mut placed = Vec::new();
    for (h, op, covers) in calls {
        match place(timeline, h, tol) {
            Ok(mut p) => {
                p.slack += super::signed(before.slack_ns);
                placed.push((op, covers, p));
            }
            Err(_) => {
                let covering = waits.between(before.op, after).into_iter().find(|c| c.2);
                let (call, covers) = covering.map_or((last, last_covers), |c| (c.1, true));
                return HostOrder::NoClock { call, covers };
            }
        }
    }
    let end = before.end;
    let across = |p: &Placed| p.begin < end - p.slack && p.end >= end - p.slack;
    if let Some((op, _, p)) = placed.iter().find(|(_, c, p)| *c && across(p)) {
        return HostOrder::Made(op, *p);
    }
    if let Some((op, _, p)) = placed.iter().find(|(_, _, p)| across(p)) {
        return HostOrder::Unrelated(op, *p);
    }
    match placed.iter().rev().find(|(_, c, _)| *c) {
        Some((op, _, p)) if p.begin >= end - p.slack => HostOrder::CameLate(op, *p),
        Some((op, _, p)) => HostOrder::ReturnedBefore(op, *p),
        None => HostOrder::None,
    }
}

/// "+2.80 µs after A ended", "+0.40 µs before A ended".
fn when(d: i64, what: &str) -> String {
    format!("{} {what} ended", super::host_checks::before_or_after(d))
}

/// Why a later op that came too late tells nothing about `before` → `after`, and what would
/// decide it, for Precedes (and, with `overlap`, for Overlaps and dispatch order). A table: one
/// message per way the host ordered them, the long ones worded by [`Words`].
pub(super) fn cause(
    order: &HostOrder<'_>,
    waits: &HostWaits,
    timeline: &Timeline,
    before: &Interval,
    after: OpId,
    overlap: bool,
) -> String {
    let w = Words {
        a: waits.label(before.op),
        b: waits.label(after),
        end: before.end,
        trace: timeline.one_clock(),
    };
    let (a, b, end) = (&w.a, &w.b, w.end);
    match order {
        HostOrder::Made(call, p)
        | HostOrder::CameLate(call, p)
        | HostOrder::ReturnedBefore(call, p)
            if overlap =>
        {
            format!(
                "{b} is issued after {}, which waits for {a} (it returned {}): the host orders \
                 them, so this program cannot show them overlapping",
                call.call,
                when(p.end - end, a)
            )
        }
        HostOrder::NoClock { call, covers: true } if overlap => format!(
            "{b} is issued after {}, which waits for {a}: the host orders them, so this program \
             cannot show them overlapping",
            call.call
        ),
        HostOrder::Made(call, p) => format!(
            "ordered through the host: {} waits for {a} and returned {}; {b} was issued only then; \
             {}",
            call.call,
            when(p.end - end, a),
            tolerance(p.slack)
        ),
        HostOrder::Unrelated(call, p) => w.unrelated(call, p),
        HostOrder::NoClock { call, covers } => format!(
            "{b} was issued after {}{}, but this trial has no clock sync to place the call against \
             {a}'s end: it cannot tell whether the host waited for {a} (programs with host waits \
             are recorded with one; record it again)",
            call.call,
            if *covers {
                format!(", which waits for {a}")
            } else {
                String::new()
            }
        ),
        HostOrder::CameLate(call, p) => w.came_late(call, p),
        HostOrder::ReturnedBefore(call, p) => w.returned_before(call, p),
        HostOrder::Unknown => "measured without the program, so the host calls issued between \
             them are unknown: judged with it (`Check::measure_in`, as every verdict is), a host \
             wait for the earlier op would decide the order; else lengthen the spins"
            .to_string(),
        HostOrder::None => w.no_host_wait(overlap),
    }
}

/// What the messages of [`cause`] name: the earlier op `a`, the later op `b`, `a`'s end, and
/// whether the trial is a trace's (one clock).
struct Words {
    a: String,
    b: String,
    end: i64,
    trace: bool,
}

impl Words {
    /// Advice that fits what was judged: the lab's own spins can be lengthened; a trace of
    /// someone's program cannot, and only another recording decides.
    fn advise(&self, lab: String, trace: String) -> String {
        match self.trace {
            false => lab,
            true => trace,
        }
    }

    fn unrelated(&self, call: &HostOp, p: &Placed) -> String {
        let (a, b) = (&self.a, &self.b);
        format!(
            "{b} was issued only after {}, which held the host from before {a} ended until {}, \
             yet {}: the order may be the call's own length; {}; {}",
            call.call,
            when(p.end - self.end, a),
            if call.documented_wait() {
                format!("waits for other work, not for {a}")
            } else {
                format!("no document says it waits for {a}")
            },
            if call.documented_wait() {
                self.advise(
                    format!("lengthen {a} so that it outlasts the call"),
                    format!("a recording in which {a} outlasts the call would decide it"),
                )
            } else {
                "ReturnsAfter and Separates measure what the call waited for".to_string()
            },
            tolerance(p.slack)
        )
    }

    fn came_late(&self, call: &HostOp, p: &Placed) -> String {
        let (a, b) = (&self.a, &self.b);
        format!(
            "{b} was issued after {}, which waits for {a} but was called only {}: {}; {}; {}",
            call.call,
            when(p.begin - self.end, a),
            if p.begin >= self.end {
                "the host had nothing left to wait for"
            } else {
                "too close to the end to tell whether the host waited"
            },
            self.advise(
                format!("lengthen {a} so that the call waits for it"),
                format!(
                    "a recording in which {a} still runs when the call is made would decide it"
                ),
            ),
            tolerance(p.slack)
        )
    }

    fn returned_before(&self, call: &HostOp, p: &Placed) -> String {
        let (a, b) = (&self.a, &self.b);
        format!(
            "{}, which waits for {a}, returned {} (a ReturnsAfter check would show it did not \
             wait), so {b} was issued while {a} ran, but too late at the host's own pace (launch \
             latency); {}; {}",
            call.call,
            when(p.end - self.end, a),
            self.advise(
                format!("lengthen {a}"),
                format!("a recording in which {a} runs longer would decide it"),
            ),
            tolerance(p.slack)
        )
    }

    fn no_host_wait(&self, overlap: bool) -> String {
        let (a, b) = (&self.a, &self.b);
        format!(
            "{}, too late to {}; {}",
            match self.trace {
                // A trace's calls are not tied to the ops they wait for: a sync may have come
                // between (the cause, where the trace shows one, follows the reason).
                true => format!(
                    "the trace ties no host wait to {a}: the host issued {b} late (launch \
                     latency, the calls in between)"
                ),
                false => format!(
                    "no host wait came between them: the host issued {b} at its own pace \
                     (launch latency, the calls in between)"
                ),
            },
            if overlap {
                "tell waiting from late issue"
            } else {
                "prove anything"
            },
            self.advise(
                format!("lengthen the spins so that {a} outlasts the issue"),
                format!("a recording in which {a} outlasts {b}'s issue would decide it"),
            )
        )
    }
}
