//! Trial collection: running a program on the open GPU until enough trials are decided.
//!
//! Used by the lab (claims run in this process) and by the child (claims run under another
//! environment), so it sits below both. It turns the GPU's plain [`Execution`] into the results
//! file's [`Trials`], and asks the verdict rules which trials count.

use crate::border::error::Error;
use crate::gpu::{Execution, Gpu};
use crate::judge::counts::Counts;
use crate::judge::relation::Check;
use crate::judge::verdict::{judge_claim_in_run, Judgement};
use crate::measured::calibration::Calibration;
use crate::measured::timeline::Timeline;
use crate::measured::timing::ClaimTiming;
use crate::program::Program;
use crate::record::Trials;
use std::time::{Duration, Instant};

pub use crate::border::limits::MAX_TRIAL_FACTOR;
/// Pause before the k-th batch of replacement trials, times k. A trial lasts a fraction of a
/// millisecond, so a host disturbance of a few milliseconds (the issuing thread descheduled) can
/// leave a whole batch undecided; replacements run after it has passed. Measured on an H100: one
/// child run in 320 claim runs had 13 of 15 back-to-back trials issued 35–60 µs late.
///
/// A pause follows only a batch that left trials undecided or disturbed (a batch without any
/// decides the claim, and nothing is replaced). 5 ms is longer than the scheduler slices that
/// deschedule a thread on an idle machine (0.75–3 ms on Linux's default CFS/EEVDF settings), and
/// the growth (5, 10, 15 ms…: 30 ms by the third batch) still outlasts a longer disturbance. It
/// was 25 ms; a claim whose trials are undecided for a reason of its own (too short a spin) then
/// slept 25 + 50 + 75 + … ms for nothing, and the run timing (`ClaimTiming::paused_ns`) shows
/// what a claim slept.
const RETRY_PAUSE: Duration = Duration::from_millis(5);

/// The trials of one execution on `gpu`, as the results file keeps them (no sharing seen yet:
/// the lab adds that).
pub fn trials_of(gpu: &Gpu, wanted: usize, exec: Execution) -> Trials {
    Trials {
        calibration: gpu.calibration().clone(),
        wanted,
        timelines: exec.timelines,
        gpu_time_ns: exec.gpu_time_ns,
        warnings: exec.warnings,
        sharing: None,
        timing: Some(exec.timing),
        left_out: 0,
    }
}

/// Runs exactly `trials` trials of `program` on `gpu`.
pub fn run(gpu: &Gpu, program: &Program, trials: usize) -> Result<Trials, Error> {
    Ok(trials_of(gpu, trials, gpu.run(program, trials)?))
}

/// A claim's time budget, its first batch included: this many times the wall of its first
/// batch (so replacements get as long as the first batch took)…
pub const BUDGET_FACTOR: u32 = 2;
/// …and at least this long. Beside a neighbour that takes time slices of about 2 ms (an H100
/// beside a loop of bf16 matrix products), a claim of short trials needs a few slices of our own to
/// decide; a claim that fails for a reason of its own is given up after it.
pub const BUDGET_FLOOR: Duration = Duration::from_millis(40);
/// While no trial has counted and some were disturbed by a neighbour, replacements are probes of one trial, and
/// get the first batch's wall divided by this (the budget floor still holds); the first trial that
/// counts restores the full budget. In the five contended catalogue runs recorded on the H100
/// (`tests/fixtures/contended-*`), 119 claims had every trial of their first batch disturbed;
/// they took 49–88 % of each run's claim time, and retries decided 3 of them, all beside a bursty
/// catalogue loop, and all with the first replacement trial.
pub const PROBE_BUDGET_DIVISOR: u32 = 4;

/// What to do after each batch of a claim's trials: how many to run next, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPlan {
    pub wanted: usize,
    /// The wall of the first batch as it ran: one trial when a scout was disturbed
    /// ([`collect_trials`]).
    pub first: Duration,
    /// The wall of a first batch of `wanted` trials: `first`, or the scout's wall times `wanted`.
    pub batch: Duration,
}

