//! Checks about the host: when a call returned, what a query answered, whether a blocking call
//! kept two kernels apart, what a stream-ordered allocation reused, what a graph launch saved.
//!
//! A host instant is placed on the `%globaltimer` axis with the trial's clock sync; its error
//! bound plus one timer step (plus the witness's alignment error when the span is a witnessed
//! copy) is the tolerance (`slack` below) of every comparison with a span.
//! Without a clock sync these checks cannot be decided.

use super::host_waits::HostWaits;
use super::{at, latest_free_start, micros, signed, unknown, Check, Measurement, Truth};
use crate::measured::calibration::Tolerances;
use crate::measured::timeline::{HostCall, Interval, Timeline};
use crate::program::OpId;

/// The host call of `op` placed on the GPU axis, with the comparison tolerance.
#[derive(Debug, Clone, Copy)]
pub(super) struct Placed {
    pub begin: i64,
    pub end: i64,
    pub slack: i64,
}

/// Why a host call could not be placed on the GPU axis: the measurement is then unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(super) enum Unplaced {
    #[error(
        "no clock sync on this timeline, so host times cannot be set against stamps: programs \
         with host calls are recorded with one, so record it again"
    )]
    NoClock,
    #[error("op {} has no host call on this timeline", .0 .0)]
    NoHostCall(OpId),
}

pub(super) fn place(timeline: &Timeline, op: OpId, tol: &Tolerances) -> Result<Placed, Unplaced> {
    let clock = timeline.clock.ok_or(Unplaced::NoClock)?;
    let HostCall {
        begin_ns, end_ns, ..
    } = *timeline.host_call(op).ok_or(Unplaced::NoHostCall(op))?;
    Ok(Placed {
        begin: clock.to_gpu(begin_ns),
        end: clock.to_gpu(end_ns),
        slack: signed(clock.error_ns + tol.timer_step_ns),
    })
}

/// The host call of `call` and the interval of `span`, both on the GPU axis; the placed call's
/// slack also takes the span's own (a witnessed copy's alignment error). Unknown without either.
fn call_and_span(
    check: Check,
    waits: &HostWaits,
    timeline: &Timeline,
    call: OpId,
    span: OpId,
    tol: &Tolerances,
) -> Result<(Placed, Interval), Measurement> {
    match (place(timeline, call, tol), waits.interval(timeline, span)) {
        (Ok(mut p), Some(s)) => {
            p.slack += signed(s.slack_ns);
            Ok((p, s))
        }
        (Err(why), _) => Err(unknown(check, why.to_string())),
        (_, None) => Err(unknown(check, format!("op {} has no span", span.0))),
    }
}

/// "+2.50 µs after" for a positive difference, "+3.00 µs before" for a negative one.
pub(super) fn before_or_after(d: i64) -> String {
    if d >= 0 {
        format!("{} after", micros(d))
    } else {
        format!("{} before", micros(-d))
    }
}

pub(super) fn tolerance(slack: i64) -> String {
    format!(
        "alignment error (host clock, and witness for copies) plus a timer step: ±{:.2} µs",
        slack as f64 / 1e3
    )
}

/// ReturnsBefore / ReturnsAfter. The value is how far the call's return lies before (resp.
/// after) the span's end. Either way the margin must exceed the tolerance: a return within it of
/// the end is neither shown before nor after it (on a trace whose alignment error is ±25 µs, a
/// pageable copy's call "returned before the end by +1..+5 µs" once counted as returning after).
pub(super) fn returns(
    check: Check,
    waits: &HostWaits,
    timeline: &Timeline,
    call: OpId,
    span: OpId,
    tol: &Tolerances,
) -> Measurement {
    let (p, end) = match call_and_span(check, waits, timeline, call, span, tol) {
        Ok((p, s)) => (p, s.end),
        Err(unknown) => return unknown,
    };
    let after = p.end - end;
    let (value, truth) = match check {
        Check::ReturnsBefore { .. } => (
            -after,
            if -after > p.slack {
                Truth::Yes
            } else if after > p.slack {
                Truth::No
            } else {
                Truth::Unknown
            },
        ),
        _ => (
            after,
            if after > p.slack {
                Truth::Yes
            } else if -after > p.slack {
                Truth::No
            } else {
                Truth::Unknown
            },
        ),
    };
    let reason = format!(
        "the call took {} on the host and returned at {}, {} the work's end at {}; {}",
        micros(p.end - p.begin),
        at(p.end, timeline),
        before_or_after(after),
        at(end, timeline),
        tolerance(p.slack)
    );
    Measurement {
        check,
        value_ns: value,
        truth,
        reason,
    }
}

