//! Relations between two spans, judged with named tolerances.
//!
//! A claim states its expectation as [`Check`]s: `A` precedes `B`, `A` overlaps `B`. On one
//! trial's timeline each check yields a [`Measurement`]: the signed quantity measured (a gap or
//! an overlap, in ns) and a three-valued [`Truth`]. `Unknown` is not a failure: it means the
//! timeline cannot decide, and the reason says which tolerance was in the way.
//!
//! The stamps alone decide what they can prove outright: an overlap of at least one timer step
//! means two spans ran together, and so refutes an order. Everything else also needs to know
//! whether the later op *could* have started sooner: an order observed between two ops proves a
//! dependency only if the later op was issued early enough to have started before the earlier
//! one ended, had nothing held it back; the same condition makes a missing overlap a proof of
//! waiting. "Early enough" is the op's ready time ([`Timeline::ready_ns`]) plus the measured
//! launch jitter (see [`crate::Calibration`]).

use crate::calibration::Tolerances;
use crate::program::{OpId, Program};
use crate::timeline::{Span, Timeline};
use serde::{Deserialize, Serialize};
use std::fmt;

/// An expected relation between two ops, as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "relation", rename_all = "snake_case")]
pub enum Check {
    /// `after` starts no earlier than `before` ends.
    Precedes { before: OpId, after: OpId },
    /// The two spans run at the same time for at least one timer step.
    Overlaps { a: OpId, b: OpId },
}

impl Check {
    /// The two ops the check relates.
    pub fn ops(&self) -> (OpId, OpId) {
        match *self {
            Check::Precedes { before, after } => (before, after),
            Check::Overlaps { a, b } => (a, b),
        }
    }

    /// "A→B" or "A∥B", with the program's labels.
    pub fn describe(&self, program: &Program) -> String {
        match *self {
            Check::Precedes { before, after } => {
                format!("{}→{}", program.label(before), program.label(after))
            }
            Check::Overlaps { a, b } => format!("{}∥{}", program.label(a), program.label(b)),
        }
    }

    /// Judges the check on one timeline.
    pub fn measure(&self, timeline: &Timeline, tol: &Tolerances) -> Measurement {
        let (x, y) = self.ops();
        let (Some(sx), Some(sy)) = (timeline.span(x), timeline.span(y)) else {
            let missing = if timeline.span(x).is_none() { x } else { y };
            return Measurement {
                check: *self,
                value_ns: 0,
                truth: Truth::Unknown,
                reason: format!("op {} has no stamps on this timeline", missing.0),
            };
        };
        match *self {
            Check::Precedes { .. } => precedes(*self, timeline, sx, sy, tol),
            Check::Overlaps { .. } => overlaps(*self, timeline, sx, sy, tol),
        }
    }
}

/// Three-valued truth of one check on one trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Truth {
    Yes,
    No,
    Unknown,
}

impl Truth {
    /// Conjunction: any `No` wins, then any `Unknown`.
    pub fn all(truths: impl IntoIterator<Item = Truth>) -> Truth {
        let mut out = Truth::Yes;
        for t in truths {
            match t {
                Truth::No => return Truth::No,
                Truth::Unknown => out = Truth::Unknown,
                Truth::Yes => {}
            }
        }
        out
    }
}

/// A check measured on one timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measurement {
    pub check: Check,
    /// For `Precedes`: the gap `after.start - before.end` (negative: they overlapped).
    /// For `Overlaps`: the overlap `min(ends) - max(starts)` (negative: a gap between them).
    pub value_ns: i64,
    pub truth: Truth,
    /// Why the truth is what it is, with the tolerance that decided it.
    pub reason: String,
}

impl Measurement {
    /// "A→B gap +1.18 µs" / "A∥B overlap 38.20 µs".
    pub fn describe(&self, program: &Program) -> String {
        let what = match self.check {
            Check::Precedes { .. } => "gap",
            Check::Overlaps { .. } => "overlap",
        };
        format!(
            "{} {what} {}",
            self.check.describe(program),
            micros(self.value_ns)
        )
    }
}