impl RetryPlan {
    /// The next batch's size after `counts` over `ran` trials, `elapsed` since the first batch
    /// began (judging left out); `neighbour`: the trials show one (a stall, a copy below its
    /// pace), not only a host hiccup, which passes. `None` to stop: decided (one counterexample
    /// decides, or `wanted` positives), no room left under [`MAX_TRIAL_FACTOR`], or the budget
    /// spent.
    pub fn next(
        &self,
        counts: &Counts,
        neighbour: bool,
        ran: usize,
        elapsed: Duration,
    ) -> Option<usize> {
        let missing = self.wanted.saturating_sub(counts.positive);
        let room = (MAX_TRIAL_FACTOR * self.wanted).saturating_sub(ran);
        if counts.negative > 0 || missing == 0 || room == 0 {
            return None;
        }
        let probing = counts.positive == 0 && counts.disturbed > 0 && neighbour;
        let budget = match probing {
            true => self.first + self.batch / PROBE_BUDGET_DIVISOR,
            false => self.batch * BUDGET_FACTOR,
        };
        if elapsed >= budget.max(BUDGET_FLOOR) {
            return None;
        }
        Some(if probing { 1 } else { missing.min(room) })
    }
}

/// Runs `program` until `wanted` trials are decided by `checks`: undecided and disturbed trials
/// carry no evidence, so they are replaced, in batches spaced by a growing pause ([`RETRY_PAUSE`])
/// so that one disturbance (a host hiccup, a neighbour's burst) cannot spoil them all. The
/// replacements have a time budget rather than a count ([`RetryPlan`]): [`BUDGET_FACTOR`] times
/// the first batch's wall, at least [`BUDGET_FLOOR`], never more than [`MAX_TRIAL_FACTOR`] ×
/// `wanted` trials in all; a claim whose first batch a neighbour spoiled probes one trial at a
/// time on a quarter of that until one counts. So a short claim beside a neighbour retries until
/// its trials land between the neighbour's slices, and a long one that a neighbour spoils every
/// time costs about 1.25 times its first batch, not twice. Stops at the first negative trial's batch, since
/// one counterexample already decides. Without checks, runs exactly `wanted` trials.
///
/// `scout`: a neighbour was busy on the GPU when the claim began (NVML's look after the claim
/// before). Then one trial runs first, and the rest of the first batch only if it was not
/// disturbed; a disturbed scout makes the scout itself the first batch, so the probes that follow
/// get a quarter of a whole batch's wall estimated from it (the budget floor still holds), and a
/// probe that counts restores the full budget of a whole batch. Beside a loop of bf16 matrix
/// products on an H100, every trial of the scenario claims (5–30 ms, longer than the neighbour's
/// 2 ms time slices) was disturbed, and their first batches and probes took two thirds of the run.
pub fn collect_trials(
    gpu: &Gpu,
    program: &Program,
    checks: &[Check],
    wanted: usize,
    scout: bool,
) -> Result<Trials, Error> {
    collect_judged(gpu, program, checks, wanted, scout).map(|(trials, _)| trials)
}

/// [`collect_trials`], with the judgement of all the trials that decided there were enough
/// (judged with no neighbour seen; `None` without checks), for the record to take where no
/// neighbour was busy ([`crate::record::ClaimRecord::judged_with`]).
pub fn collect_judged(
    gpu: &Gpu,
    program: &Program,
    checks: &[Check],
    wanted: usize,
    scout: bool,
) -> Result<(Trials, Option<Judgement>), Error> {
    let started = Instant::now();
    // Checks that compare amounts of host time need the host's pace watched.
    let pace = crate::judge::slowdown::watched(checks);
    let scouting = scout && wanted > 1 && !checks.is_empty();
    let first = if scouting { 1 } else { wanted };
    let mut trials = trials_of(gpu, wanted, gpu.run_watched(program, first, pace)?);
    if scouting && !disturbed(program, checks, &trials.timelines, &trials.calibration) {
        append(&mut trials, gpu.run_watched(program, wanted - 1, pace)?);
    }
    // A disturbed scout ran alone: a whole first batch would have taken `wanted` times as long.
    let first = started.elapsed();
    let ran = trials.timelines.len().clamp(1, wanted.max(1));
    let plan = RetryPlan {
        wanted,
        first,
        batch: first / ran as u32 * wanted.max(1) as u32,
    };
    let judged = replace(gpu, program, checks, plan, &mut trials, started)?;
    if let Some(t) = &mut trials.timing {
        t.wall_ns = started.elapsed().as_nanos() as u64;
    }
    Ok((trials, judged))
}