/// Answers: a "ready" answer is refuted if the query returned before the work's end; a "not
/// ready" answer is refuted if the query was issued after it. The value is how long after the
/// end the query was issued (negative: while the work ran).
pub(super) fn answers(
    check: Check,
    waits: &HostWaits,
    timeline: &Timeline,
    query: OpId,
    span: OpId,
    tol: &Tolerances,
) -> Measurement {
    // The work may be a kernel, a host function or a graph launch (its nodes' span).
    let (p, end, ready) = match (
        place(timeline, query, tol),
        waits.interval(timeline, span),
        timeline.reading(query),
    ) {
        (Ok(mut p), Some(s), Some(r)) => {
            p.slack += signed(s.slack_ns);
            (p, s.end, r == 1)
        }
        (Err(why), _, _) => return unknown(check, why.to_string()),
        _ => {
            return unknown(
                check,
                "no stamps for the work or no answer from the query".into(),
            )
        }
    };
    let asked = p.begin - end;
    let truth = match ready {
        true if p.end < end - p.slack => Truth::No,
        false if p.begin > end + p.slack => Truth::No,
        _ => Truth::Yes,
    };
    let reason = format!(
        "answered {} when asked at {} ({} the work's end at {}); {}",
        if ready { "ready" } else { "not ready" },
        at(p.begin, timeline),
        before_or_after(asked),
        at(end, timeline),
        tolerance(p.slack)
    );
    Measurement {
        check,
        value_ns: asked,
        truth,
        reason,
    }
}

/// Separates: an overlap of a timer step refutes it. Without one, the separation is proven
/// either on the device (`after` was ready before `before` ended, as in Precedes) or on the host
/// (the call began before `before` ended and returned only after it, so `after` could not be
/// issued sooner). Otherwise `after` merely came late, and nothing is proven.
pub(super) fn separates(
    check: Check,
    waits: &HostWaits,
    timeline: &Timeline,
    call: OpId,
    before: Interval,
    after: Interval,
    tol: &Tolerances,
) -> Measurement {
    let overlap = before.end.min(after.end) - before.start.max(after.start);
    let step = signed(tol.timer_step_ns);
    let measured = |truth, reason| Measurement {
        check,
        value_ns: overlap,
        truth,
        reason,
    };
    if overlap >= step {
        return measured(
            Truth::No,
            format!("the two kernels ran together for {}", micros(overlap)),
        );
    }
    if let Some(free) = latest_free_start(waits, timeline, after.op, tol) {
        if free < before.end {
            return measured(
                Truth::Yes,
                format!(
                    "the later kernel was ready by {} yet started at {}, after the first ended at \
                     {}: it waited on the device",
                    at(free, timeline),
                    at(after.start, timeline),
                    at(before.end, timeline)
                ),
            );
        }
    }
    let p = match place(timeline, call, tol) {
        Ok(p) => p,
        Err(why) => return unknown(check, why.to_string()),
    };
    if p.begin < before.end - p.slack && p.end >= before.end - p.slack {
        measured(
            Truth::Yes,
            format!(
                "the call blocked the host for {} and returned at {}, {} after the first kernel \
                 ended at {}; the later kernel could only be issued then; {}",
                micros(p.end - p.begin),
                at(p.end, timeline),
                micros(p.end - before.end),
                at(before.end, timeline),
                tolerance(p.slack)
            ),
        )
    } else {
        unknown(
            check,
            format!(
                "no overlap, but the later kernel was issued late for another reason than the \
                 call (which ran {} to {}, the first kernel ended at {}); lengthen the first \
                 kernel",
                at(p.begin, timeline),
                at(p.end, timeline),
                at(before.end, timeline)
            ),
        )
    }
}

