//! Judging a claim on a trace: each check over its selections' ops, trial by trial, with the
//! lab's relations and tolerances, counted as litmus counts ("Always 5/5 steps").
//!
//! A quantified check ranges over pairs (a of A, b of B, a ≠ b) **that could have run
//! together**: the one that started later was ready (issued, plus the launch latency and
//! jitter the trace shows) before the other ended. A pair that could not have (one issued only
//! after the other had ended) says nothing about waiting or overlapping and is left out,
//! counted in the reason. `exists` holds when some pair shows the relation and fails when every
//! pair refutes it; `forall` fails at the first refuting pair; `~exists` fails at the first pair
//! that shows it and holds when every pair refutes it. Anything else is Inconclusive, with the
//! undecided pair's reason. An order or a missing overlap comes with what held the later op
//! back: the op whose end it started after.

use super::checks::{measure, measurements, CheckOutcome};
use super::on_trial::OnTrial;
use super::pairs::{MAX_PAIRS, PAIRS_PER_OP};
use super::run_budget::{RunBudget, Unjudged};
use super::select::{KindFilter, Selection};
use super::trace_claim::TraceClaim;
use crate::judge::counts::Counts;
use crate::judge::relation::Truth;
use crate::judge::verdict::Verdict;
use crate::program::OpId;
use crate::trace::{clip, clip_at, Cut, GpuKind, Pattern, Trace, TraceError, TrialSpec};

/// One trial of a trace: its checks (the lab's trial is
/// [`crate::judge::verdict::TrialOutcome`]). The ops of each selection are not kept: a claim
/// of thousands of trials held them all until its verdict (a tenth of what `check` took on the
/// docs' benchmark, issue 51); [`members`] finds them again for the trial drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedTrial {
    pub name: String,
    pub truth: Truth,
    pub checks: Vec<CheckOutcome>,
}

/// A claim's verdict on a trace, with its evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceJudgement {
    pub verdict: Verdict,
    pub counts: Counts,
    pub trials: Vec<TracedTrial>,
    /// The trial that best shows the verdict (first negative, first undecided, else first).
    pub witness: Option<usize>,
    pub tolerances: String,
}

impl TraceJudgement {
    /// One line: the value range of each deciding check over the trials, then the witness
    /// trial's reasons.
    pub fn evidence(&self, claim: &TraceClaim) -> String {
        let mut parts = Vec::new();
        for (i, c) in claim.checks.iter().enumerate() {
            let values: Vec<&CheckOutcome> = (self.trials.iter())
                .map(|t| &t.checks[i])
                .filter(|o| o.measured.is_some() && o.truth != Truth::Unknown)
                .collect();
            let (Some(lo), Some(hi)) = (
                values.iter().min_by_key(|o| o.value_ns),
                values.iter().max_by_key(|o| o.value_ns),
            ) else {
                continue;
            };
            let Some(check) = lo.measured else {
                continue;
            };
            // Every figure reads in its own direction (the lab's words for the check).
            let (what, negate) = check.quantity_for(lo.value_ns, hi.value_ns);
            let v = |x: i64| check.format_value(if negate { x.saturating_neg() } else { x });
            let range = match (lo.value_ns == hi.value_ns, negate) {
                (true, _) => v(lo.value_ns),
                (false, false) => format!("{}..{}", v(lo.value_ns), v(hi.value_ns)),
                (false, true) => format!("{}..{}", v(hi.value_ns), v(lo.value_ns)),
            };
            let observed = if c.observe { "observed " } else { "" };
            parts.push(format!("{observed}{} {what} {range}", claim.describe(c)));
        }
        if let Some(w) = self.witness.and_then(|w| self.trials.get(w)) {
            let wanted = match self.verdict {
                Verdict::Violated => Some(Truth::No),
                Verdict::Inconclusive => Some(Truth::Unknown),
                Verdict::Holds => None,
            };
            for o in &w.checks {
                if wanted.map_or(!o.check.observe, |t| o.truth == t) {
                    parts.push(format!(
                        "{}: {}: {}",
                        w.name,
                        claim.describe(&o.check),
                        o.reason
                    ));
                    if wanted.is_some() {
                        break;
                    }
                }
            }
        }
        parts.join("; ")
    }
}

