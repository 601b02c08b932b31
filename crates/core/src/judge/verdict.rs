//! Verdicts: many trials of one claim, counted as litmus tools count them.
//!
//! Each trial is positive (every check holds), negative (some check is refuted by the stamps) or
//! undecided (some check could not be decided, none refuted). A claim asks for N decided trials:
//! - **Violated** if any trial is negative: one counterexample refutes a claim about ordering;
//! - otherwise **Holds** if at least N trials are positive;
//! - otherwise **Inconclusive** (the reason of the first undecided trial comes with it).
//!
//! An undecided trial carries no evidence either way (typically the host issued an op late, so
//! the timeline cannot tell a dependency from late issue), so the lab replaces undecided trials
//! with new ones, up to a bounded number of extra trials. A claim whose experiment cannot decide
//! runs out of that budget and stays Inconclusive.
//!
//! The counts read like herd7's `Observation` line over the decided trials: "Always 5/5",
//! "Sometimes 3/20", "Never 0/20", followed by the undecided trials if there were any.

pub use super::counts::Counts;
use crate::judge::relation::{Check, HostWaits, Measurement, Truth, Value};
use crate::measured::calibration::Tolerances;
use crate::measured::sharing::Sharing;
use crate::measured::timeline::Timeline;
use crate::program::Program;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The verdict a claim's author expects. A claim from the notes that is a known misconception is
/// expected to be `Violated`; the run passes when the observed verdict equals the expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    Holds,
    Violated,
}

/// The three-valued outcome of a claim over its trials.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Holds,
    Violated,
    Inconclusive,
}

impl Verdict {
    pub fn matches(self, expect: Expect) -> bool {
        matches!(
            (self, expect),
            (Verdict::Holds, Expect::Holds) | (Verdict::Violated, Expect::Violated)
        )
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Verdict::Holds => "Holds",
            Verdict::Violated => "Violated",
            Verdict::Inconclusive => "Inconclusive",
        })
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Expect::Holds => "Holds",
            Expect::Violated => "Violated",
        })
    }
}

impl Counts {
    /// Counts one trial: disturbed (set aside), or by its truth.
    pub fn count(&mut self, disturbed: bool, truth: Truth) {
        match (disturbed, truth) {
            (true, _) => self.disturbed += 1,
            (false, Truth::Yes) => self.positive += 1,
            (false, Truth::No) => self.negative += 1,
            (false, Truth::Unknown) => self.undecided += 1,
        }
    }
}

impl Verdict {
    /// The verdict of counted trials, for the lab and for traces alike: Violated on any
    /// negative trial, Holds on at least `wanted` positive ones (and one at least), else
    /// Inconclusive. The lab wants the trials it asked for (a retried trial replaces an
    /// undecided one); a trace, whose trials cannot be run again, wants every one.
    pub fn of(counts: &Counts, wanted: usize) -> Verdict {
        if counts.negative > 0 {
            Verdict::Violated
        } else if counts.positive >= wanted.max(1) {
            Verdict::Holds
        } else {
            Verdict::Inconclusive
        }
    }
}

/// One trial: every check measured on its timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialOutcome {
    pub truth: Truth,
    pub measurements: Vec<Measurement>,
    /// Why the trial carries no evidence although it was measured: what disturbed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbed: Option<String>,
}

impl TrialOutcome {
    /// The outcome with its measurements' numbers and truths, not their reasons: what a run
    /// keeps of a trial its reports do not print.
    pub fn without_reasons(&self) -> TrialOutcome {
        TrialOutcome {
            truth: self.truth,
            measurements: (self.measurements.iter())
                .map(|m| Measurement {
                    reason: String::new(),
                    ..*m
                })
                .collect(),
            disturbed: self.disturbed.clone(),
        }
    }
}

/// A check's measured quantity over all trials.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRange {
    pub check: Check,
    /// The smallest and largest number measured, in the check's unit (ns for times; typed:
    /// [`CheckRange::values`]).
    pub min_ns: i64,
    pub max_ns: i64,
}