impl fmt::Display for Truth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Truth::Yes => "yes",
            Truth::No => "no",
            Truth::Unknown => "unknown",
        })
    }
}

/// Signed nanoseconds as "+1.18 µs".
pub fn micros(ns: i64) -> String {
    format!("{:+.2} µs", ns as f64 / 1e3)
}

fn signed(ns: u64) -> i64 {
    i64::try_from(ns).unwrap_or(i64::MAX)
}

/// Trial-relative µs of a `%globaltimer` instant, for reasons.
fn at(t: i64, timeline: &Timeline) -> String {
    format!("{:.2} µs", (t - signed(timeline.origin_ns())) as f64 / 1e3)
}

/// When `op` would have started at the latest had it depended on nothing: ready plus jitter.
fn latest_free_start(timeline: &Timeline, op: OpId, tol: &Tolerances) -> Option<i64> {
    Some(timeline.ready_ns(op)? + signed(tol.launch_jitter_ns))
}

fn precedes(
    check: Check,
    timeline: &Timeline,
    before: &Span,
    after: &Span,
    tol: &Tolerances,
) -> Measurement {
    let gap = signed(after.start()) - signed(before.end());
    let step = signed(tol.timer_step_ns);
    let end = signed(before.end());
    let (truth, reason) = if gap <= -step {
        (
            Truth::No,
            format!(
                "started {} before the end: an overlap of at least one timer step ({step} ns) \
                 cannot come from rounding",
                micros(-gap)
            ),
        )
    } else {
        match latest_free_start(timeline, after.op, tol) {
            Some(free) if free < end => (
                Truth::Yes,
                format!(
                    "was ready to start by {} (issued, plus {} launch jitter) yet started at {}, \
                     after the end at {}: it waited",
                    at(free, timeline),
                    micros(signed(tol.launch_jitter_ns)),
                    at(signed(after.start()), timeline),
                    at(end, timeline)
                ),
            ),
            Some(free) => (
                Truth::Unknown,
                format!(
                    "came after the end ({} gap), but was issued too late to have started \
                     sooner (ready by {}, with {} launch jitter, vs the end at {}): the order \
                     proves nothing; lengthen the spins",
                    micros(gap),
                    at(free, timeline),
                    micros(signed(tol.launch_jitter_ns)),
                    at(end, timeline)
                ),
            ),
            None => (
                Truth::Unknown,
                "no host issue times to judge the order by".into(),
            ),
        }
    };
    Measurement {
        check,
        value_ns: gap,
        truth,
        reason,
    }
}

fn overlaps(
    check: Check,
    timeline: &Timeline,
    a: &Span,
    b: &Span,
    tol: &Tolerances,
) -> Measurement {
    let overlap = signed(a.end().min(b.end())) - signed(a.start().max(b.start()));
    let step = signed(tol.timer_step_ns);
    let (first, later) = if a.start() <= b.start() {
        (a, b)
    } else {
        (b, a)
    };
    let end = signed(first.end());
    let (truth, reason) = if overlap >= step {
        (
            Truth::Yes,
            format!(
                "ran together for {}, at least one timer step ({step} ns)",
                micros(overlap)
            ),
        )
    } else {
        match latest_free_start(timeline, later.op, tol) {
            Some(free) if free < end => (
                Truth::No,
                format!(
                    "the later one was ready to start by {} (issued, plus {} launch jitter) \
                     while the other ran until {}, yet started only at {}: it waited",
                    at(free, timeline),
                    micros(signed(tol.launch_jitter_ns)),
                    at(end, timeline),
                    at(signed(later.start()), timeline)
                ),
            ),
            Some(free) => (
                Truth::Unknown,
                format!(
                    "no overlap, but the later one was issued too late to overlap (ready by {}, \
                     with {} launch jitter, vs the other's end at {}): too short to tell waiting \
                     from late issue; lengthen the spins",
                    at(free, timeline),
                    micros(signed(tol.launch_jitter_ns)),
                    at(end, timeline)
                ),
            ),
            None => (
                Truth::Unknown,
                "no host issue times to judge the overlap by".into(),
            ),
        }
    };
    Measurement {
        check,
        value_ns: overlap,
        truth,
        reason,
    }
}