/// For a selection `in "RANGE"` that took nothing: how many ops other threads issued while the
/// range was open, which `during` would take (PyTorch's autograd thread launches the kernels of
/// a `backward` range opened on the main thread).
fn other_threads(s: &Selection, trace: &Trace, trials: &[Cut]) -> String {
    let Some(range) = &s.within else {
        return String::new();
    };
    let during = Selection {
        within: None,
        during: Some(range.clone()),
        ..s.clone()
    };
    let chosen: Vec<_> = trace.files.iter().map(|f| during.on(f)).collect();
    let n = (trials.iter())
        .flat_map(|t| t.ops.iter())
        .filter(|&&r| chosen[r.0].admits(trace.op(r)))
        .count();
    match n {
        0 => String::new(),
        n => format!(
            ". `in \"{0}\"` takes the ops issued on the range's own thread; other threads \
             issued {n} that match while it was open: `during \"{0}\"` takes them",
            clip(range.text())
        ),
    }
}

/// Judges `claim` on `trace`. Errors are claims that cannot be judged at all on this trace: a
/// trial range it never shows, a selection that holds no op in any trial.
pub fn judge(claim: &TraceClaim, trace: &Trace) -> Result<TraceJudgement, TraceError> {
    judge_in_run(claim, trace, &mut RunBudget::unbounded(), Reasons::Every).map_err(|e| match e {
        Unjudged::Refused(e) => e,
        Unjudged::NoTraces(e) | Unjudged::PastRunBudget(e) => TraceError::Unjudgeable(e),
    })
}

/// Which trials keep the words of their outcomes ([`CheckOutcome::reason`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reasons {
    /// Every trial's: for the outputs that show each trial (`--out`, `--json`, `--junit`).
    Every,
    /// Only those a witness may be ([`TraceJudgement::evidence`] shows the witness's): the
    /// first trial, and the first that refutes and the first undecided. On the docs' 200 MB
    /// trace the words of 1,565 steps were a few MB a claim, held while it was judged.
    Witnesses,
}

/// Judges `claim` on `trace` as one claim of a run, charging `run` its trial ops before any
/// trial is built and each trial's pairs before they are measured: past what is left, it is
/// not judged ([`Unjudged::PastRunBudget`]). `reasons`: which trials keep their words.
pub fn judge_in_run(
    claim: &TraceClaim,
    trace: &Trace,
    run: &mut RunBudget,
    reasons: Reasons,
) -> Result<TraceJudgement, Unjudged> {
    if run.spent() {
        return Err(Unjudged::PastRunBudget(run.past(&claim.id, None)));
    }
    let cuts = cut_trials(claim, trace)?;
    let held: usize = cuts.iter().map(|t| t.ops.len()).sum();
    if !run.take(held) {
        let what = format!("its {} trials hold {held} ops", cuts.len());
        return Err(Unjudged::PastRunBudget(run.past(&claim.id, Some(&what))));
    }
    let chosen = Selections::of(claim, trace);
    every_selection_holds_ops(claim, trace, &cuts, &chosen)?;
    let tol = trace.tolerances.tolerances;
    // A trial of the very ops of one before it (a step range written a thousand times over) is
    // judged once: its outcome is the same, counted again under its own name.
    let earlier = same_ops(&cuts);
    let (most, left) = (super::pairs::pair_bound(trace), run.left());
    let mut pairs = Pairs {
        most,
        bound: most.min(left),
        counted: 0,
    };
    // One trial built at a time: a claim's trials held at once are 35 times their cuts.
    let mut outcomes: Vec<TracedTrial> = Vec::with_capacity(cuts.len());
    // Whether a trial of this truth was seen: a later one can be no witness.
    let mut seen = [false; 3];
    let mut keep = |i: usize, t: &mut TracedTrial| {
        let class = match t.truth {
            Truth::No => 1,
            Truth::Unknown => 2,
            _ => 0,
        };
        let witness = i == 0 || (class > 0 && !seen[class]);
        seen[class] = true;
        if reasons == Reasons::Witnesses && !witness {
            t.checks.iter_mut().for_each(|c| c.reason = String::new());
        }
    };
    for (i, cut) in cuts.iter().enumerate() {
        if let Some(first) = earlier[i].and_then(|j| outcomes.get(j)) {
            let mut again = TracedTrial {
                name: cut.name.clone(),
                ..first.clone()
            };
            keep(i, &mut again);
            outcomes.push(again);
            continue;
        }
        let trial = trace.build(cut);
        let t = OnTrial::new(&trial);
        let m = &chosen.members(trace, &cut.ops);
        if pairs.charge(claim, &t, m, &tol, (i, cuts.len()))? {
            // Not judged: its trial ops are given back, and the claims after it are not judged
            // either (each would count its pairs up to what is left, only to be turned away).
            run.give_back(held);
            let what = format!("its checks would measure over {} pairs", pairs.counted - 1);
            let why = run.past(&claim.id, Some(&what));
            run.end();
            return Err(Unjudged::PastRunBudget(why));
        }
        let checks: Vec<CheckOutcome> = (claim.checks.iter())
            .map(|c| measure(claim, &t, m, c, &tol))
            .collect();
        let mut trial = TracedTrial {
            name: cut.name.clone(),
            truth: Truth::all(checks.iter().filter(|c| !c.check.observe).map(|c| c.truth)),
            checks,
        };
        keep(i, &mut trial);
        outcomes.push(trial);
    }
    let taken = run.take(pairs.counted);
    debug_assert!(taken, "the pairs were counted within what the run had left");
    Ok(counted(outcomes, trace))
}

