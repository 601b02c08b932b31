//! The lab: where claims meet the GPU.
//!
//! A [`Lab`] opens the GPU lazily (once per process), runs programs in this process or, when a
//! claim needs an environment the driver reads at start-up, in a child process, and judges the
//! trials. One claim's failure (a bad program, a CUDA error, a child that dies) becomes that
//! claim's record and never stops the others.

use crate::child::{self, ChildRequest, Job, BIN_ENV};
use crate::claim::{Claim, EnvVar};
use crate::error::Error;
use crate::gpu::Gpu;
use crate::program::Program;
use crate::record::{ClaimRecord, Trials};
use crate::relation::Check;
use crate::timing::ClaimTiming;
use crate::verdict::judge_claim;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Environment variable that sets the number of trials per claim.
pub const TRIALS_ENV: &str = "STREAM_LITMUS_TRIALS";
/// Trials per claim unless [`TRIALS_ENV`] says otherwise.
pub const DEFAULT_TRIALS: usize = 5;
/// Most trials one claim may take, as a multiple of the trials asked for: room to replace the
/// undecided trials a host hiccup causes, bounded so an undecidable experiment ends.
pub const MAX_TRIAL_FACTOR: usize = 3;
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
/// How long a child may take beyond its programs' own spin time.
const CHILD_GRACE: Duration = Duration::from_secs(60);

/// Runs programs and judges claims on device 0.
pub struct Lab {
    trials: usize,
    child_binary: Option<PathBuf>,
    gpu: OnceLock<Result<Gpu, Error>>,
    child_time: std::sync::Mutex<Duration>,
}

impl Default for Lab {
    fn default() -> Self {
        Lab::new()
    }
}

impl Lab {
    /// A lab with [`TRIALS_ENV`] trials per claim (default [`DEFAULT_TRIALS`]). Nothing touches
    /// the GPU until the first run.
    pub fn new() -> Lab {
        let trials = std::env::var(TRIALS_ENV)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or(DEFAULT_TRIALS);
        Lab {
            trials,
            child_binary: None,
            gpu: OnceLock::new(),
            child_time: std::sync::Mutex::new(Duration::ZERO),
        }
    }

    pub fn with_trials(mut self, trials: usize) -> Lab {
        self.trials = trials.max(1);
        self
    }

    /// The `stream-litmus` binary to re-invoke for child runs. Without it the lab uses
    /// [`BIN_ENV`], then the current executable if it is `stream-litmus`.
    pub fn with_child_binary(mut self, path: impl Into<PathBuf>) -> Lab {
        self.child_binary = Some(path.into());
        self
    }

    pub fn trials(&self) -> usize {
        self.trials
    }

