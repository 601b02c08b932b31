//! The pairs a quantified check measures in one trial, found without visiting every pair.
//!
//! `forall overlaps(A, B)` over selections of 1,000 ops each names a million pairs, twenty such
//! trials twenty million, and a check looked at each one (44.5 s for one trial, over two minutes
//! for twenty). Most pairs of a real trace could not have run together (one was issued only
//! after the other ended): they are left out unmeasured, and only counted for the reason. So
//! they are counted by arithmetic here, and the pairs that could have met are found by a sweep
//! over the ops sorted by start ([`Meets`], on `start_index.rs`): time n log n plus the pairs
//! found. What a claim
//! measures in all is bounded by [`MAX_PAIRS`], counted before any pair is measured
//! (`judge.rs`).

use super::on_trial::OnTrial;
use super::start_index::{Placed, Sorted};
use super::trace_claim::{TraceCheck, TraceRelation};
use crate::judge::relation::latest_free_start;
use crate::measured::calibration::Tolerances;
use crate::program::OpId;

/// The most pairs one claim measures, over all its checks and trials: about a second of
/// judging. Beyond, the selections are too wide to say anything readable, and the claim is
/// refused with a word to narrow them.
pub const MAX_PAIRS: usize = 1_000_000;

/// How many pairs a claim may measure per GPU op of its trace, where that is past
/// [`MAX_PAIRS`]: the largest claim of the docs' benchmark (`~exists overlaps(C, K)` on the
/// 202 MB trace) measures about 4.8 per op (718,000 pairs over 150,240 ops), so a trace ten
/// times its size is judged whole. Pairs are measured as they are found, not kept: they cost
/// time (a fraction of a µs each), not memory.
pub const PAIRS_PER_OP: usize = 8;

/// The most pairs one claim on `trace` may measure: [`MAX_PAIRS`], or [`PAIRS_PER_OP`] per GPU
/// op of a larger trace.
pub fn pair_bound(trace: &crate::trace::Trace) -> usize {
    MAX_PAIRS.max(trace.op_count().saturating_mul(PAIRS_PER_OP))
}

/// Pairs of a check left out unmeasured, by why, for its reason.
#[derive(Debug, Default)]
pub(super) struct LeftOut {
    /// Could not have run together (one was issued only after the other ended).
    pub apart: usize,
    /// No launch call to order them by issue (`precedes` within one selection).
    pub unordered: usize,
    /// Of two recordings, whose clocks are not one.
    pub recordings: usize,
    /// Ops with no op of the other selection issued after them (`next`).
    pub no_next: usize,
}

/// Which pairs of its selections' ops a check speaks of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Each op with its own call (a call relation within one selection).
    OwnCall,
    /// Each op with the next op of the other selection its process issued (`next`).
    Next,
    /// Every pair `a ≠ b`; `timed`: only those that could have met; `issue_order`: only those
    /// issued in that order (`precedes` within one selection).
    Every { timed: bool, issue_order: bool },
}

fn shape(c: &TraceCheck) -> Shape {
    let one = c.a == c.b;
    let call = matches!(
        c.relation,
        TraceRelation::ReturnsBefore | TraceRelation::ReturnsAfter | TraceRelation::Blocks
    );
    match () {
        _ if one && call => Shape::OwnCall,
        _ if c.next => Shape::Next,
        _ => Shape::Every {
            timed: c.relation.is_timed(),
            issue_order: one && c.relation == TraceRelation::Precedes,
        },
    }
}

/// Hands `visit` every pair `(a of sa, b of sb)` check `c` measures in `trial`, until it
/// returns false; returns the pairs left out (meaningful only where `visit` never stopped).
pub(super) fn each_pair(
    trial: &OnTrial,
    (sa, sb): (&[OpId], &[OpId]),
    c: &TraceCheck,
    tol: &Tolerances,
    visit: &mut dyn FnMut(OpId, OpId) -> bool,
) -> LeftOut {
    let mut left = LeftOut::default();
    match shape(c) {
        Shape::OwnCall => {
            let _ = sa.iter().all(|&a| visit(a, a));
        }
        Shape::Next => {
            let pairs = next_pairs(trial, sa, sb, &mut left);
            let meet = |a, b| c.relation.is_timed() && !could_meet(trial, a, b, tol);
            for (a, b) in pairs {
                match (trial.one_recording(a, b), meet(a, b)) {
                    (false, _) => left.recordings += 1,
                    (true, true) => left.apart += 1,
                    (true, false) if !visit(a, b) => break,
                    _ => {}
                }
            }
        }
        Shape::Every { timed, issue_order } => {
            let groups = Groups::of(trial, sa, sb, issue_order);
            left.unordered = groups.unordered;
            left.recordings = groups.total - groups.same;
            let (visited, one_call) = match timed {
                true => groups.meeting(trial, tol, issue_order, visit),
                false => (groups.every(visit), 0),
            };
            left.unordered += one_call;
            if timed {
                left.apart = groups.same.saturating_sub(visited + one_call);
            }
        }
    }
    left
}

