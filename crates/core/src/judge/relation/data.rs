//! Checks about copies and data: serialization, speed-ups, buffer contents, memory types.
//!
//! A copy's interval comes from the witness (CUPTI or events, see `crate::measured::witness`), with the
//! witness's alignment error as its slack; [`serializes`] widens the timer step by it just as
//! [`super::overlaps`] does.

use super::{micros, overlaps, signed, unknown, Check, Measurement, Say, Truth};
use crate::measured::calibration::Tolerances;
use crate::measured::contents::MemoryKind;
use crate::measured::timeline::Timeline;
use crate::program::{BufferId, OpId, Place};

/// Serializes: Overlaps with the answer turned around. An overlap of a timer step plus the
/// alignment error refutes it; no overlap while the later op was ready proves waiting.
pub(super) fn serializes(
    check: Check,
    waits: &super::HostWaits,
    timeline: &Timeline,
    a: OpId,
    b: OpId,
    tol: &Tolerances,
    say: Say,
) -> Measurement {
    let (Some(ia), Some(ib)) = (waits.interval(timeline, a), waits.interval(timeline, b)) else {
        return unknown(
            check,
            "an op has no span on this timeline (no stamps, no witness)".into(),
        );
    };
    let m = overlaps(check, waits, timeline, ia, ib, tol, say);
    Measurement {
        truth: match m.truth {
            Truth::Yes => Truth::No,
            Truth::No => Truth::Yes,
            Truth::Unknown => Truth::Unknown,
        },
        ..m
    }
}

/// From the earliest start to the latest end of ops `first..=last` that have intervals, with the
/// largest slack among them.
fn phase(timeline: &Timeline, (first, last): (OpId, OpId)) -> Option<(i64, i64, i64)> {
    let intervals: Vec<_> = (first.0..=last.0)
        .filter_map(|i| timeline.interval(OpId(i)))
        .collect();
    Some((
        intervals.iter().map(|i| i.start).min()?,
        intervals.iter().map(|i| i.end).max()?,
        intervals.iter().map(|i| signed(i.slack_ns)).max()?,
    ))
}

/// The two sides of a [`Check::Faster`] on one timeline: how long each phase took, and the
/// tolerance of their comparison (a timer step plus both phases' alignment errors), in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sides {
    pub slow_ns: i64,
    pub fast_ns: i64,
    pub slack_ns: i64,
}

/// [`Sides`] of the phases `slow` and `fast`, when both have spans on the timeline.
pub fn sides(
    timeline: &Timeline,
    slow: (OpId, OpId),
    fast: (OpId, OpId),
    tol: &Tolerances,
) -> Option<Sides> {
    let (s, f) = (phase(timeline, slow)?, phase(timeline, fast)?);
    // Saturating: stamps and alignment errors may come from a results file anyone can edit.
    Some(Sides {
        slow_ns: s.1.saturating_sub(s.0),
        fast_ns: f.1.saturating_sub(f.0),
        slack_ns: signed(tol.timer_step_ns)
            .saturating_add(s.2.saturating_add(f.2).saturating_mul(2)),
    })
}

/// Faster: the phase `fast` took less time than the phase `slow`, by more than a timer step plus
/// both phases' alignment errors. The value is the time saved; the reason gives the speed-up.
pub(super) fn faster(
    check: Check,
    timeline: &Timeline,
    slow: (OpId, OpId),
    fast: (OpId, OpId),
    tol: &Tolerances,
) -> Measurement {
    let Some(Sides {
        slow_ns: ds,
        fast_ns: df,
        slack_ns: slack,
    }) = sides(timeline, slow, fast, tol)
    else {
        return unknown(check, "a phase has no spans on this timeline".into());
    };
    let saved = ds.saturating_sub(df);
    let truth = if saved > slack {
        Truth::Yes
    } else if saved < -slack {
        Truth::No
    } else {
        Truth::Unknown
    };
    Measurement {
        check,
        value_ns: saved,
        truth,
        reason: format!(
            "{:.2}× ({} → {}); tolerance a timer step plus the alignment errors, {}",
            ds as f64 / df.max(1) as f64,
            millis(ds),
            millis(df),
            micros(slack)
        ),
    }
}

fn millis(ns: i64) -> String {
    if ns.abs() >= 1_000_000 {
        format!("{:.3} ms", ns as f64 / 1e6)
    } else {
        format!("{:.1} µs", ns as f64 / 1e3)
    }
}

/// Contents: every element of the buffer read back equals `value`. The value is the number of
/// elements that differ.
pub(super) fn contents(
    check: Check,
    timeline: &Timeline,
    buffer: BufferId,
    value: i32,
) -> Measurement {
    let Some(c) = timeline.contents_of(buffer).filter(|c| c.elements > 0) else {
        return unknown(check, format!("buffer b{} was not read back", buffer.0));
    };
    let differing = c.differing(i64::from(value));
    Measurement {
        check,
        value_ns: differing as i64,
        truth: if differing == 0 {
            Truth::Yes
        } else {
            Truth::No
        },
        reason: format!(
            "{differing} of {} elements differ from {value}: {}",
            c.elements,
            c.describe()
        ),
    }
}

/// MemoryIs: the driver's memory type for the buffer's address is what `place` would be.
pub(super) fn memory_is(
    check: Check,
    timeline: &Timeline,
    buffer: BufferId,
    place: Place,
) -> Measurement {
    let Some(c) = timeline.contents_of(buffer) else {
        return unknown(
            check,
            format!("no memory type recorded for buffer b{}", buffer.0),
        );
    };
    let expected = match place {
        Place::Device => MemoryKind::Device,
        Place::Pinned => MemoryKind::Host,
        Place::Pageable => MemoryKind::Unregistered,
    };
    Measurement {
        check,
        value_ns: c.memory.code(),
        truth: if c.memory == expected {
            Truth::Yes
        } else {
            Truth::No
        },
        reason: format!("the driver reports {} (cuPointerGetAttribute)", c.memory),
    }
}
