//! Overlaps: the one outcome a neighbour cannot make.
//!
//! A neighbour holds our work back, pauses it in mid-run, slows our copies and our host calls.
//! Each of those moves starts and ends later; none of them makes two of our ops run at the same
//! moment when the GPU keeps them apart. So where the stamps show a kernel of ours running
//! together with another kernel or a copy of ours on the same GPU, the GPU let them run together,
//! neighbour or not. That answers a check that asks whether the later one waited
//! ([`Check::Precedes`]: refuted) or whether they can run together ([`Check::Overlaps`]:
//! shown), both of which mean a wait that a stream, an event, the legacy stream or a shared
//! hardware queue makes, and say so for an op issued too late to tell
//! (`judge::relation::order`).
//!
//! Left out, because a neighbour can change them:
//! - two copies: a neighbour's copies time-slice the copy engines, and whether two of ours then
//!   interleave on one engine is the engines' business, not an order of ours
//!   ([`Check::Serializes`] is about exactly that, and is never taken);
//! - host calls, host functions, all-reduces: their spans come from the host clock or from
//!   events, and a slow host moves them;
//! - ops of two devices, which run together on any machine;
//! - a pair that a hold let go together although alone the first would have ended before the
//!   second was issued (`released_apart`): the caller keeps that trial disturbed.
//!
//! Measured on the H100 beside a loop of bf16 matrix products, every trial of
//! `connections.one.single_stream` was held back as a whole for 2.4 ms and let go, and then A2
//! and B1 ran together for 44–47 µs: the claim was Inconclusive although each trial refuted it.

use crate::judge::relation::{Check, HostWaits, Truth};
use crate::measured::calibration::Tolerances;
use crate::measured::timeline::Timeline;
use crate::program::{OpId, OpKind, Program};

/// Whether the trial's outcome rests on overlaps alone: some check is refuted by an overlap, or
/// every check is shown by one. Such a trial counts even where a neighbour disturbed it.
pub fn decided_by_overlaps(
    program: &Program,
    waits: &HostWaits,
    checks: &[Check],
    timeline: &Timeline,
    tol: &Tolerances,
) -> bool {
    if checks.is_empty() || !checks.iter().any(|c| eligible(program, c)) {
        return false;
    }
    let mut all = true;
    for c in checks {
        let shown = eligible(program, c) && {
            let m = c.measure_with(waits, timeline, tol);
            match c {
                Check::Precedes { .. } if m.truth == Truth::No => return true,
                Check::Overlaps { .. } => m.truth == Truth::Yes,
                _ => false,
            }
        };
        all &= shown;
    }
    all
}

/// A check an overlap can answer: an order or an overlap of a kernel and a kernel or copy of one
/// device.
fn eligible(program: &Program, check: &Check) -> bool {
    let (a, b) = match *check {
        Check::Precedes { before, after } => (before, after),
        Check::Overlaps { a, b } => (a, b),
        _ => return false,
    };
    let (Some(ka), Some(kb)) = (kind(program, a), kind(program, b)) else {
        return false;
    };
    let same_device =
        program.device_of(a).is_some() && program.device_of(a) == program.device_of(b);
    same_device
        && ka != Kind::Other
        && kb != Kind::Other
        && (ka == Kind::Kernel || kb == Kind::Kernel)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Kernel,
    Copy,
    Other,
}

fn kind(program: &Program, op: OpId) -> Option<Kind> {
    Some(match program.op(op)?.kind {
        OpKind::Spin { .. } | OpKind::Add { .. } => Kind::Kernel,
        OpKind::Copy { .. } => Kind::Copy,
        _ => Kind::Other,
    })
}