/// Whether a pair could have run together: the op that started later was ready, or started,
/// before the other ended. An overlap that was seen is a witness whatever the ready times say
/// (a ready time is the latest the op could have been ready: a pageable copy called before a
/// kernel started and run beside it for 2.9 ms was once left out as "issued only after the
/// other ended"). Unknown ready time or place: kept (the relation says why it cannot decide).
pub(super) fn could_meet(trial: &OnTrial, a: OpId, b: OpId, tol: &Tolerances) -> bool {
    let t = &trial.timeline;
    // Host functions' runs too (their host spans), not GPU spans only: a pair with a host
    // function is left out like any other that could not have met.
    let (Some(ia), Some(ib)) = (t.interval(a), t.interval(b)) else {
        return true;
    };
    let (first, (second, second_start)) = match ia.start <= ib.start {
        true => (ia, (b, ib.start)),
        false => (ib, (a, ia.start)),
    };
    meets_from(trial, second, second_start, tol) < first.end
}

/// From when `op` (starting at `start`) could have met an op that had not ended yet: when it was
/// ready at the latest had it depended on nothing, or its own start where that came sooner (an
/// overlap seen); `i64::MIN` where its ready time is unknown (it could then have met anything).
fn meets_from(trial: &OnTrial, op: OpId, start: i64, tol: &Tolerances) -> i64 {
    match latest_free_start(&trial.waits, &trial.timeline, op, tol) {
        Some(ready) => ready.min(start),
        None => i64::MIN,
    }
}

/// A check's two selections in one trial, split by recording (pairs of two recordings are
/// never measured), with the counts of the pairs they name.
struct Groups {
    /// By recording: the ops of `sa` and of `sb` (those without a call left out where pairs
    /// go by issue order).
    a: Vec<Vec<OpId>>,
    b: Vec<Vec<OpId>>,
    /// Pairs named in all, and those of one recording (after the issue-order filter).
    total: usize,
    same: usize,
    unordered: usize,
}

impl Groups {
    fn of(trial: &OnTrial, sa: &[OpId], sb: &[OpId], issue_order: bool) -> Groups {
        let runs = recordings(trial);
        let run = |o: OpId| {
            trial
                .place(o)
                .map_or(0, |p| runs.get(p.0).copied().unwrap_or(0))
        };
        let issued = |o: OpId| trial.timeline.host_call(o).is_some();
        let keep = |o: &&OpId| !issue_order || issued(**o);
        let split = |ops: &[OpId]| {
            let mut by = vec![Vec::new(); runs.iter().max().map_or(1, |m| m + 1)];
            for &o in ops.iter().filter(keep) {
                by[run(o)].push(o);
            }
            by
        };
        let (a, b) = (split(sa), split(sb));
        let both = |x: &[OpId], y: &[OpId]| x.iter().filter(|o| y.binary_search(o).is_ok()).count();
        let pairs = |n: usize| n * n.saturating_sub(1) / 2;
        let (total, same, unordered) = match issue_order {
            // One selection, each pair once, in the order it was issued.
            true => {
                let k: usize = a.iter().map(Vec::len).sum();
                let same = a.iter().map(|g| pairs(g.len())).sum();
                (pairs(k), same, pairs(sa.len()) - pairs(k))
            }
            false => {
                let same = (a.iter().zip(&b))
                    .map(|(x, y)| x.len() * y.len() - both(x, y))
                    .sum();
                (sa.len() * sb.len() - both(sa, sb), same, 0)
            }
        };
        Groups {
            a,
            b,
            total,
            same,
            unordered,
        }
    }

    /// Every pair `a ≠ b` of one recording; returns how many were visited.
    fn every(&self, visit: &mut dyn FnMut(OpId, OpId) -> bool) -> usize {
        let mut n = 0;
        for (x, y) in self.a.iter().zip(&self.b) {
            for &a in x {
                for &b in y.iter().filter(|&&b| b != a) {
                    n += 1;
                    if !visit(a, b) {
                        return n;
                    }
                }
            }
        }
        n
    }