impl CheckRange {
    /// The smallest and largest value measured, with their unit.
    pub fn values(&self) -> (Value, Value) {
        (self.check.value(self.min_ns), self.check.value(self.max_ns))
    }
}

/// An observation over all trials: how often it held, and the range of its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observed {
    pub check: Check,
    pub counts: Counts,
    /// The smallest and largest number measured, in the check's unit (typed:
    /// [`Observed::values`]).
    pub min_ns: i64,
    pub max_ns: i64,
}

impl Observed {
    /// The smallest and largest value measured, with their unit.
    pub fn values(&self) -> (Value, Value) {
        (self.check.value(self.min_ns), self.check.value(self.max_ns))
    }
}

/// Measures `checks` on every timeline of `program` as observations.
pub fn observe(
    program: &Program,
    checks: &[Check],
    timelines: &[Timeline],
    tol: &Tolerances,
) -> Vec<Observed> {
    if checks.is_empty() {
        return Vec::new(); // and no model of the program built for nothing
    }
    let waits = HostWaits::of(program);
    checks
        .iter()
        .filter_map(|&check| {
            let ms: Vec<Measurement> = timelines
                .iter()
                .map(|t| check.measure_with(&waits, t, tol))
                .collect();
            let mut counts = Counts::default();
            for m in &ms {
                match m.truth {
                    Truth::Yes => counts.positive += 1,
                    Truth::No => counts.negative += 1,
                    Truth::Unknown => counts.undecided += 1,
                }
            }
            Some(Observed {
                check,
                counts,
                min_ns: ms.iter().map(|m| m.value_ns).min()?,
                max_ns: ms.iter().map(|m| m.value_ns).max()?,
            })
        })
        .collect()
}

/// "A→B gap +1.20 µs" or "A→B gap +1.20..+1.41 µs".
fn range(check: &Check, min: i64, max: i64, program: &Program) -> String {
    let (what, negate) = check.quantity_for(min, max);
    let (lo, hi) = match negate {
        // All below zero: shown as sizes, smallest first.
        true => (
            check.value(max.saturating_neg()),
            check.value(min.saturating_neg()),
        ),
        false => (check.value(min), check.value(max)),
    };
    if min == max {
        format!("{} {what} {lo}", check.describe(program))
    } else {
        format!("{} {what} {lo}..{hi}", check.describe(program))
    }
}

/// The verdict with everything needed to believe it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judgement {
    pub verdict: Verdict,
    pub counts: Counts,
    pub tolerances: Tolerances,
    pub trials: Vec<TrialOutcome>,
    /// Per check, the range of the measured gap or overlap over the trials.
    pub ranges: Vec<CheckRange>,
    /// The claim's observations: measured on every trial, not part of the verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observed: Vec<Observed>,
    /// The trial that best shows the verdict: the first negative trial of a violated claim, the
    /// first undecided one of an inconclusive claim, else the median-makespan trial.
    pub witness: Option<usize>,
    /// For programs with copies: which witness saw them and how well it was aligned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copies_seen_by: Option<String>,
    /// For programs on several devices: how well each device's clock was aligned to the host's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices_aligned: Option<String>,
    /// When trials were disturbed: how many, by what, and who else used the GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<String>,
}

impl Judgement {
    /// The measurement that decided the verdict, if one check did.
    pub fn deciding(&self) -> Option<&Measurement> {
        let wanted = match self.verdict {
            Verdict::Violated => Truth::No,
            Verdict::Inconclusive => Truth::Unknown,
            Verdict::Holds => return None,
        };
        let trial = self.trials.get(self.witness?)?;
        if trial.disturbed.is_some() {
            return None;
        }
        trial.measurements.iter().find(|m| m.truth == wanted)
    }

