//! The lab: where claims meet the GPU.
//!
//! A [`Lab`] opens the GPU lazily (once per process), runs programs in this process or, when a
//! claim needs an environment the driver reads at start-up, in a child process, and judges the
//! trials. One claim's failure (a bad program, a CUDA error, a child that dies) becomes that
//! claim's record and never stops the others.
//!
//! The layer's files: this one (the [`Lab`]), `collect.rs` (trials until enough are decided, used
//! in this process and in the child), `second_look.rs` (claims a neighbour left undecided, run
//! again at the end), `child.rs` (programs run under another environment), `ahead.rs` (the first
//! child's claims, run while the GPU opens) and [`parameter_sweeps`] (measurements over a
//! parameter).
//!
//! **May import:** `gpu`, `record`, `judge`, `measured`, `program`, `border`: everything that runs
//! a claim or keeps what it gave, and nothing that shows it.

mod ahead;
pub mod child;
pub mod collect;
pub mod parameter_sweeps;
mod second_look;

use crate::border::error::Error;
use crate::gpu::{turn, Gpu, RatesFrom, WatchFrom};
use crate::judge::claim::{Claim, EnvVar};
use crate::judge::verdict::Judgement;
use crate::lab::child::{ChildRequest, Job};
use crate::lab::collect::MAX_TRIAL_FACTOR;
use crate::measured::sharing::{Carry, Sharing};
use crate::measured::timing::SetupTiming;
use crate::program::Program;
use crate::record::{ClaimRecord, Trials};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Environment variable that sets the number of trials per claim.
pub const TRIALS_ENV: &str = "STREAM_LITMUS_TRIALS";
/// Trials per claim unless [`TRIALS_ENV`] says otherwise.
pub const DEFAULT_TRIALS: usize = 5;
/// How often `--exclusive` looks whether the GPU is free.
const EXCLUSIVE_POLL: Duration = Duration::from_millis(100);

/// What the lab spent outside the claims' own timings, so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spent {
    /// Starting child processes and waiting for them, their setup included where it was not
    /// overlapped with this process's own opening (`ahead.rs`).
    pub child: Duration,
    /// NVML looks around claims.
    pub looks: Duration,
    /// Judging claims once their trials are in.
    pub judging: Duration,
    /// The children's own setups, summed.
    pub child_setup: SetupTiming,
}

/// How long a child may take beyond its programs' own spin time.
const CHILD_GRACE: Duration = Duration::from_secs(60);

