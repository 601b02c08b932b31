//! Orders between two spans: `Precedes`, `Overlaps`, and the dispatch order of blocks
//! (`Interleaves`, `Behind`). The stamps refute an order by an overlap of a timer step; anything
//! else also needs to know whether the later op could have started sooner: on the device (its
//! ready time plus the launch jitter, see [`latest_free_start`]), or, for an order, on the host
//! (a host call that waits for the earlier op held the host until it ended, see `host_order.rs`).
//! Where neither decides, the reason names why the later op came late and what would decide it.

use super::host_order::{cause, host_order, HostOrder};
use super::host_waits::HostWaits;
use super::{
    at, latest_free_start, micros, ready_how, signed, synced, Check, Measurement, Say, Truth,
};
use crate::measured::calibration::Tolerances;
use crate::measured::timeline::{Interval, Span, Timeline};
use crate::program::OpId;

/// "ready by 3.00 µs (issued, plus … launch jitter), vs A's end at 50.00 µs"; without a clock
/// sync, "ready by 3.00 µs, with +2.00 µs launch jitter, vs …", as files recorded then say.
fn too_late(
    timeline: &Timeline,
    later: OpId,
    free: i64,
    end: i64,
    tol: &Tolerances,
    a: &str,
) -> String {
    let how = match synced(timeline, tol) {
        true => format!(" ({})", ready_how(timeline, tol, later)),
        false => match ready_how(timeline, tol, later).split_once(" launch jitter, ") {
            // A host function: the latency is named after the jitter.
            Some((_, host_fn)) => format!(
                ", with {} launch jitter, {host_fn}",
                micros(signed(tol.launch_jitter_ns))
            ),
            None => format!(
                ", with {} launch jitter",
                micros(signed(tol.launch_jitter_ns))
            ),
        },
    };
    format!(
        "ready by {}{how}, vs {a}'s end at {}",
        at(free, timeline),
        at(end, timeline)
    )
}

/// The reason of an order or overlap whose later op has no known ready time: the timeline has
/// no host issue times at all, or nothing to move the issue onto the GPU clock with.
fn no_ready_time(waits: &HostWaits, timeline: &Timeline, op: crate::program::OpId) -> String {
    if timeline.issued_ns(op).is_none() {
        return format!(
            "this timeline has no host issue times, so whether {} could have started sooner is unknown: only a timeline recorded with them decides it",
            waits.label(op)
        );
    }
    if timeline.one_clock() {
        return format!(
            "when {} was ready is unknown: the trace gives no launch latency (it shows too few \
             ops issued to an idle GPU; see its header line)",
            waits.label(op)
        );
    }
    format!(
        "when {} was ready is unknown: the trial has no clock sync with a calibrated launch \
         latency, and no stamped op that depended on nothing (no earlier op in its stream, no \
         wait before it) to give the launch delay; a run of today's lab syncs the clocks every \
         trial",
        waits.label(op)
    )
}

pub(super) fn precedes(
    check: Check,
    waits: &HostWaits,
    timeline: &Timeline,
    before: Interval,
    after: Interval,
    tol: &Tolerances,
    say: Say,
) -> Measurement {
    let gap = after.start - before.end;
    let slack = signed(before.slack_ns + after.slack_ns);
    let step = signed(tol.timer_step_ns) + slack;
    let end = before.end;
    let (truth, reason) = if gap <= -step {
        (
            Truth::No,
            say.why(|| {
                format!(
                    "started {} before the end: an overlap of at least one timer step{} ({step} \
                     ns) cannot come from rounding",
                    micros(-gap),
                    if slack > 0 {
                        " plus the clock alignment error"
                    } else {
                        ""
                    }
                )
            }),
        )
    } else {
        match latest_free_start(waits, timeline, after.op, tol) {
            Some(free) if free + slack < end => (
                Truth::Yes,
                say.why(|| {
                    format!(
                        "was ready to start by {} ({}) yet started at {}, after the end at {}: \
                         it waited",
                        at(free, timeline),
                        ready_how(timeline, tol, after.op),
                        at(after.start, timeline),
                        at(end, timeline)
                    ) + &aligned(slack)
                }),
            ),
            free => {
                let order = host_order(waits, timeline, &before, after.op, tol);
                let why = || cause(&order, waits, timeline, &before, after.op, false);
                match (&order, free) {
                    // The call's tolerance already holds the earlier op's slack.
                    (HostOrder::Made(..), _) => (Truth::Yes, say.why(why)),
                    (_, Some(free)) => (
                        Truth::Unknown,
                        say.why(|| {
                            format!(
                                "came after the end ({} gap), but was issued too late to have \
                                 started sooner ({}): {}",
                                micros(gap),
                                too_late(
                                    timeline,
                                    after.op,
                                    free,
                                    end,
                                    tol,
                                    &waits.label(before.op)
                                ),
                                why()
                            )
                        }),
                    ),
                    (_, None) => (
                        Truth::Unknown,
                        say.why(|| no_ready_time(waits, timeline, after.op)),
                    ),
                }
            }
        }
    };
    Measurement {
        check,
        value_ns: gap,
        truth,
        reason,
    }
}

