//! Trial collection: running a program on the open GPU until enough trials are decided.
//!
//! Used by the lab (claims run in this process) and by the child (claims run under another
//! environment), so it sits below both. It turns the GPU's plain [`Execution`] into the results
//! file's [`Trials`], and asks the verdict rules which trials count.

use crate::border::error::Error;
use crate::gpu::{Execution, Gpu};
use crate::judge::relation::Check;
use crate::judge::verdict::judge_claim;
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
pub(crate) fn trials_of(gpu: &Gpu, wanted: usize, exec: Execution) -> Trials {
    Trials {
        calibration: gpu.calibration().clone(),
        wanted,
        timelines: exec.timelines,
        gpu_time_ns: exec.gpu_time_ns,
        warnings: exec.warnings,
        sharing: None,
        timing: Some(exec.timing),
    }
}

/// Runs exactly `trials` trials of `program` on `gpu`.
pub(crate) fn run(gpu: &Gpu, program: &Program, trials: usize) -> Result<Trials, Error> {
    Ok(trials_of(gpu, trials, gpu.run(program, trials)?))
}

/// A claim's time budget for replacement trials: this many times the wall of its first batch…
pub const BUDGET_FACTOR: u32 = 2;
/// …and at least this long. Beside a neighbour that takes time slices of about 2 ms (an H100
/// beside a loop of bf16 matrix products), a claim of short trials needs a few slices of our own to
/// decide; a claim that fails for a reason of its own is given up after it.
pub const BUDGET_FLOOR: Duration = Duration::from_millis(40);

/// Runs `program` until `wanted` trials are decided by `checks`: undecided and disturbed trials
/// carry no evidence, so they are replaced, in batches spaced by a growing pause ([`RETRY_PAUSE`])
/// so that one disturbance (a host hiccup, a neighbour's burst) cannot spoil them all. The
/// replacements have a time budget rather than a count: [`BUDGET_FACTOR`] times the first batch's
/// wall, at least [`BUDGET_FLOOR`], and never more than [`MAX_TRIAL_FACTOR`] × `wanted` trials in
/// all. So a short claim beside a neighbour retries until its trials land between the
/// neighbour's slices, and a long one costs at most three times its first batch. Stops at the
/// first negative trial's batch, since one counterexample already decides. Without checks, runs
/// exactly `wanted` trials.
pub(crate) fn collect_trials(
    gpu: &Gpu,
    program: &Program,
    checks: &[Check],
    wanted: usize,
) -> Result<Trials, Error> {
    let started = Instant::now();
    // Checks that compare amounts of host time need the host's pace watched.
    let pace = crate::judge::slowdown::watched(checks);
    let mut trials = trials_of(gpu, wanted, gpu.run_watched(program, wanted, pace)?);
    let budget = (started.elapsed() * BUDGET_FACTOR).max(BUDGET_FLOOR);
    let mut lab = ClaimTiming::default();
    if !checks.is_empty() {
        let tol = trials.calibration.tolerances();
        for batch in 1.. {
            let judging = Instant::now();
            let counts = judge_claim(program, checks, &trials.timelines, None, &tol, wanted).counts;
            lab.judge_ns += judging.elapsed().as_nanos() as u64;
            let missing = wanted.saturating_sub(counts.positive);
            let room = (MAX_TRIAL_FACTOR * wanted).saturating_sub(trials.timelines.len());
            let spent = started.elapsed() >= budget + Duration::from_nanos(lab.judge_ns);
            if counts.negative > 0 || missing == 0 || room == 0 || spent {
                break;
            }
            let pausing = Instant::now();
            std::thread::sleep(RETRY_PAUSE * batch);
            lab.paused_ns += pausing.elapsed().as_nanos() as u64;
            let more = gpu.run_watched(program, missing.min(room), pace)?;
            trials.timelines.extend(more.timelines);
            trials.gpu_time_ns += more.gpu_time_ns;
            if let Some(t) = &mut trials.timing {
                t.absorb(&more.timing);
            }
        }
    }
    if let Some(t) = &mut trials.timing {
        t.judge_ns += lab.judge_ns;
        t.paused_ns += lab.paused_ns;
        t.wall_ns = started.elapsed().as_nanos() as u64;
    }
    Ok(trials)
}