    /// The GPU of this process, opened on first use.
    pub fn gpu(&self) -> Result<&Gpu, Error> {
        self.gpu
            .get_or_init(Gpu::open)
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Wall time spent waiting for child processes so far.
    pub fn child_time(&self) -> Duration {
        *self.child_time.lock().expect("not poisoned")
    }

    /// Runs the lab's number of trials of `program` in this process.
    pub fn run(&self, program: &Program) -> Result<Trials, Error> {
        self.gpu()?.run(program, self.trials)
    }

    /// Runs a claim's program in this process until it has the lab's number of decided trials
    /// (or a negative one, or the trial budget is spent).
    fn run_claim(&self, claim: &Claim) -> Result<Trials, Error> {
        collect_trials(self.gpu()?, &claim.program, &claim.checks, self.trials)
    }

    /// Runs `program` in a child process with `env` set on top of this process's environment.
    pub fn run_with_env(&self, program: &Program, env: &[(&str, &str)]) -> Result<Trials, Error> {
        let env: Vec<EnvVar> = env
            .iter()
            .map(|(k, v)| EnvVar {
                name: k.to_string(),
                value: Some(v.to_string()),
            })
            .collect();
        let job = Job {
            program: program.clone(),
            checks: Vec::new(),
        };
        self.run_in_child(&env, &[job])?
            .pop()
            .expect("one program in, one result out")
    }

    /// Runs each program under `env` (`None` values: unset), in this process when it already has
    /// that environment, else together in one child process. One result per program.
    pub fn run_all_under(
        &self,
        programs: &[Program],
        env: &[EnvVar],
    ) -> Result<Vec<Result<Trials, Error>>, Error> {
        if EnvVar::all_current(env) {
            return Ok(programs.iter().map(|p| self.run(p)).collect());
        }
        let jobs: Vec<Job> = programs
            .iter()
            .map(|p| Job {
                program: p.clone(),
                checks: Vec::new(),
            })
            .collect();
        self.run_in_child(env, &jobs)
    }

    /// Runs and judges one claim.
    pub fn check(&self, claim: &Claim) -> ClaimRecord {
        self.check_all(std::slice::from_ref(claim), |_| {})
            .pop()
            .expect("one claim in, one record out")
    }

    /// Runs and judges every claim, calling `done` as each record is ready (claims that share an
    /// environment run together in one child). Records come back in the claims' order.
    pub fn check_all(
        &self,
        claims: &[Claim],
        mut done: impl FnMut(&ClaimRecord),
    ) -> Vec<ClaimRecord> {
        let mut records: Vec<Option<ClaimRecord>> = vec![None; claims.len()];
        let mut groups: BTreeMap<Vec<EnvVar>, Vec<usize>> = BTreeMap::new();
        for (i, claim) in claims.iter().enumerate() {
            if claim.needs_child() {
                groups.entry(claim.env.clone()).or_default().push(i);
                continue;
            }
            let record = match self.run_claim(claim) {
                Ok(trials) => ClaimRecord::judged(claim.clone(), trials),
                Err(e) => ClaimRecord::failed(claim.clone(), e),
            };
            done(&record);
            records[i] = Some(record);
        }
        for (env, members) in groups {
            let jobs: Vec<Job> = members
                .iter()
                .map(|&i| Job {
                    program: claims[i].program.clone(),
                    checks: claims[i].checks.clone(),
                })
                .collect();
            let results = match self.run_in_child(&env, &jobs) {
                Ok(results) => results,
                Err(e) => members.iter().map(|_| Err(e.clone())).collect(),
            };
            for (&i, result) in members.iter().zip(results) {
                let record = match result {
                    Ok(trials) => ClaimRecord::judged(claims[i].clone(), trials),
                    Err(e) => ClaimRecord::failed(claims[i].clone(), e),
                };
                done(&record);
                records[i] = Some(record);
            }
        }
        records
            .into_iter()
            .map(|r| r.expect("every claim ran"))
            .collect()
    }

    fn run_in_child(
        &self,
        env: &[EnvVar],
        jobs: &[Job],
    ) -> Result<Vec<Result<Trials, Error>>, Error> {
        for job in jobs {
            job.program.validate()?;
        }
        let binary = self.child_binary()?;
        let spin_ns: u64 = jobs
            .iter()
            .flat_map(|j| &j.program.ops)
            .map(|op| match op.kind {
                crate::program::OpKind::Spin { duration_ns, .. } => duration_ns,
                _ => 0,
            })
            .sum();
        let most_trials = (MAX_TRIAL_FACTOR * self.trials + 3) as u32;
        let timeout = CHILD_GRACE + Duration::from_nanos(spin_ns) * most_trials * 2;
        let request = ChildRequest {
            trials: self.trials,
            jobs: jobs.to_vec(),
        };
        let started = Instant::now();
        let reply = child::run(&binary, env, &request, timeout);
        let waited = started.elapsed();
        *self.child_time.lock().expect("not poisoned") += waited;
        let mut runs = reply?.runs;
        share_child_cost(&mut runs, waited.as_nanos() as u64);
        Ok(runs)
    }

    fn child_binary(&self) -> Result<PathBuf, Error> {
        if let Some(p) = &self.child_binary {
            return Ok(p.clone());
        }
        if let Some(p) = std::env::var_os(BIN_ENV) {
            return Ok(PathBuf::from(p));
        }
        let exe = std::env::current_exe().ok();
        match exe {
            Some(p) if p.file_stem().is_some_and(|s| s == "stream-litmus") => Ok(p),
            _ => Err(Error::Child {
                env: String::new(),
                detail: format!(
                    "this claim needs its own process, and the stream-litmus binary was not found: \
                     set {BIN_ENV} or call Lab::with_child_binary"
                ),
            }),
        }
    }
}

/// Charges a child's own cost (its wall time less its programs' walls) to its programs' timings,
/// in equal shares, so that the claims' walls add up to the time the parent waited.
fn share_child_cost(runs: &mut [Result<Trials, Error>], waited_ns: u64) {
    let timed: Vec<&mut ClaimTiming> = runs
        .iter_mut()
        .filter_map(|r| r.as_mut().ok()?.timing.as_mut())
        .collect();
    if timed.is_empty() {
        return;
    }
    let own = timed.iter().fold(0u64, |a, t| a.saturating_add(t.wall_ns));
    let share = waited_ns.saturating_sub(own) / timed.len() as u64;
    for t in timed {
        t.child_ns += share;
        t.wall_ns += share;
    }
}

/// Runs `program` until `wanted` trials are decided by `checks`: undecided and disturbed trials
/// carry no evidence, so they are replaced, up to [`MAX_TRIAL_FACTOR`] × `wanted` trials in all, in
/// batches spaced by a growing pause ([`RETRY_PAUSE`]) so that one host disturbance cannot
/// spoil them all. Stops at
/// the first negative trial's batch, since one counterexample already decides. Without checks,
/// runs exactly `wanted` trials.
pub(crate) fn collect_trials(
    gpu: &Gpu,
    program: &Program,
    checks: &[Check],
    wanted: usize,
) -> Result<Trials, Error> {
    let started = Instant::now();
    let mut trials = gpu.run(program, wanted)?;
    let mut lab = ClaimTiming::default();
    if !checks.is_empty() {
        let tol = trials.calibration.tolerances();
        for batch in 1.. {
            let judging = Instant::now();
            let counts = judge_claim(program, checks, &trials.timelines, None, &tol, wanted).counts;
            lab.judge_ns += judging.elapsed().as_nanos() as u64;
            let missing = wanted.saturating_sub(counts.positive);
            let budget = (MAX_TRIAL_FACTOR * wanted).saturating_sub(trials.timelines.len());
            if counts.negative > 0 || missing == 0 || budget == 0 {
                break;
            }
            let pausing = Instant::now();
            std::thread::sleep(RETRY_PAUSE * batch);
            lab.paused_ns += pausing.elapsed().as_nanos() as u64;
            let more = gpu.run(program, missing.min(budget))?;
            trials.timelines.extend(more.timelines);
            trials.gpu_time_ns += more.gpu_time_ns;
            if let (Some(t), Some(m)) = (&mut trials.timing, &more.timing) {
                t.absorb(m);
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