pub(super) fn overlaps(
    check: Check,
    waits: &HostWaits,
    timeline: &Timeline,
    a: Interval,
    b: Interval,
    tol: &Tolerances,
    say: Say,
) -> Measurement {
    let overlap = a.end.min(b.end) - a.start.max(b.start);
    let slack = signed(a.slack_ns + b.slack_ns);
    let step = signed(tol.timer_step_ns) + slack;
    let (first, later) = if a.start <= b.start { (a, b) } else { (b, a) };
    let end = first.end;
    let (truth, reason) = if overlap >= step {
        (
            Truth::Yes,
            say.why(|| {
                format!(
                    "ran together for {}, at least one timer step ({} ns){}",
                    micros(overlap),
                    tol.timer_step_ns,
                    aligned(slack)
                )
            }),
        )
    } else {
        match latest_free_start(waits, timeline, later.op, tol) {
            Some(free) if free + slack < end => (
                Truth::No,
                say.why(|| {
                    format!(
                        "the later one was ready to start by {} ({}) while the other ran until \
                         {}, yet started only at {}: it waited{}",
                        at(free, timeline),
                        ready_how(timeline, tol, later.op),
                        at(end, timeline),
                        at(later.start, timeline),
                        aligned(slack)
                    )
                }),
            ),
            // Unknown whatever the host did: how it held the later op is only said.
            Some(free) => (
                Truth::Unknown,
                say.why(|| {
                    let order = host_order(waits, timeline, &first, later.op, tol);
                    format!(
                        "no overlap, but the later one was issued too late to overlap ({}): {}",
                        too_late(timeline, later.op, free, end, tol, &waits.label(first.op)),
                        cause(&order, waits, timeline, &first, later.op, true)
                    )
                }),
            ),
            None => (
                Truth::Unknown,
                say.why(|| no_ready_time(waits, timeline, later.op)),
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

/// "; spans placed …, within ±x µs" where a host span or a witnessed copy took part, else
/// nothing.
fn aligned(slack: i64) -> String {
    if slack > 0 {
        format!(
            "; host spans and copies placed on the stamps' axis (clock sync or witness), \
             within ±{:.2} µs",
            slack as f64 / 1e3
        )
    } else {
        String::new()
    }
}

/// Interleaves / Behind: the lead is the last start of a `low` block minus the first start of a
/// `high` block. A lead of at least one timer step means low blocks were still being dispatched
/// after high's first block started. Either way the answer counts only if `high` was ready (issued,
/// plus the launch jitter) before the last low block started; otherwise high may simply have
/// arrived late.
pub(super) fn dispatch_order(
    check: Check,
    waits: &HostWaits,
    timeline: &Timeline,
    low: &Span,
    high: &Span,
    tol: &Tolerances,
) -> Measurement {
    let step = signed(tol.timer_step_ns);
    let first_high = signed(high.start());
    let last_low = low
        .blocks
        .iter()
        .map(|b| signed(b.start_ns))
        .max()
        .unwrap_or(0);
    let lead = last_low - first_high;
    let after = low
        .blocks
        .iter()
        .filter(|b| signed(b.start_ns) >= first_high + step)
        .count();
    let counted = format!(
        "{after} of {} blocks of the first kernel started after the first block of the second \
         (at {}); its last block started at {}",
        low.blocks.len(),
        at(first_high, timeline),
        at(last_low, timeline)
    );
    let interleaved = lead >= step;
    let decided =
        latest_free_start(waits, timeline, high.op, tol).is_some_and(|free| free < last_low);
    let truth = match (check, interleaved, decided) {
        (_, _, false) => Truth::Unknown,
        (Check::Interleaves { .. }, true, _) | (Check::Behind { .. }, false, _) => Truth::Yes,
        _ => Truth::No,
    };
    let reason = if decided {
        counted
    } else {
        // Until its last block started, the first kernel could still be overtaken.
        let dispatching = Interval {
            op: low.op,
            start: signed(low.start()),
            end: last_low,
            slack_ns: 0,
        };
        let order = host_order(waits, timeline, &dispatching, high.op, tol);
        let why = match order {
            HostOrder::None => "at the host's own pace; lengthen the first kernel".to_string(),
            _ => cause(&order, waits, timeline, &dispatching, high.op, true),
        };
        format!(
            "{counted}; but the second kernel was issued too late to tell (ready only after the \
             first kernel's last block started): {why}"
        )
    };
    Measurement {
        check,
        value_ns: lead,
        truth,
        reason,
    }
}