    /// One line of evidence: the range of every check, then the deciding measurement's reason.
    pub fn evidence(&self, program: &Program) -> String {
        let mut parts: Vec<String> = self
            .ranges
            .iter()
            .map(|r| range(&r.check, r.min_ns, r.max_ns, program))
            .collect();
        parts.extend(self.observed.iter().map(|o| {
            format!(
                "observed {} (yes {})",
                range(&o.check, o.min_ns, o.max_ns, program),
                o.counts
            )
        }));
        if let (None, Some(w)) = (self.deciding(), self.witness) {
            for m in &self.trials[w].measurements {
                if m.check.reason_is_evidence() {
                    parts.push(format!(
                        "trial {}: {} {}",
                        w + 1,
                        m.check.describe(program),
                        m.reason
                    ));
                }
            }
        }
        if let Some(seen) = &self.copies_seen_by {
            parts.push(seen.clone());
        }
        if let Some(aligned) = &self.devices_aligned {
            parts.push(aligned.clone());
        }
        if let Some(d) = &self.disturbance {
            parts.push(d.clone());
        }
        if let (Some(m), Some(w)) = (self.deciding(), self.witness) {
            parts.push(format!(
                "trial {}: {} {}",
                w + 1,
                m.check.describe(program),
                m.reason
            ));
        }
        parts.join("; ")
    }
}

/// Judges `checks` on every timeline with one set of tolerances; `wanted` is the number of
/// positive trials a Holds needs. Every trial counts: see [`judge_claim`] for the judgement that
/// leaves disturbed trials out.
pub fn judge(
    program: &Program,
    checks: &[Check],
    timelines: &[Timeline],
    tol: &Tolerances,
    wanted: usize,
) -> Judgement {
    let waits = HostWaits::of(program);
    judge_marked(&waits, checks, timelines, &[], tol, wanted)
}

/// Judges a program's trials, leaving out those that something outside the program disturbed:
/// unexplained stalls in the stamps ([`crate::judge::disturbance`]), or, for checks that the stamps
/// cannot protect, another process busy on the GPU during the claim (`sharing`).
pub fn judge_claim(
    program: &Program,
    checks: &[Check],
    timelines: &[Timeline],
    sharing: Option<&Sharing>,
    tol: &Tolerances,
    wanted: usize,
) -> Judgement {
    judge_claim_in_run(program, checks, timelines, sharing, tol, wanted, None).0
}

/// [`judge_claim`] for a claim of a run that shows a neighbour elsewhere (`elsewhere` says how):
/// its trials without a clock sync are judged by
/// [`crate::judge::disturbance::Marks::mark_unsynced`]. Also says whether the claim's own trials
/// show a neighbour ([`crate::judge::disturbance::Marks::shows_neighbour`]), which is what makes
/// a run show one.
pub fn judge_claim_in_run(
    program: &Program,
    checks: &[Check],
    timelines: &[Timeline],
    sharing: Option<&Sharing>,
    tol: &Tolerances,
    wanted: usize,
    elsewhere: Option<&str>,
) -> (Judgement, bool) {
    let (mut marks, waits) =
        crate::judge::disturbance::marks_and_waits(program, checks, timelines, sharing, tol);
    let showing = marks.shows_neighbour();
    if let Some(why) = elsewhere {
        marks.mark_unsynced(checks, timelines, why);
    }
    let mut judgement = judge_marked(&waits, checks, timelines, &marks.trials, tol, wanted);
    judgement.counts.overlapped = marks.overlapped;
    judgement.disturbance = marks.summary(&judgement.counts);
    (judgement, showing)
}