/// The claim's trials on `trace`, cut; an error where there are none.
fn cut_trials(claim: &TraceClaim, trace: &Trace) -> Result<Vec<Cut>, TraceError> {
    let cuts = (trace.cuts(&claim.trial, &|_| true))
        .map_err(|e| TraceError::Trials(format!("{}: {e}", claim.id)))?;
    let trials: Vec<Cut> = cuts.into_iter().map(|(_, c)| c).collect();
    if !trials.is_empty() {
        return Ok(trials);
    }
    Err(TraceError::Trials(match &claim.trial {
        TrialSpec::EachKernel(p) => format!(
            "{}: no kernel launch matches the trial pattern `{}`; the trace's kernels are \
             named: {}",
            claim.id,
            clip(p.text()),
            shown_names(&trace.kernel_names(), Some(p))
        ),
        TrialSpec::Each(p) => format!(
            "{}: no host range matches the trial pattern `{}`; the trace's ranges are: {}",
            claim.id,
            clip(p.text()),
            match trace.range_names() {
                n if n.is_empty() => "none (a range is read from a complete event, \"ph\": \"X\"; \
                                      begin and end events, \"B\" and \"E\", are not read)"
                    .to_string(),
                n => shown_names(&n, Some(p)),
            }
        ),
        TrialSpec::Whole => format!("{}: the trace holds no op", claim.id),
    }))
}

/// By selection, the ops it takes of the trial of `ops` (the trial's ops, as its cut holds
/// them): op ids of the trial's timeline.
pub fn members(claim: &TraceClaim, trace: &Trace, ops: &[(usize, usize)]) -> Vec<Vec<OpId>> {
    Selections::of(claim, trace).members(trace, ops)
}

/// A claim's selections, each readied once per file, not per trial.
struct Selections<'a>(Vec<Vec<super::select::Chosen<'a>>>);

impl<'a> Selections<'a> {
    fn of(claim: &'a TraceClaim, trace: &'a Trace) -> Selections<'a> {
        Selections(
            (claim.selections.iter())
                .map(|s| trace.files.iter().map(|f| s.on(f)).collect())
                .collect(),
        )
    }

    fn members(&self, trace: &Trace, ops: &[(usize, usize)]) -> Vec<Vec<OpId>> {
        (self.0.iter())
            .map(|by_file| {
                (ops.iter().enumerate())
                    .filter(|(_, &r)| by_file[r.0].admits(trace.op(r)))
                    .map(|(i, _)| OpId(i))
                    .collect()
            })
            .collect()
    }

    /// Whether selection `k` takes an op of any of `trials`.
    fn any(&self, k: usize, trace: &Trace, trials: &[Cut]) -> bool {
        let by_file = &self.0[k];
        (trials.iter().flat_map(|t| t.ops.iter())).any(|&r| by_file[r.0].admits(trace.op(r)))
    }
}

/// An error for a selection that holds no op in any trial, saying what there is instead.
fn every_selection_holds_ops(
    claim: &TraceClaim,
    trace: &Trace,
    trials: &[Cut],
    chosen: &Selections<'_>,
) -> Result<(), TraceError> {
    for (k, s) in claim.selections.iter().enumerate() {
        if chosen.any(k, trace, trials) {
            continue;
        }
        if s.kind == KindFilter::Host {
            let why: Vec<&str> = (trace.files.iter())
                .filter_map(|f| f.host_fn_note.as_deref())
                .collect();
            return Err(TraceError::Unjudgeable(format!(
                "{}: selection {} holds no host function's run in any of the {} trials: {}",
                claim.id,
                s.name,
                trials.len(),
                match why.is_empty() {
                    true => "no host function of the trace opened a range of that name (its \
                             run is seen only as a range it opens, on the thread CUDA runs it on)"
                        .to_string(),
                    false => why.join("; "),
                }
            )));
        }
        let mut names: Vec<String> = (trials.iter())
            .flat_map(|t| t.ops.iter().map(|&r| trace.op(r)))
            .filter(|op| op.kind != GpuKind::HostFn)
            .map(|op| op.name.to_string())
            .collect();
        names.sort();
        names.dedup();
        return Err(TraceError::Unjudgeable(format!(
            "{}: selection {} holds no op in any of the {} trials; the kernels and copies \
             there are named: {}{}",
            claim.id,
            s.name,
            trials.len(),
            shown_names(&names, s.pattern.as_ref()),
            other_threads(s, trace, trials)
        )));
    }
    Ok(())
}