/// A second look at a claim that a neighbour left undecided with some evidence in hand (see
/// `Lab::check_all`): replacements as in [`collect_trials`], later in the run, where a
/// neighbour that comes and goes may have left the GPU. Its budget counts from a first batch
/// estimated from the trials' own GPU time.
pub fn collect_more(
    gpu: &Gpu,
    program: &Program,
    checks: &[Check],
    trials: &mut Trials,
) -> Result<(), Error> {
    let started = Instant::now();
    let ran = trials.timelines.len().max(1) as u64;
    let first = Duration::from_nanos(trials.gpu_time_ns / ran * trials.wanted as u64);
    let plan = RetryPlan {
        wanted: trials.wanted,
        first,
        batch: first,
    };
    // The batches' own walls are summed into the claim's as they come; the second look's wall
    // replaces them.
    let before = trials.timing.as_ref().map_or(0, |t| t.wall_ns);
    // With no trial counted yet, one trial first: if a neighbour disturbs that one too, the claim
    // stays as it was.
    let so_far = counts(
        program,
        checks,
        &trials.timelines,
        &trials.calibration,
        trials.wanted,
    );
    let counted = so_far.positive + so_far.negative;
    let pace = crate::judge::slowdown::watched(checks);
    let go_on = counted > 0 || {
        let scout = gpu.run_watched(program, 1, pace)?;
        let clean = !disturbed(program, checks, &scout.timelines, &trials.calibration);
        append(trials, scout);
        clean
    };
    if go_on {
        replace(gpu, program, checks, plan, trials, started)?;
    }
    if let Some(t) = &mut trials.timing {
        t.wall_ns = before.saturating_add(started.elapsed().as_nanos() as u64);
    }
    Ok(())
}

/// Replaces the trials that carry no evidence, batch after batch, as `plan` says; the
/// judgement of all of them that ended it (`None` without checks).
fn replace(
    gpu: &Gpu,
    program: &Program,
    checks: &[Check],
    plan: RetryPlan,
    trials: &mut Trials,
    started: Instant,
) -> Result<Option<Judgement>, Error> {
    if checks.is_empty() {
        return Ok(None);
    }
    let pace = crate::judge::slowdown::watched(checks);
    let mut lab = ClaimTiming::default();
    let tol = trials.calibration.tolerances();
    let mut last = None;
    for batch in 1.. {
        let judging = Instant::now();
        let (judged, neighbour) = judge_claim_in_run(
            program,
            checks,
            &trials.timelines,
            None,
            &tol,
            plan.wanted,
            None,
        );
        lab.judge_ns += judging.elapsed().as_nanos() as u64;
        let elapsed = started
            .elapsed()
            .saturating_sub(Duration::from_nanos(lab.judge_ns));
        let ran = trials.timelines.len();
        let Some(size) = plan.next(&judged.counts, neighbour, ran, elapsed) else {
            last = Some(judged);
            break;
        };
        let pausing = Instant::now();
        std::thread::sleep(RETRY_PAUSE * batch);
        lab.paused_ns += pausing.elapsed().as_nanos() as u64;
        append(trials, gpu.run_watched(program, size, pace)?);
    }
    if let Some(t) = &mut trials.timing {
        t.judge_ns += lab.judge_ns;
        t.paused_ns += lab.paused_ns;
    }
    Ok(last)
}

/// Whether a scout trial ([`collect_trials`], [`collect_more`]) was disturbed.
fn disturbed(
    program: &Program,
    checks: &[Check],
    timelines: &[Timeline],
    calibration: &Calibration,
) -> bool {
    counts(program, checks, timelines, calibration, 1).disturbed > 0
}

/// How the verdict rules count `timelines`, judged alone (NVML's looks are the lab's).
fn counts(
    program: &Program,
    checks: &[Check],
    timelines: &[Timeline],
    calibration: &Calibration,
    wanted: usize,
) -> Counts {
    let tol = calibration.tolerances();
    judge_claim_in_run(program, checks, timelines, None, &tol, wanted, None)
        .0
        .counts
}

/// Adds a later execution's trials to `trials`.
fn append(trials: &mut Trials, more: Execution) {
    trials.timelines.extend(more.timelines);
    trials.gpu_time_ns += more.gpu_time_ns;
    if let Some(t) = &mut trials.timing {
        t.absorb(&more.timing);
    }
}