/// [`judge`], with `disturbed[i]` saying why trial `i` carries no evidence (missing: none).
fn judge_marked(
    waits: &HostWaits,
    checks: &[Check],
    timelines: &[Timeline],
    disturbed: &[Option<String>],
    tol: &Tolerances,
    wanted: usize,
) -> Judgement {
    let trials: Vec<TrialOutcome> = timelines
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let measurements: Vec<Measurement> = checks
                .iter()
                .map(|c| c.measure_with(waits, t, tol))
                .collect();
            TrialOutcome {
                truth: Truth::all(measurements.iter().map(|m| m.truth)),
                measurements,
                disturbed: disturbed.get(i).cloned().flatten(),
            }
        })
        .collect();
    let mut counts = Counts::default();
    for t in &trials {
        counts.count(t.disturbed.is_some(), t.truth);
    }
    let verdict = Verdict::of(&counts, wanted);
    let first = |truth| {
        trials
            .iter()
            .position(|t: &TrialOutcome| t.disturbed.is_none() && t.truth == truth)
    };
    let witness = match verdict {
        Verdict::Violated => first(Truth::No),
        Verdict::Inconclusive => {
            first(Truth::Unknown).or_else(|| trials.iter().position(|t| t.disturbed.is_some()))
        }
        Verdict::Holds => median_makespan(timelines, &trials),
    };
    // Ranges over the trials that count, unless none does.
    let counted: Vec<&TrialOutcome> = match trials.iter().filter(|t| t.disturbed.is_none()) {
        calm if counts.disturbed < trials.len() => calm.collect(),
        _ => trials.iter().collect(),
    };
    let ranges = checks
        .iter()
        .enumerate()
        .filter_map(|(i, &check)| {
            let values = counted.iter().map(|t| t.measurements[i].value_ns);
            let min = values.clone().min()?;
            let max = values.max()?;
            Some(CheckRange {
                check,
                min_ns: min,
                max_ns: max,
            })
        })
        .collect();
    Judgement {
        verdict,
        counts,
        tolerances: *tol,
        trials,
        ranges,
        observed: Vec::new(),
        witness,
        copies_seen_by: copies_seen_by(timelines),
        devices_aligned: devices_aligned(timelines),
        disturbance: None,
    }
}

/// The positive trial of median makespan.
fn median_makespan(timelines: &[Timeline], trials: &[TrialOutcome]) -> Option<usize> {
    let mut order: Vec<usize> = (0..timelines.len())
        .filter(|&i| trials[i].disturbed.is_none() && trials[i].truth == Truth::Yes)
        .collect();
    order.sort_by_key(|&i| timelines[i].makespan_ns());
    order.get(order.len() / 2).copied()
}

/// "device clocks aligned to the host's within gpu0 ±0.52..0.61 µs, gpu1 ±0.50..0.70 µs over 5
/// trials; a relation across devices allows both", for programs on several devices.
fn devices_aligned(timelines: &[Timeline]) -> Option<String> {
    let mut per: std::collections::BTreeMap<u32, (u64, u64)> = Default::default();
    let mut trials = 0;
    for t in timelines.iter().filter(|t| t.devices.len() > 1) {
        trials += 1;
        for c in &t.devices {
            let e = per.entry(c.device).or_insert((u64::MAX, 0));
            *e = (e.0.min(c.error_ns), e.1.max(c.error_ns));
        }
    }
    if per.len() < 2 {
        return None;
    }
    let each: Vec<String> = per
        .iter()
        .map(|(d, (lo, hi))| {
            format!(
                "gpu{d} ±{:.2}..{:.2} µs",
                *lo as f64 / 1e3,
                *hi as f64 / 1e3
            )
        })
        .collect();
    Some(format!(
        "device clocks aligned to the host's within {} over {trials} trials; a relation across \
         devices allows both",
        each.join(", ")
    ))
}

/// "copy spans from CUPTI activity records, aligned within ±0.52..1.10 µs over 5 trials (12
/// stamped kernels cross-checked, largest disagreement 1.10 µs)".
fn copies_seen_by(timelines: &[Timeline]) -> Option<String> {
    let syncs: Vec<_> = timelines.iter().filter_map(|t| t.witness).collect();
    let first = syncs.first()?;
    let lo = syncs.iter().map(|s| s.error_ns).min()?;
    let hi = syncs.iter().map(|s| s.error_ns).max()?;
    let worst = syncs.iter().map(|s| s.disagreement_ns).max()?;
    let anchors: u32 = syncs.iter().map(|s| s.anchors).sum();
    Some(format!(
        "{}, aligned within ±{:.2}..{:.2} µs over {} trials ({anchors} stamped kernels \
         cross-checked, largest disagreement {:.2} µs)",
        first.kind.strength(),
        lo as f64 / 1e3,
        hi as f64 / 1e3,
        syncs.len(),
        worst as f64 / 1e3
    ))
}