/// Reuses: the two allocations returned the same address.
pub(super) fn reuses(check: Check, timeline: &Timeline, first: OpId, second: OpId) -> Measurement {
    let (Some(a), Some(b)) = (timeline.reading(first), timeline.reading(second)) else {
        return unknown(check, "an allocation returned no address".into());
    };
    let (truth, verb) = if a == b {
        (Truth::Yes, "the same address")
    } else {
        (Truth::No, "different addresses")
    };
    Measurement {
        check,
        value_ns: b.wrapping_sub(a),
        truth,
        reason: format!("{verb}: {a:#x} and {b:#x}"),
    }
}

/// LaunchCheaper: the graph launch's host call against the sum of the direct issues' calls.
pub(super) fn launch_cheaper(
    check: Check,
    timeline: &Timeline,
    graph: OpId,
    first: OpId,
    last: OpId,
) -> Measurement {
    let duration = |c: &HostCall| signed(c.end_ns - c.begin_ns);
    let Some(launch) = timeline.host_call(graph).map(duration) else {
        return unknown(check, "the graph launch has no host call".into());
    };
    let direct: i64 = timeline
        .host_calls_of(first, last)
        .iter()
        .map(duration)
        .sum();
    let n = last.0 + 1 - first.0;
    let truth = if launch < direct {
        Truth::Yes
    } else {
        Truth::No
    };
    Measurement {
        check,
        value_ns: direct - launch,
        truth,
        reason: format!(
            "{n} launches one by one took {} of host time, one graph launch {}: {:.1}× less",
            micros(direct),
            micros(launch),
            direct as f64 / launch.max(1) as f64
        ),
    }
}

/// Blocks: the share of `span` during which the call held the host. Half is the line between the
/// two behaviours it tells apart: an asynchronous call returns at the start (about 0 %), a
/// staging call when the data has moved (about 100 %). The held time is measured between two host
/// instants and two span ends, each placed within the slack, so it is known within twice the
/// slack: a share that the slack could carry across the line is undecided. The value is how long
/// the span went on after the call returned.
pub(super) fn blocks(
    check: Check,
    waits: &HostWaits,
    timeline: &Timeline,
    call: OpId,
    span: OpId,
    tol: &Tolerances,
) -> Measurement {
    let (p, s) = match call_and_span(check, waits, timeline, call, span, tol) {
        Ok(both) => both,
        Err(unknown) => return unknown,
    };
    let len = (s.end - s.start).max(1);
    let covered = (p.end.min(s.end) - p.begin.max(s.start)).max(0);
    let share = covered as f64 / len as f64;
    let error = 2 * p.slack;
    let tail = s.end - p.end;
    let truth = if 2 * (covered - error) >= len {
        Truth::Yes
    } else if 2 * (covered + error) < len {
        Truth::No
    } else {
        Truth::Unknown
    };
    Measurement {
        check,
        value_ns: tail,
        truth,
        reason: format!(
            "the call held the host for {:.1} % of the {} span (from {}), and returned {}; the \
             held time is known within ±{:.2} µs (twice the {})",
            share * 100.0,
            micros(s.end - s.start),
            at(s.start, timeline),
            if tail > 0 {
                format!("{} before its end", micros(tail))
            } else {
                format!("{} after its end", micros(-tail))
            },
            error as f64 / 1e3,
            tolerance(p.slack)
        ),
    }
}