    /// Every pair of one recording that could have met ([`could_meet`]), issued in order where
    /// `issue_order`; returns how many were visited.
    fn meeting(
        &self,
        trial: &OnTrial,
        tol: &Tolerances,
        issue_order: bool,
        visit: &mut dyn FnMut(OpId, OpId) -> bool,
    ) -> (usize, usize) {
        let issued = |o: OpId| trial.issue_key(o);
        let (mut n, mut one_call) = (0, 0);
        let mut take = |a: OpId, b: OpId| {
            if a == b {
                return true;
            }
            if issue_order {
                match issued(a).cmp(&issued(b)) {
                    std::cmp::Ordering::Less => {}
                    // Ops of one call (a graph launch's kernels) have no issue order: the pair
                    // is counted once, met from either side.
                    std::cmp::Ordering::Equal => {
                        one_call += usize::from(a < b);
                        return true;
                    }
                    std::cmp::Ordering::Greater => return true,
                }
            }
            n += 1;
            visit(a, b)
        };
        for (x, y) in self.a.iter().zip(&self.b) {
            if !Meets::new(trial, tol, x, y).each(&mut take) {
                break;
            }
        }
        (n, one_call)
    }
}

/// An index per file of the recording it belongs to (files of one recording share one).
fn recordings(trial: &OnTrial) -> Vec<usize> {
    (0..trial.runs.len())
        .map(|f| {
            (0..=f)
                .find(|&g| trial.runs[g] == trial.runs[f])
                .unwrap_or(f)
        })
        .collect()
}

/// The pairs of `a` and `b` (ops of one recording) that could have met, by a sweep: the ops of
/// each sorted by start, with the latest end over every range of them (a segment tree), so that
/// an op finds the ops that started before it and ended after it was ready in time log n per op
/// found.
struct Meets {
    a: Sorted,
    b: Sorted,
    /// Ops with no place on the axis: each could have met anything.
    unplaced: (Vec<OpId>, Vec<OpId>),
}

impl Meets {
    fn new(trial: &OnTrial, tol: &Tolerances, a: &[OpId], b: &[OpId]) -> Meets {
        let place = |ops: &[OpId]| {
            let (mut placed, mut unplaced) = (Vec::new(), Vec::new());
            for &op in ops {
                match trial.timeline.interval(op) {
                    Some(i) => placed.push(Placed {
                        op,
                        start: i.start,
                        end: i.end,
                        ready: meets_from(trial, op, i.start, tol),
                    }),
                    None => unplaced.push(op),
                }
            }
            (Sorted::new(placed), unplaced)
        };
        let ((a, ua), (b, ub)) = (place(a), place(b));
        Meets {
            a,
            b,
            unplaced: (ua, ub),
        }
    }

    /// Hands `take` each pair (a, b) that could have met, until it returns false; returns
    /// whether it never did.
    ///
    /// [`could_meet`]: the later to start (b where both started together) was ready before the
    /// other ended. So b finds its a among the ops of `a` that started no later than b, and a
    /// its b among those of `b` that started strictly before a.
    fn each(&self, take: &mut dyn FnMut(OpId, OpId) -> bool) -> bool {
        for x in &self.b.ops {
            let upto = self.a.starting_by(x.start, true);
            if !self
                .a
                .ending_after(upto, x.ready, &mut |y| take(y.op, x.op))
            {
                return false;
            }
        }
        for x in &self.a.ops {
            let upto = self.b.starting_by(x.start, false);
            if !self
                .b
                .ending_after(upto, x.ready, &mut |y| take(x.op, y.op))
            {
                return false;
            }
        }
        let (ua, ub) = &self.unplaced;
        let all_b = self.b.ops.iter().map(|p| p.op).chain(ub.iter().copied());
        for &a in ua {
            for b in all_b.clone() {
                if !take(a, b) {
                    return false;
                }
            }
        }
        let placed_a = self.a.ops.iter().map(|p| p.op);
        placed_a
            .flat_map(|a| ub.iter().map(move |&b| (a, b)))
            .all(|(a, b)| take(a, b))
    }
}

