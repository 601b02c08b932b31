//! Overlaps: the one outcome a neighbour cannot make.
//!
//! A neighbour holds our work back, pauses it in mid-run, slows our copies and our host calls.
//! Each of those moves starts and ends later; none of them makes two of our ops run at the same
//! moment when the GPU keeps them apart. So where the stamps show a kernel of ours running
//! together with another kernel or a copy of ours on the same GPU, the GPU let them run together,
//! neighbour or not. That answers a check that asks whether the later one waited
//! ([`Check::Precedes`]: refuted) or whether they can run together ([`Check::Overlaps`]:
//! shown), both of which mean a wait that a stream, an event, the legacy stream or a shared
//! hardware queue makes, and say so only for ops that were ready together
//! (`judge::relation::order`).
//!
//! Such an overlap is taken only where the same question would have been asked on a GPU of our
//! own, and only where what it shows is an overlap:
//! - the two were issued closer together than the first issued lasts at the least alone (a
//!   spin's duration, a copy's time at the rate measured alone): a neighbour that stretched or
//!   held the first until the second came could otherwise make them meet where alone they never
//!   would, and the check would be undecided there (a pageable copy's call returns while its
//!   transfer's tail still runs, and a kernel issued after it meets a slowed copy);
//! - a refuted order must be an overlap, not a reversal: a trial held back as a whole lets its
//!   ops go in an order of the GPU's own, and a later op that ran wholly first says nothing;
//! - the trial has a clock sync: without one, a hold cannot be placed (`ready.rs`).
//!
//! Left out, because a neighbour can change them:
//! - two copies: a neighbour's copies time-slice the copy engines, and whether two of ours then
//!   interleave on one engine is the engines' business, not an order of ours
//!   ([`Check::Serializes`] is about exactly that, and is never taken);
//! - host calls, host functions, all-reduces and memsets: their spans come from the host clock or
//!   from events, and a slow host moves them;
//! - ops of two devices, which run together on any machine.
//!
//! And a claim whose disturbed trials also show the pair apart, with no stall of the later op to
//! explain it, gets no positive trial this way (see [`marks`](super::marks)): what it shows then
//! is a sample of the trials that overlapped, and alone it might have said "Sometimes".
//!
//! Measured on the H100 beside a loop of bf16 matrix products, every trial of
//! `connections.one.single_stream` was held back as a whole for 2.4 ms and let go, and then A2
//! and B1 ran together for 44–47 µs: the claim was Inconclusive although each trial refuted it.

use super::Stall;
use crate::judge::relation::{Check, HostWaits, Truth};
use crate::measured::calibration::Tolerances;
use crate::measured::timeline::Timeline;
use crate::program::{OpId, OpKind, Program};

/// What a trial's overlaps decide on their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByOverlaps {
    /// Some check is refuted by an overlap: the trial is a counterexample.
    Refuted,
    /// Every check is shown by an overlap.
    Shown,
}

/// What the trial's overlaps decide, if they decide it alone. `None` for a trial without a clock
/// sync.
pub fn decided_by_overlaps(
    program: &Program,
    waits: &HostWaits,
    checks: &[Check],
    timeline: &Timeline,
    tol: &Tolerances,
) -> Option<ByOverlaps> {
    timeline.clock?;
    let pairs: Vec<Option<(OpId, OpId)>> = checks
        .iter()
        .map(|c| pair(program, c).filter(|&(a, b)| met_alone(program, timeline, tol, a, b)))
        .collect();
    if !pairs.iter().any(Option::is_some) {
        return None;
    }
    let together = |(a, b): (OpId, OpId)| {
        Check::Overlaps { a, b }
            .measure_with(waits, timeline, tol)
            .truth
            == Truth::Yes
    };
    let mut all = true;
    for (c, p) in checks.iter().zip(&pairs) {
        let Some(p) = *p else {
            all = false;
            continue;
        };
        let truth = c.measure_with(waits, timeline, tol).truth;
        match c {
            Check::Precedes { .. } if truth == Truth::No && together(p) => {
                return Some(ByOverlaps::Refuted)
            }
            Check::Overlaps { .. } if truth == Truth::Yes => {}
            _ => all = false,
        }
    }
    all.then_some(ByOverlaps::Shown)
}

/// Whether the trial shows a pair of an overlap check apart, the later having waited, with no
/// stall of the later op among `stalls` to say a neighbour kept it.
pub fn apart_unexplained(
    program: &Program,
    waits: &HostWaits,
    checks: &[Check],
    timeline: &Timeline,
    tol: &Tolerances,
    stalls: &[Stall],
) -> bool {
    checks.iter().any(|c| {
        let (Check::Overlaps { a, b }, Some(_)) = (c, pair(program, c)) else {
            return false;
        };
        if c.measure_with(waits, timeline, tol).truth != Truth::No {
            return false;
        }
        let later = match (timeline.interval(*a), timeline.interval(*b)) {
            (Some(ia), Some(ib)) if ia.start <= ib.start => *b,
            (Some(_), Some(_)) => *a,
            _ => return true,
        };
        !stalls.iter().any(|s| s.op == later)
    })
}

/// The two ops of a check an overlap can answer: an order or an overlap of a kernel and a kernel
/// or copy of one device.
fn pair(program: &Program, check: &Check) -> Option<(OpId, OpId)> {
    let (a, b) = match *check {
        Check::Precedes { before, after } => (before, after),
        Check::Overlaps { a, b } => (a, b),
        _ => return None,
    };
    let (ka, kb) = (kind(program, a)?, kind(program, b)?);
    let device = program.device_of(a)?;
    let mixed =
        ka != Kind::Other && kb != Kind::Other && (ka == Kind::Kernel || kb == Kind::Kernel);
    (mixed && program.device_of(b) == Some(device)).then_some((a, b))
}

/// Whether the ops were issued closer together than the first issued lasts at the least alone,
/// so that on a GPU of our own the second would have been ready while the first was pending or
/// running, as in the trial.
fn met_alone(program: &Program, t: &Timeline, tol: &Tolerances, a: OpId, b: OpId) -> bool {
    let (Some(ca), Some(cb)) = (t.host_call(a), t.host_call(b)) else {
        return false;
    };
    let (first, gap) = match ca.begin_ns <= cb.begin_ns {
        true => (a, cb.begin_ns - ca.begin_ns),
        false => (b, ca.begin_ns - cb.begin_ns),
    };
    gap < least_alone_ns(program, tol, first)
}

/// How long `op` takes at the least on a GPU of our own: a spin its duration, a copy its time at
/// the rate measured alone; 0 where nothing bounds it.
fn least_alone_ns(program: &Program, tol: &Tolerances, op: OpId) -> u64 {
    match program.op(op).map(|o| &o.kind) {
        Some(OpKind::Spin { duration_ns, .. }) => *duration_ns,
        Some(&OpKind::Copy {
            src, dst, bytes, ..
        }) => {
            let rates = tol.copy_rates.filter(|r| r.alone);
            let places = program.buffer(src).zip(program.buffer(dst));
            match (rates, places) {
                (Some(r), Some((s, d))) => {
                    r.of(s.place, d.place).map_or(0, |r| r.expected_ns(bytes))
                }
                _ => 0,
            }
        }
        _ => 0,
    }
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
