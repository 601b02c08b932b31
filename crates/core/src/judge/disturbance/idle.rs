//! The two signatures of a stall in the stamps: a block paused for longer than a context switch,
//! and an op idle while ready with nothing of ours holding what it needs.

use super::stall::{Stall, StallKind, Waits};
use crate::judge::relation::{held_until, Release};
use crate::measured::calibration::Tolerances;
use crate::measured::timeline::{Interval, Timeline};
use crate::measured::witness::WitnessKind;
use crate::program::{ApiCall, CopyDir, OpId, OpKind, Program};

/// Blocks that stopped reading the clock for longer than `threshold`.
pub(super) fn paused(timeline: &Timeline, threshold: u64) -> Vec<Stall> {
    timeline
        .spans
        .iter()
        .filter_map(|s| {
            let worst = s.blocks.longest_pause()?;
            (worst.ns > threshold).then_some(Stall {
                op: s.op,
                kind: StallKind::Paused,
                at_ns: i64::try_from(worst.at_ns).unwrap_or(i64::MAX),
                len_ns: worst.ns,
            })
        })
        .collect()
}

/// What an op needs to run, for deciding whether our own work could have held it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    Sms,
    /// A copy engine: host to device, device to host, or either (`None`: a copy within one
    /// side, or a memset, whose engine we do not know).
    CopyEngine(Option<CopyDir>),
}

impl Need {
    /// Whether work needing `self` can hold back work needing `other`. H2D and D2H copies run on
    /// engines of their own on the GPUs measured (async engine count 3), so one does not hold
    /// the other back; on a GPU with a single copy engine a wait behind the other direction is
    /// counted as a stall, which leaves the claim undecided, never wrongly decided.
    fn holds(self, other: Need) -> bool {
        match (self, other) {
            (Need::Sms, Need::Sms) => true,
            (Need::CopyEngine(a), Need::CopyEngine(b)) => a.is_none() || b.is_none() || a == b,
            _ => false,
        }
    }
}

/// What the op needs on the device, if it runs there.
fn need(program: &Program, op: &crate::program::Op) -> Option<Need> {
    match op.kind {
        // NCCL's kernels run on the SMs of each rank's device.
        OpKind::Spin { .. } | OpKind::Add { .. } | OpKind::AllReduce { .. } => Some(Need::Sms),
        OpKind::Copy { .. } => Some(Need::CopyEngine(
            program
                .copy_dir(op.id)
                .filter(|d| matches!(d, CopyDir::H2D | CopyDir::D2H)),
        )),
        OpKind::Api {
            call: ApiCall::Memset,
            ..
        } => Some(Need::CopyEngine(None)),
        _ => None,
    }
}

/// Ops that were free to start, with nothing of ours holding them, and yet idle for longer than
/// `threshold`.
pub(super) fn idle(
    waits: &Waits,
    program: &Program,
    timeline: &Timeline,
    tol: &Tolerances,
    releases: &[Release],
    threshold: u64,
) -> Vec<Stall> {
    let events_witness = timeline
        .witness
        .is_some_and(|w| w.kind == WitnessKind::Events);
    let placed = placed(program, timeline);
    // When each op was ready, with the offset taken from ops issued directly: a graph's nodes start
    // before its launch call returns, which would make every other op look ready too early.
    // That offset comes from the trial's own starts, so a trial held back as a whole looks on
    // time to it; the clock sync with the calibrated launch latency does not.
    let offset = match (
        timeline.issue_offset_without(|op| waits.captured(op)),
        clocked_offset(timeline, tol, threshold),
    ) {
        (Some(own), Some(clocked)) => Some(own.min(clocked)),
        (own, clocked) => own.or(clocked),
    };
    let mut found = Vec::new();
    for op in &program.ops {
        let Some(wants) = need(program, op) else {
            continue;
        };
        // Event pairs around a copy bound it from outside: their start is not the copy's.
        if matches!(wants, Need::CopyEngine(_)) && events_witness {
            continue;
        }
        let Some(me) = placed[op.id.0] else { continue };
        let Some(ready) = offset.and_then(|o| Some(timeline.issued_ns(op.id)? as i64 + o)) else {
            continue;
        };
        let until = me.start.saturating_sub(me.slack_ns as i64);
        // A trial held back as a whole: nothing of ours ran before its release, so an op issued
        // earlier was free from the release on; likewise an op issued during a hold in mid-trial
        // (`marks` says which checks they still spoil).
        let ready = held_until(releases, timeline, op.id).map_or(ready, |r| ready.max(r));
        let from = ready.saturating_add(tol.launch_jitter_ns as i64);
        let window = (from, until);
        // An earlier op we cannot place may be what this one waited for.
        let Some(from) = waited_until(waits, program, &placed, op.id, window, threshold) else {
            continue;
        };
        if until.saturating_sub(from) <= threshold as i64 {
            continue;
        }
        // Our own work that could have held this op back: what needs the same resource.
        let mut busy: Vec<(i64, i64)> = program
            .ops
            .iter()
            .filter(|o| o.id != op.id && need(program, o).is_some_and(|n| n.holds(wants)))
            .filter_map(|o| placed[o.id.0])
            .map(|p| {
                (
                    p.start.saturating_sub(p.slack_ns as i64),
                    p.end.saturating_add(p.slack_ns as i64),
                )
            })
            .collect();
        if let Some((at, len)) = longest_uncovered(from, until, &mut busy) {
            if len > threshold {
                found.push(Stall {
                    op: op.id,
                    kind: StallKind::Idle,
                    at_ns: at,
                    len_ns: len,
                });
            }
        }
    }
    found
}