/// `RELATION(A, next B)`: each op of `sa` with the op of `sb` its process issued first after it
/// (by call begin; ties by op), counting the ops with no call (`unordered`) and those with no op
/// of `sb` after them (`no_next`). One sort of `sb` and a binary search per op of `sa`.
fn next_pairs(trial: &OnTrial, sa: &[OpId], sb: &[OpId], left: &mut LeftOut) -> Vec<(OpId, OpId)> {
    // Ops of one call (a graph launch's kernels) share a key: none is "next" after another.
    let key = |op: OpId| {
        let process = trial.place(op).map(|(file, pid, ..)| (file, pid));
        Some((process?, trial.issue_key(op)?, op))
    };
    let mut later: Vec<_> = sb.iter().filter_map(|&b| key(b)).collect();
    later.sort_unstable();
    let mut pairs = Vec::with_capacity(sa.len());
    for &a in sa {
        let Some(ka) = key(a) else {
            left.unordered += 1;
            continue;
        };
        let i = later.partition_point(|kb| (kb.0, kb.1) <= (ka.0, ka.1));
        match later.get(i) {
            Some(&(process, _, b)) if process == ka.0 => pairs.push((a, b)),
            _ => left.no_next += 1,
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Trace, Trial, TrialSpec};
    use crate::trace_claims::Quantifier;
    use std::collections::BTreeSet;

    /// A trace of three idle memsets, then `n` kernels of random streams, starts (ties
    /// included), lengths (some 0) and launch calls (some missing): one trial.
    fn trial(seed: u64, n: usize) -> Trial {
        let mut x = seed | 1;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let mut ev = Vec::new();
        let mut op = |c: usize, stream: u64, ts: f64, dur: f64, call: Option<f64>| {
            ev.push(format!(
                r#"{{"ph":"X","cat":"kernel","name":"k","pid":1,"tid":{stream},"ts":{ts},"dur":{dur},"args":{{"device":0,"stream":{stream},"correlation":{c}}}}}"#
            ));
            if let Some(at) = call {
                ev.push(format!(
                    r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{at},"dur":2.0,"args":{{"correlation":{c}}}}}"#
                ));
            }
        };
        for (c, at) in [0.0, 100.0, 200.0].into_iter().enumerate() {
            op(c, 7, at + 7.0, 1.0, Some(at));
        }
        for c in 3..3 + n {
            let ts = 1000.0 + next(60) as f64 * 5.0;
            let call = (next(8) != 0).then(|| ts - 2.0 - next(300) as f64);
            op(c, 7 + next(4), ts, next(5) as f64 * 20.0, call);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        let text = format!(r#"{{"schemaVersion":1,"traceEvents":[{}]}}"#, ev.join(","));
        std::fs::write(&path, text).unwrap();
        let trace = Trace::read(&[path]).unwrap();
        trace.trials(&TrialSpec::Whole).unwrap().remove(0)
    }

    fn visited(
        t: &OnTrial,
        sel: (&[OpId], &[OpId]),
        c: &TraceCheck,
    ) -> (BTreeSet<(usize, usize)>, LeftOut) {
        let tol = Tolerances {
            timer_step_ns: 32,
            launch_jitter_ns: 2_000,
            dependent_gap_ns: 1_000,
            launch_latency_ns: Some(2_000),
            copy_rates: None,
        };
        let mut seen = BTreeSet::new();
        let left = each_pair(t, sel, c, &tol, &mut |a, b| seen.insert((a.0, b.0)));
        // Every pair a ≠ b, issued in order where asked, that could have met: by brute force.
        let issued = |o: OpId| t.issue_key(o);
        let issue_order = c.a == c.b && c.relation == TraceRelation::Precedes;
        let named = (sel.0.iter()).flat_map(|&a| sel.1.iter().map(move |&b| (a, b)));
        let named: Vec<_> = named
            .filter(|&(a, b)| a != b)
            .filter(|&(a, b)| !issue_order || issued(a).is_some() && issued(a) < issued(b))
            .collect();
        let meet: BTreeSet<_> = (named.iter())
            .filter(|&&(a, b)| could_meet(t, a, b, &tol))
            .map(|&(a, b)| (a.0, b.0))
            .collect();
        let differ: Vec<_> = seen.symmetric_difference(&meet).collect();
        assert!(
            differ.is_empty(),
            "found or missed by the sweep: {differ:?}"
        );
        assert_eq!(left.apart, named.len() - meet.len());
        (seen, left)
    }

    #[test]
    fn the_sweep_finds_every_pair_that_could_have_met_and_no_other() {
        let (mut found, mut apart) = (0, 0);
        for seed in 1..40u64 {
            let owned = trial(seed * 7919, 40);
            let t = OnTrial::new(&owned);
            let all: Vec<OpId> = (0..t.ops.len()).map(OpId).collect();
            let (odd, even): (Vec<OpId>, Vec<OpId>) = all.iter().partition(|o| o.0 % 2 == 1);
            let check = |relation, a, b| TraceCheck {
                quantifier: Quantifier::Forall,
                relation,
                a,
                b,
                observe: false,
                next: false,
            };
            let (met, left) = visited(&t, (&odd, &even), &check(TraceRelation::Overlaps, 0, 1));
            found += met.len();
            apart += left.apart;
            visited(&t, (&all, &odd), &check(TraceRelation::Serializes, 0, 1));
            let (_, left) = visited(&t, (&all, &all), &check(TraceRelation::Precedes, 0, 0));
            // Pairs with an op of no launch call are counted once each.
            let calls = all
                .iter()
                .filter(|&&o| t.timeline.host_call(o).is_some())
                .count();
            let pairs = |n: usize| n * n.saturating_sub(1) / 2;
            assert_eq!(left.unordered, pairs(all.len()) - pairs(calls));
        }
        // Both kinds are there: pairs that met, and pairs that could not have.
        assert!(found > 100 && apart > 100, "{found} met, {apart} apart");
    }
}
