//! Checks of one kernel's run: whether its blocks ran unhindered, and what events recorded
//! around it measured.

use super::{micros, signed, Check, Measurement, Truth};
use crate::measured::calibration::Tolerances;
use crate::measured::timeline::Span;

/// Uninterrupted: each block's elapsed time against the time its cycles take at the kernel's own
/// median rate. A block preempted by `by` would be off its SM for at least one of `by`'s blocks,
/// so the threshold is half of `by`'s median block time. That is the cost of the alternative
/// being tested, not a guess at noise. (Without any possible preemption, blocks of 1024 threads
/// show 0.3–0.6 µs of excess on an H100: warp start skew and the final `__syncthreads`.)
pub(super) fn uninterrupted(check: Check, span: &Span, by: &Span) -> Measurement {
    let mut rates: Vec<f64> = span
        .blocks
        .iter()
        .filter(|b| b.cycles > 0)
        .map(|b| (b.end_ns - b.start_ns) as f64 / b.cycles as f64)
        .collect();
    let mut by_times: Vec<u64> = by.blocks.iter().map(|b| b.end_ns - b.start_ns).collect();
    if rates.is_empty() || by_times.is_empty() {
        return Measurement {
            check,
            value_ns: 0,
            truth: Truth::Unknown,
            reason: "no block recorded its cycles, so the time a block would take unhindered \
                     is unknown: only stamps with cycle counts (the stamp kernel's) decide it"
                .into(),
        };
    }
    rates.sort_by(f64::total_cmp);
    by_times.sort_unstable();
    let ns_per_cycle = rates[rates.len() / 2];
    let threshold = signed(by_times[by_times.len() / 2] / 2);
    let worst = span
        .blocks
        .iter()
        .filter(|b| b.cycles > 0)
        .map(|b| (b.end_ns - b.start_ns) as i64 - (b.cycles as f64 * ns_per_cycle) as i64)
        .max()
        .unwrap_or(0);
    let (truth, verb) = if worst < threshold {
        (Truth::Yes, "no block was held off its SM")
    } else {
        (Truth::No, "a block was held off its SM")
    };
    let reason = format!(
        "{verb}: the worst of {} blocks ran {} longer than its cycles take; a block preempted by \
         the other kernel would wait out one of its blocks, so the threshold is half its median \
         block time, {}",
        span.blocks.len(),
        micros(worst),
        micros(threshold)
    );
    Measurement {
        check,
        value_ns: worst,
        truth,
        reason,
    }
}

/// The resolution of `cuEventElapsedTime`, as the CUDA documentation states it ("a resolution of
/// around 0.5 microseconds").
pub const EVENT_RESOLUTION_NS: i64 = 500;

/// ElapsedCovers: the events' elapsed time minus the kernel's stamped duration. Events recorded
/// before and after a kernel in one stream bracket it, so the difference cannot be negative beyond
/// the event resolution plus a timer step. What it is above zero is what events include that
/// stamps do not: the kernel's dispatch after the first record, and the second record after it.
pub(super) fn elapsed_covers(
    check: Check,
    reading: Option<i64>,
    span: Option<&Span>,
    tol: &Tolerances,
) -> Measurement {
    let (Some(elapsed), Some(span)) = (reading, span) else {
        return Measurement {
            check,
            value_ns: 0,
            truth: Truth::Unknown,
            reason: "no elapsed-time reading or no stamps for the kernel on this timeline".into(),
        };
    };
    let duration = signed(span.duration_ns());
    let extra = elapsed - duration;
    let slack = EVENT_RESOLUTION_NS + signed(tol.timer_step_ns);
    let truth = if extra >= -slack {
        Truth::Yes
    } else {
        Truth::No
    };
    let reason = format!(
        "the events measured {} around a kernel stamped at {}: {} {}; event resolution {} plus \
         a timer step",
        micros(elapsed),
        micros(duration),
        micros(extra),
        if extra >= 0 {
            "more, the dispatch gaps around the kernel that events include and stamps do not"
        } else {
            "less"
        },
        micros(EVENT_RESOLUTION_NS)
    );
    Measurement {
        check,
        value_ns: extra,
        truth,
        reason,
    }
}