/// Where each op that takes time ran in the trial, by op.
fn placed(program: &Program, timeline: &Timeline) -> Vec<Option<Interval>> {
    program
        .ops
        .iter()
        .map(|op| {
            if op.kind.takes_time() {
                timeline.interval(op.id)
            } else {
                None
            }
        })
        .collect()
}

/// The latest end of what `op` may wait for, from the start of its idle window `(from, until)`
/// on; `None` where one of them is not placed. `from` only grows, and an op whose idle window
/// has shrunk to the threshold is passed over either way, so the scan stops there; it looks at
/// the ops issued just before first (in a stream, the one it waited for), so a claim of 2,000
/// ops in one stream is judged in linear time, not quadratic.
fn waited_until(
    waits: &Waits,
    program: &Program,
    placed: &[Option<Interval>],
    op: OpId,
    (mut from, until): (i64, i64),
    threshold: u64,
) -> Option<i64> {
    let before = (0..op.0).rev();
    for other in before.chain(op.0 + 1..program.ops.len()).map(OpId) {
        if !program.ops[other.0].kind.takes_time() || !waits.may_wait(other, op) {
            continue;
        }
        let p = placed[other.0]?;
        from = from.max(p.end.saturating_add(p.slack_ns as i64));
        if until.saturating_sub(from) <= threshold as i64 {
            break;
        }
    }
    Some(from)
}

/// The host-to-GPU offset of an op that waits for nothing, from the trial's clock sync and the
/// calibrated launch latency, as the relations take it
/// ([`crate::judge::relation::synced_delay_within`]); a sync worse than a quarter of the stall
/// threshold (its kernel held back by a neighbour in every round) is not used.
fn clocked_offset(timeline: &Timeline, tol: &Tolerances, threshold: u64) -> Option<i64> {
    crate::judge::relation::synced_delay_within(timeline, tol, threshold / 4)
}

/// The longest stretch of `[from, until]` that no interval of `busy` covers: (start, length).
fn longest_uncovered(from: i64, until: i64, busy: &mut [(i64, i64)]) -> Option<(i64, u64)> {
    busy.sort_unstable();
    let mut best: Option<(i64, u64)> = None;
    let mut cursor = from;
    let consider = |start: i64, end: i64, best: &mut Option<(i64, u64)>| {
        let len = end.saturating_sub(start);
        if len > 0 && best.map_or(true, |(_, l)| len as u64 > l) {
            *best = Some((start, len as u64));
        }
    };
    for &(s, e) in busy.iter() {
        if e <= cursor {
            continue;
        }
        if s >= until {
            break;
        }
        consider(cursor, s.min(until), &mut best);
        cursor = cursor.max(e);
        if cursor >= until {
            return best;
        }
    }
    consider(cursor, until, &mut best);
    best
}

#[cfg(test)]
mod tests {
    use super::longest_uncovered;

    #[test]
    fn uncovered_stretches() {
        assert_eq!(longest_uncovered(0, 100, &mut []), Some((0, 100)));
        assert_eq!(longest_uncovered(0, 100, &mut [(-5, 200)]), None);
        assert_eq!(
            longest_uncovered(0, 100, &mut [(10, 20), (50, 60)]),
            Some((60, 40))
        );
        assert_eq!(
            longest_uncovered(0, 100, &mut [(40, 60), (0, 30)]),
            Some((60, 40))
        );
        assert_eq!(longest_uncovered(0, 100, &mut [(0, 95)]), Some((95, 5)));
    }
}