/// Runs programs and judges claims on device 0.
///
/// Every lab of a process shares the process's GPU ([`Gpu::process`]: one context, one
/// calibration) and runs one claim at a time on it ([`turn`]), so labs may be made anywhere and
/// used from any thread, `cargo test`'s threads included: each claim's trials run alone, as they
/// would with one thread. [`Lab::shared`] is a lab for code that has nowhere to keep one.
pub struct Lab {
    trials: usize,
    child_binary: Option<PathBuf>,
    spent: std::sync::Mutex<Spent>,
    /// `--exclusive`: wait before each claim until the GPU is ours, at most this long.
    exclusive: Option<Duration>,
    /// The child started ahead of the GPU's opening, then its results (`ahead.rs`).
    ahead: std::sync::Mutex<Option<ahead::Ahead>>,
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
            spent: std::sync::Mutex::new(Spent::default()),
            exclusive: None,
            ahead: std::sync::Mutex::new(None),
        }
    }

    /// The process's lab with default settings ([`Lab::new`]), made on first use: for test
    /// functions that share one without a `static` of their own. Every lab shares the GPU and
    /// its calibration anyway; this one also shares [`Lab::spent`].
    pub fn shared() -> &'static Lab {
        static SHARED: OnceLock<Lab> = OnceLock::new();
        SHARED.get_or_init(Lab::new)
    }

    pub fn with_trials(mut self, trials: usize) -> Lab {
        self.trials = trials.max(1);
        self
    }

    /// Before each claim, waits until no other process holds a context on the GPU, for at most
    /// `timeout` (then [`Lab::try_check_all`] stops with [`Error::Shared`]).
    pub fn with_exclusive(mut self, timeout: Duration) -> Lab {
        self.exclusive = Some(timeout);
        self
    }

    /// The `stream-litmus` binary to re-invoke for child runs. Without it the lab uses
    /// [`child::BIN_ENV`], then the current executable if it is `stream-litmus`, then the one cargo
    /// built beside a test binary of this package.
    pub fn with_child_binary(mut self, path: impl Into<PathBuf>) -> Lab {
        self.child_binary = Some(path.into());
        self
    }

    pub fn trials(&self) -> usize {
        self.trials
    }

    /// The GPU of this process, opened on first use ([`Gpu::process`]).
    pub fn gpu(&self) -> Result<&Gpu, Error> {
        let gpu = Gpu::process_with(None, RatesFrom::Measured, WatchFrom::Start, |watch| {
            self.run_ahead(watch)
        });
        self.drop_unrun();
        gpu
    }

    /// What the lab spent so far outside the claims' own timings.
    pub fn spent(&self) -> Spent {
        *self.spent.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds the time since `from` to one of [`Lab::spent`]'s parts.
    fn spend(&self, part: impl FnOnce(&mut Spent) -> &mut Duration, from: Instant) {
        let mut spent = self.spent.lock().unwrap_or_else(|e| e.into_inner());
        *part(&mut spent) += from.elapsed();
    }

    /// Runs the lab's number of trials of `program` in this process.
    pub fn run(&self, program: &Program) -> Result<Trials, Error> {
        let gpu = self.gpu()?;
        let _turn = turn::take();
        collect::run(gpu, program, self.trials)
    }

    /// Runs a claim's program in this process until it has the lab's number of decided trials
    /// (or a negative one, or the trial budget is spent).
    /// `scout`: a neighbour was busy when the claim began (see [`collect::collect_trials`]).
    /// With the judgement that decided there were enough trials ([`collect::collect_judged`]).
    fn run_claim(&self, claim: &Claim, scout: bool) -> Result<(Trials, Option<Judgement>), Error> {
        // The caller holds the turn ([`Lab::take_turn`]) for every round of the claim's trials,
        // so no other claim of the process runs between them.
        let gpu = self.gpu()?;
        collect::collect_judged(gpu, &claim.program, &claim.checks, self.trials, scout)
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
    /// environment run together in one child). Records come back in the claims' order. With
    /// [`Lab::with_exclusive`], a GPU that stays shared fails every claim not yet run; see
    /// [`Lab::try_check_all`] to stop instead.
    pub fn check_all(&self, claims: &[Claim], done: impl FnMut(&ClaimRecord)) -> Vec<ClaimRecord> {
        let mut records = Vec::new();
        if let Err(e) = self.try_check_all(claims, done, &mut records) {
            // Stopped by `--exclusive`: the claims not run fail with its reason.
            let mut ran: Vec<Option<ClaimRecord>> = records.into_iter().map(Some).collect();
            return claims
                .iter()
                .map(|c| {
                    ran.iter_mut()
                        .find(|r| r.as_ref().is_some_and(|r| r.claim.id == c.id))
                        .and_then(Option::take)
                        .unwrap_or_else(|| ClaimRecord::failed(c.clone(), e.clone()))
                })
                .collect();
        }
        records
    }

    /// [`Lab::check_all`], stopping at the first claim for which `--exclusive` found the GPU
    /// still shared: `records` then holds the claims already judged, in the claims' order on
    /// success.
    pub fn try_check_all(
        &self,
        claims: &[Claim],
        mut done: impl FnMut(&ClaimRecord),
        records: &mut Vec<ClaimRecord>,
    ) -> Result<(), Error> {
        // Records are kept once, by claim, and moved out at the end, on success or not: a record
        // holds every trial's stamps (4096 blocks for some), too much to clone per claim.
        let mut judged: Vec<Option<ClaimRecord>> = vec![None; claims.len()];
        let outcome = self.judge_into(claims, &mut |i, record| {
            done(&record);
            judged[i] = Some(record);
        });
        *records = judged.into_iter().flatten().collect();
        outcome
    }

    /// Runs and judges every claim, handing each record to `each` with its claim's index as soon
    /// as it is final, in the order the claims finish (the claims of a child run while the GPU
    /// opened, [`Lab::start_ahead`], come first; other claims of a child's environment and second
    /// looks come later than their place). Nothing is kept: a caller that writes each
    /// record out and drops it holds one claim's stamps at a time, whatever the trial count
    /// (`run --trials 1000 --json`). Stops, as [`Lab::try_check_all`] does, where `--exclusive`
    /// found the GPU still shared.
    pub fn try_check_each(
        &self,
        claims: &[Claim],
        mut each: impl FnMut(usize, ClaimRecord),
    ) -> Result<(), Error> {
        self.judge_into(claims, &mut each)
    }

    /// [`Lab::try_check_all`]'s work: claims in this process in order, then each environment's
    /// claims in one child.
    fn judge_into(
        &self,
        claims: &[Claim],
        finish: &mut dyn FnMut(usize, ClaimRecord),
    ) -> Result<(), Error> {
        let mut groups = ahead::groups(claims);
        let mut seen = self.look();
        let mut since = turn::granted();
        let mut carry = Carry::default();
        let carried = |carry: &mut Carry, mut s: Option<Sharing>| {
            if let Some(s) = &mut s {
                carry.apply(s);
            }
            s
        };
        // The claims of a child run while the GPU was opened (`ahead.rs`) are final first.
        groups.retain(|env, members| match self.take_ahead(claims, env, members) {
            Some((results, sharing)) => {
                let sharing = carried(&mut carry, sharing);
                for (&i, result) in members.iter().zip(results) {
                    finish(i, self.record(&claims[i], result, sharing.clone()));
                }
                false
            }
            None => true,
        });
        // Claims a neighbour left undecided without a counterexample: a second look at the end.
        let mut later: Vec<(usize, ClaimRecord)> = Vec::new();
        for (i, claim) in claims.iter().enumerate() {
            if claim.needs_child() {
                continue;
            }
            let turn = self.take_turn(&mut seen, since);
            seen = self.wait_alone(seen)?;
            let scout = seen.as_ref().is_some_and(Sharing::busy);
            let result = self.run_claim(claim, scout);
            let (sharing, after) = self.around(seen, &carry);
            let sharing = carried(&mut carry, sharing);
            seen = after;
            since = turn::granted();
            drop(turn);
            let (result, alone) = match result {
                Ok((trials, alone)) => (Ok(trials), alone),
                Err(e) => (Err(e), None),
            };
            let record = self.record_judged(claim, result, sharing, alone);
            match second_look::wants_second_look(&record) {
                true => later.push((i, record)),
                false => finish(i, record),
            }
        }
        for (env, members) in groups {
            let jobs = jobs_of(claims, &members);
            let turn = self.take_turn(&mut seen, since);
            seen = match self.wait_alone(seen) {
                Ok(now) => now,
                Err(e) => {
                    // The claims waiting for a second look keep their first.
                    for (i, record) in later {
                        finish(i, record);
                    }
                    return Err(e);
                }
            };
            let results = match self.run_in_child(&env, &jobs) {
                Ok(results) => results,
                Err(e) => members.iter().map(|_| Err(e.clone())).collect(),
            };
            let (sharing, after) = self.around(seen, &carry);
            let sharing = carried(&mut carry, sharing);
            seen = after;
            since = turn::granted();
            drop(turn);
            for (&i, result) in members.iter().zip(results) {
                finish(i, self.record(&claims[i], result, sharing.clone()));
            }
        }
        self.second_looks(claims, later, (seen, since), &mut carry, finish)
    }

    /// The record of `claim` from its trials, which ran with the GPU shared as `sharing` says;
    /// the time it takes goes to judging.
    fn record(
        &self,
        claim: &Claim,
        result: Result<Trials, Error>,
        sharing: Option<Sharing>,
    ) -> ClaimRecord {
        self.record_judged(claim, result, sharing, None)
    }

    /// [`Lab::record`], taking `alone`, the trials' judgement with no neighbour seen, where the
    /// sharing leaves it the same ([`ClaimRecord::judged_with`]).
    fn record_judged(
        &self,
        claim: &Claim,
        result: Result<Trials, Error>,
        sharing: Option<Sharing>,
        alone: Option<Judgement>,
    ) -> ClaimRecord {
        let judging = Instant::now();
        let record = match result {
            Ok(mut trials) => {
                trials.sharing = sharing;
                ClaimRecord::judged_with(claim.clone(), trials, alone)
            }
            Err(e) => ClaimRecord::failed(claim.clone(), e),
        };
        self.spend(|s| &mut s.judging, judging);
        record
    }

    /// Takes the process's turn for a claim, with NVML's look before it: `seen`, taken when the
    /// turn had been granted `since` times, still holds if no other thread had the turn in
    /// between (this lab's own turns count one each); otherwise the GPU is looked at again, since
    /// another thread's claim (or its child process) ran on it meanwhile.
    fn take_turn(&self, seen: &mut Option<Sharing>, since: u64) -> turn::Turn {
        let taken = turn::take();
        if turn::granted() > since.saturating_add(1) {
            *seen = self.look();
        }
        taken
    }

    /// Who else is on the GPU now, where NVML can tell (`None` without a GPU).
    pub fn look(&self) -> Option<Sharing> {
        self.look_knowing(&|_| false)
    }

    /// [`Lab::look`], counting the processes `known_busy` names as busy whatever it reads.
    fn look_knowing(&self, known_busy: &dyn Fn(u32) -> bool) -> Option<Sharing> {
        let started = Instant::now();
        let seen = self.gpu().ok().map(|gpu| {
            let look = gpu.neighbours_knowing(known_busy);
            Sharing {
                before: Vec::new(),
                after: look.neighbours,
                limit: look.limit,
            }
        });
        self.spend(|s| &mut s.looks, started);
        seen
    }

    /// What was seen around a claim (the look before it, and one after it), and the look after,
    /// which is the next claim's look before. NVML is not asked for utilisation samples of a
    /// neighbour `carry` counts busy already (`neighbours::asks`).
    fn around(&self, before: Option<Sharing>, carry: &Carry) -> (Option<Sharing>, Option<Sharing>) {
        let after = self.look_knowing(&|pid| carry.known_busy(pid));
        let sharing = match (&before, &after) {
            (None, None) => None,
            _ => Some(Sharing {
                before: before.map(|b| b.after).unwrap_or_default(),
                after: after.as_ref().map(|a| a.after.clone()).unwrap_or_default(),
                limit: after.as_ref().and_then(|a| a.limit.clone()),
            }),
        };
        (sharing, after)
    }

    /// With [`Lab::with_exclusive`]: waits until no other process holds a context on the GPU,
    /// looking every [`EXCLUSIVE_POLL`], and gives up after the timeout. Returns the last look.
    fn wait_alone(&self, seen: Option<Sharing>) -> Result<Option<Sharing>, Error> {
        let Some(timeout) = self.exclusive else {
            return Ok(seen);
        };
        let started = Instant::now();
        let mut seen = seen.or_else(|| self.look());
        loop {
            let Some(now) = &seen else {
                return Ok(seen); // no GPU: the claim fails with that error
            };
            if now.after.is_empty() {
                if let Some(why) = now.limit.as_ref().filter(|_| !self.can_see(now)) {
                    return Err(Error::Shared {
                        detail: format!(
                            "--exclusive needs to see the other processes on the GPU, and {why}; \
                             run without --exclusive, or where NVML works"
                        ),
                    });
                }
                return Ok(seen);
            }
            if started.elapsed() >= timeout {
                let who = now.describe().unwrap_or_default();
                return Err(Error::Shared {
                    detail: format!(
                        "--exclusive: the GPU was still shared after {:.0} s ({who}); stopped \
                         before the next claim, and no results were written: stop the other \
                         processes, or run without --exclusive (the verdicts then leave out \
                         disturbed trials; see docs/gpus.md, \"Shared GPUs\")",
                        timeout.as_secs_f64()
                    ),
                });
            }
            std::thread::sleep(EXCLUSIVE_POLL);
            seen = self.look();
        }
    }

    /// Whether an empty list of processes means the GPU is ours: NVML listed processes, ours
    /// among them.
    fn can_see(&self, look: &Sharing) -> bool {
        look.limit.as_deref().map_or(true, |why| {
            why.starts_with("NVML gives no per-process utilisation")
        })
    }

    /// Runs `jobs` in one child process under `env`, one result per job.
    fn run_in_child(
        &self,
        env: &[EnvVar],
        jobs: &[Job],
    ) -> Result<Vec<Result<Trials, Error>>, Error> {
        self.finish_child(self.start_child(env, jobs)?, jobs)
    }

    /// Starts the child process that will run `jobs` under `env`: it opens its GPU and waits for
    /// [`Lab::finish_child`], which counts the time starting it took as the child's.
    fn start_child(&self, env: &[EnvVar], jobs: &[Job]) -> Result<child::Started, Error> {
        for job in jobs {
            job.program.validate()?;
        }
        let binary = child::binary(self.child_binary.as_deref())?;
        let request = ChildRequest {
            trials: self.trials,
            jobs: jobs.to_vec(),
            ptx: Gpu::opened().map(|g| g.ptx().to_string()),
            copy_rates: Gpu::opened().and_then(|g| g.calibration().copy_rates),
        };
        child::start(&binary, env, &request)
    }

    /// Tells a child from [`Lab::start_child`] to go, under the process's turn, and takes its
    /// results, one per job.
    fn finish_child(
        &self,
        child: child::Started,
        jobs: &[Job],
    ) -> Result<Vec<Result<Trials, Error>>, Error> {
        self.settle_child(self.answer_child(child, jobs))
    }

    /// Tells a child from [`Lab::start_child`] to go, and waits for its answer; it may still be
    /// exiting ([`Lab::settle_child`] waits for that). The process's turn is held from the go
    /// until it has exited: another thread's claim beside its claims would be a neighbour of
    /// ours, and beside its exit, beside a context being torn down.
    fn answer_child(&self, child: child::Started, jobs: &[Job]) -> Answering {
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
        let started = Instant::now();
        let start = child.start;
        let turn = turn::take();
        Answering {
            answered: child.answer(timeout),
            turn,
            started,
            start,
        }
    }

    /// Waits for a child that answered to exit, and takes its results, one per job; the time
    /// from its start is the child's.
    fn settle_child(&self, answering: Answering) -> Result<Vec<Result<Trials, Error>>, Error> {
        let reply = answering.answered.finish();
        drop(answering.turn);
        let waited = answering.start + answering.started.elapsed();
        let reply = {
            let mut spent = self.spent.lock().unwrap_or_else(|e| e.into_inner());
            spent.child += waited;
            if let Ok(r) = &reply {
                spent.child_setup.absorb(&r.setup);
            }
            reply?
        };
        let mut runs = reply.runs;
        child::share_cost(&mut runs, waited.as_nanos() as u64);
        Ok(runs)
    }
}

/// A child told to go that has answered, perhaps still exiting, with the process's turn held.
struct Answering {
    answered: child::Answered,
    turn: turn::Turn,
    /// When the go was sent, and how long starting the child took.
    started: Instant,
    start: Duration,
}

/// The jobs of the claims at `members`: each claim's program and checks.
fn jobs_of(claims: &[Claim], members: &[usize]) -> Vec<Job> {
    members
        .iter()
        .map(|&i| Job {
            program: claims[i].program.clone(),
            checks: claims[i].checks.clone(),
        })
        .collect()
}