/// The verdict over the trials' outcomes, with its witness.
fn counted(outcomes: Vec<TracedTrial>, trace: &Trace) -> TraceJudgement {
    let mut counts = Counts::default();
    for t in &outcomes {
        counts.count(false, t.truth);
    }
    // Every trial: a trace's trials cannot be run again in place of undecided ones.
    let verdict = Verdict::of(&counts, outcomes.len());
    let first = |truth| outcomes.iter().position(|t| t.truth == truth);
    let witness = match verdict {
        Verdict::Violated => first(Truth::No),
        Verdict::Inconclusive => first(Truth::Unknown),
        Verdict::Holds => Some(0),
    };
    TraceJudgement {
        verdict,
        counts,
        trials: outcomes,
        witness,
        tolerances: trace.tolerances.describe(),
    }
}

/// The pairs a claim's checks measure in its trials, each trial's counted before it is measured,
/// and counted only up to one past `bound`, what the run has left or `most` (the claim's bound,
/// [`MAX_PAIRS`] or more on a large trace): a claim over `most` is refused (twenty trials of
/// 1,000 × 1,000 ops that all ran together are twenty million measurements); one over what the
/// run has left is not judged.
struct Pairs {
    most: usize,
    bound: usize,
    counted: usize,
}

impl Pairs {
    /// Counts trial `i` of `n`'s pairs: an error past the claim's bound; `true` past the run's.
    fn charge(
        &mut self,
        claim: &TraceClaim,
        t: &OnTrial,
        m: &[Vec<OpId>],
        tol: &crate::measured::calibration::Tolerances,
        (i, n): (usize, usize),
    ) -> Result<bool, TraceError> {
        for c in &claim.checks {
            self.counted += measurements(t, m, c, tol, self.bound - self.counted);
            if self.counted > self.most {
                return Err(TraceError::Unjudgeable(format!(
                    "{}: its checks would measure over {} pairs of ops that could have run \
                     together (`{}` reaches the bound in trial {} of {n}; {MAX_PAIRS}, or \
                     {PAIRS_PER_OP} per GPU op of the trace): narrow the selections (a stream, \
                     a range, a name) or cut fewer trials",
                    claim.id,
                    self.most,
                    claim.describe(c),
                    i + 1,
                )));
            }
            if self.counted > self.bound {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// By trial, the first trial before it of the very same ops, if any.
fn same_ops(trials: &[Cut]) -> Vec<Option<usize>> {
    let mut first: std::collections::HashMap<&[(usize, usize)], usize> = Default::default();
    (trials.iter().enumerate())
        .map(|(i, t)| match first.entry(&t.ops[..]) {
            std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(i);
                None
            }
        })
        .collect()
}

/// The first names of a list, for an error: those that hold the longest start of a run of the
/// pattern's own letters first (`my_wanted_kern` of a mistyped `my_wanted_kernl*`), so that the
/// one the user meant is not hidden behind "and 40 more".
fn shown_names(names: &[String], pattern: Option<&Pattern>) -> String {
    const SHOWN: usize = 12;
    if names.is_empty() {
        return "none".into();
    }
    let runs: Vec<&str> = pattern.map_or(Vec::new(), |p| {
        p.text()
            .split(['*', '?'])
            .filter(|r| !r.is_empty())
            .collect()
    });
    // A longer start of a run occurs in a name only where every shorter one does: a binary
    // search over its length.
    let held = |run: &str, n: &str| {
        let ends: Vec<usize> = run.char_indices().map(|(i, c)| i + c.len_utf8()).collect();
        ends.partition_point(|&end| n.contains(&run[..end]))
    };
    let likeness = |n: &str| runs.iter().map(|r| held(r, n)).max().unwrap_or(0);
    let mut ranked: Vec<&String> = names.iter().collect();
    ranked.sort_by_key(|n| std::cmp::Reverse(likeness(n)));
    let mut shown: Vec<String> = (ranked.iter().take(SHOWN))
        .map(|n| format!("`{}`", clip_at(n, 120)))
        .collect();
    if names.len() > SHOWN {
        shown.push(format!("and {} more", names.len() - SHOWN));
    }
    shown.join(", ")
}
