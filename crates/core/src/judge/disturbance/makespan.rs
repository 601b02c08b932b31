//! Makespans a stretch could have turned: a [`Check::Faster`] trial whose outcome would not hold
//! with the phase it went against at the best pace that phase showed in the claim's trials.
//!
//! A neighbour only ever lengthens a phase, and some of its lengthening leaves no stall: on an
//! H100 beside another catalogue run, `scenario.pipeline.8` (8 chunks over 8 streams against the
//! unsplit stages) was decided "Violated, Sometimes 3/4": in one trial the chunked phase took
//! 1.94 ms against 0.9–1.0 ms in the others, 61 µs more than the unsplit phase, with no stall
//! over the threshold and no copy below its pace. The chunked phase's copies ran beside copies of
//! ours all along, and the pace rule ([`super::copy_pace`]) counts only the time a copy ran without
//! other copies of ours, so it could not see them slowed. Such a stretch shows only against the
//! same phase in the claim's other trials.
//!
//! So a trial's outcome counts only if it survives the side it went against at its best:
//! - a No (the fast phase was not faster) only if the fast phase, at its fastest in the claim's
//!   trials, would still not have been faster than this trial's slow phase;
//! - a Yes only if the slow phase, at its fastest in the claim's trials, would still have been
//!   slower than this trial's fast phase.
//!
//! The other side's stretch only made the observed outcome harder to reach, and is not counted
//! (as for host times in [`crate::judge::slowdown`]). The trial that set a side's best is never
//! marked for it. On the idle GPU a trial is marked only where the claim's trials disagree by
//! more than the outcome's margin: re-judged, one recorded idle run moved, by two trials whose
//! unsplit copy ran 40–60 % slower than in the others (`scenario.pipeline.1` on an H200). A claim
//! whose two phases lie within a few percent of each other can lose trials to a whole trial run
//! uniformly slower; no catalogue claim is that close.
//!
//! What the rule cannot see is a neighbour that stretched the same side in every trial, best
//! included; against that stand the copy rates measured alone ([`super::copy_pace`]) and, for
//! makespans without copies, the blanket rule beside a busy neighbour. A bound from below on
//! each phase (its spins' lengths and its copies at their calibrated rates) would close that too;
//! it is not built yet.

use crate::judge::relation::{sides, Check, Sides};
use crate::measured::calibration::Tolerances;
use crate::measured::timeline::Timeline;
use crate::program::Program;

/// Per trial, why its makespan comparison may be a stretch's doing, or `None`.
pub fn turned(
    program: &Program,
    checks: &[Check],
    timelines: &[Timeline],
    tol: &Tolerances,
) -> Vec<Option<String>> {
    let mut found = vec![None; timelines.len()];
    for check in checks {
        let Check::Faster { slow, fast } = *check else {
            continue;
        };
        let all: Vec<Option<Sides>> = timelines
            .iter()
            .map(|t| sides(t, slow, fast, tol))
            .collect();
        let best = |side: fn(&Sides) -> i64| all.iter().flatten().map(side).min();
        let (Some(best_slow), Some(best_fast)) = (best(|s| s.slow_ns), best(|s| s.fast_ns)) else {
            continue;
        };
        for (mark, s) in found.iter_mut().zip(&all) {
            let Some(s) = s.filter(|_| mark.is_none()) else {
                continue;
            };
            let saved = s.slow_ns.saturating_sub(s.fast_ns);
            let (side, took, at_best, other) = if saved > s.slack_ns {
                if best_slow.saturating_sub(s.fast_ns) > s.slack_ns {
                    continue;
                }
                ("slow", s.slow_ns, best_slow, s.fast_ns)
            } else if saved < -s.slack_ns {
                if s.slow_ns.saturating_sub(best_fast) < -s.slack_ns {
                    continue;
                }
                ("fast", s.fast_ns, best_fast, s.slow_ns)
            } else {
                continue;
            };
            *mark = Some(format!(
                "disturbed: in {} the {side} phase took {} here and {} at best in the claim's \
                 trials, and at its best the outcome would have turned (the other phase took \
                 {}): something slowed it without a stall",
                check.describe(program),
                millis(took),
                millis(at_best),
                millis(other)
            ));
        }
    }
    found
}

fn millis(ns: i64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}
