//! The executor: runs a program's trials and reads their stamps back.
//!
//! Everything the program needs (streams, events, the stamp buffer, the host copy of it, the
//! cycle counts, host-function slots, the buffers API calls use) is made before the first op is
//! issued; the timed region holds nothing but the program's own driver calls. Memory that outlives
//! one program (its buffers and stamp words, the clock mailbox) comes from the [`Kept`] state of
//! the `Gpu` and goes back to it, so a run allocates each size once (`pool.rs`). One warm-up
//! trial runs first and is discarded, so first-use costs (lazy module loading, a stream's first
//! launch) do not land in trial 1. Every recorded trial first aligns the host clock to
//! `%globaltimer` (see `clock.rs`), outside the timed region. Every phase is timed
//! ([`ClaimTiming`]), so that the lab's own cost can be told from the GPU's.

use super::buffers::{Buffers, Driver};
use super::capture::Graphs;
use super::clock::{now_ns, preemptions, Alignment, Mailbox, QUICK_ROUNDS, ROUNDS};
use super::copy_witness::Witness;
use super::cupti::Tracing;
use super::host_fn::HostFns;
use super::issuer::Issuer;
use super::kernels::{Kernels, WORDS_PER_BLOCK};
use super::memory::Memory;
use super::pace::Pace;
use super::pool::Pool;
use super::probe::call;
use super::resources::{DeviceWords, Events, Streams};
use super::stamps::{graph_issue, relaunch_records, relaunched, timeline};
use crate::border::error::Error;
use crate::measured::timeline::{ClockSync, HostCall, IssuerPace, Reading, Timeline};
use crate::measured::timing::ClaimTiming;
use crate::program::{OpKind, Program, Warning};
use cudarc::driver::result;

/// What [`super::Gpu::run`] returns: plain data, before the lab attaches its calibration and
/// makes the results file's `Trials` of it (`collect.rs`).
#[derive(Debug, Clone)]
pub struct Execution {
    pub timelines: Vec<Timeline>,
    /// Host wall time from the first issue to the end of the final synchronize, summed over the
    /// recorded trials.
    pub gpu_time_ns: u64,
    pub warnings: Vec<Warning>,
    /// Where the execution's time went (judging, pauses and children are the lab's to add).
    pub timing: ClaimTiming,
}

/// What a `Gpu` keeps from one program to the next: the memory pool, the clock mailbox, and
/// CUPTI tracing while programs with copies follow one another (`cupti.rs`).
#[derive(Default)]
pub struct Kept {
    pub pool: Pool<Driver>,
    mailbox: Option<Mailbox>,
    tracing: Option<Tracing>,
    /// The pace thread, started by the first program that watches the host.
    pace: Option<Pace>,
}

impl Kept {
    /// Starts the pace thread unless it runs; where no thread can be started it stays `None`,
    /// and the trials carry no slow stretches, as before the pace thread existed.
    fn start_pace(&mut self) {
        if self.pace.is_none() {
            self.pace = Pace::start().ok();
        }
    }

    fn mailbox(&mut self) -> Result<(), Error> {
        if self.mailbox.is_none() {
            self.mailbox = Some(Mailbox::alloc()?);
        }
        Ok(())
    }
}

/// Test hook: the op at which the next executions fail, as if its driver call had, during the
/// warm-up trial (`usize::MAX`: none). Only the executor's error-path test sets it.
static FAIL_AT_OP: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(usize::MAX);

/// Makes every execution fail at op `op` of its warm-up trial (`None`: run normally); see the
/// error-path test in `tests/cpu/robust.rs`.
#[doc(hidden)]
pub fn fail_at_op(op: Option<usize>) {
    FAIL_AT_OP.store(
        op.unwrap_or(usize::MAX),
        std::sync::atomic::Ordering::SeqCst,
    );
}

/// Runs `trials` recorded trials (plus one warm-up) of a validated program, with memory of its
/// own (calibration, which runs before the `Gpu` exists).
pub fn execute(
    kernels: &Kernels,
    cycles_per_ns: f64,
    program: &Program,
    trials: usize,
) -> Result<Execution, Error> {
    execute_with(
        kernels,
        &mut Kept::default(),
        cycles_per_ns,
        program,
        trials,
        TrialPlan::WARMED,
    )
}

/// How the trials of one execution run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrialPlan {
    /// Whether a warm-up trial runs first, its timeline thrown away (see `run_trials`).
    pub warm_up: bool,
    /// Whether the pace thread watches the host while each trial is issued (`pace.rs`).
    pub watch_host: bool,
}

impl TrialPlan {
    /// A warm-up first, the host not watched: how a claim's trials run.
    pub const WARMED: TrialPlan = TrialPlan {
        warm_up: true,
        watch_host: false,
    };
}

/// Runs `trials` recorded trials of a validated program (after a warm-up, and with the host
/// watched, as `how` says), taking memory from `kept` and giving it back afterwards.
pub fn execute_with(
    kernels: &Kernels,
    kept: &mut Kept,
    cycles_per_ns: f64,
    program: &Program,
    trials: usize,
    how: TrialPlan,
) -> Result<Execution, Error> {
    let watch_host = how.watch_host;
    let started = now_ns();
    if !program.has_copies() {
        kept.tracing = None; // no witness: CUPTI off before anything of this program runs
    }
    let mut warnings = program.validate()?;
    let (first_record, relaunch_records, next) = stamp_layout(program);
    let cycles = spin_cycles(program, cycles_per_ns);
    let (stamps, stamps_reused) = DeviceWords::take(next * WORDS_PER_BLOCK, &mut kept.pool)?;
    let mut issuer = Issuer {
        kernels,
        program,
        streams: Streams::create(&program.streams)?,
        events: Events::create(program)?,
        stamps,
        host_fns: HostFns::new(program),
        memory: Memory::new(program)?,
        buffers: Buffers::take(&program.buffers, &mut kept.pool)?,
        graphs: Graphs::new(program),
        first_record,
        relaunch_records,
        cycles,
        warming: false,
    };
    issuer.buffers.refills_for(program);
    kept.mailbox()?;
    let witness = witness_of(program, cycles_per_ns, kept, &mut warnings)?;
    let mut timing = ClaimTiming {
        setup_ns: now_ns() - started,
        batches: 1,
        buffers_reused: issuer.buffers.reused + u32::from(stamps_reused),
        buffers_allocated: issuer.buffers.allocated + u32::from(!stamps_reused),
        ..ClaimTiming::default()
    };
    let rounds = if program.needs_host_clock() {
        ROUNDS
    } else {
        QUICK_ROUNDS
    };
    if watch_host {
        kept.start_pace();
    }
    let pace = kept.pace.as_ref().filter(|_| watch_host);
    let mailbox = kept.mailbox.as_ref().map(|m| (m, rounds));
    let outcome = run_trials(
        &mut issuer,
        mailbox,
        witness.as_ref(),
        pace,
        (trials, how.warm_up),
        &mut timing,
    );
    if let Some(p) = pace {
        p.disarm(0); // parks the thread on every path, an error's too
    }
    let teardown = now_ns();
    tear_down(issuer, witness, kept);
    timing.teardown_ns = now_ns() - teardown;
    timing.wall_ns = now_ns() - started;
    let (timelines, gpu_time_ns) = outcome?;
    timing.gpu_ns = gpu_time_ns;
    Ok(Execution {
        timelines,
        gpu_time_ns,
        warnings,
        timing,
    })
}

/// Per graph launch after its graph's first: each stamped node's first record in it.
type Relaunches = Vec<Option<Vec<(usize, usize)>>>;

/// Per op: its first stamp record; per graph launch after its graph's first, each stamped
/// node's records; and how many records there are in all.
fn stamp_layout(program: &Program) -> (Vec<usize>, Relaunches, usize) {
    let mut first_record = Vec::with_capacity(program.ops.len());
    let mut next = 0usize;
    for op in &program.ops {
        first_record.push(next);
        next += op.kind.stamped_grid() as usize;
    }
    let relaunch_records = relaunch_records(program, &mut next);
    (first_record, relaunch_records, next)
}

/// Per op: the cycles its spin spins (0 for other ops).
fn spin_cycles(program: &Program, cycles_per_ns: f64) -> Vec<i64> {
    program
        .ops
        .iter()
        .map(|op| match op.kind {
            OpKind::Spin { duration_ns, .. } => (duration_ns as f64 * cycles_per_ns).ceil() as i64,
            _ => 0,
        })
        .collect()
}

/// The copy witness of a program with copies (a warning when CUPTI could not start).
fn witness_of(
    program: &Program,
    cycles_per_ns: f64,
    kept: &mut Kept,
    warnings: &mut Vec<Warning>,
) -> Result<Option<Witness>, Error> {
    if !program.has_copies() {
        return Ok(None);
    }
    let (w, note) = Witness::new(program, cycles_per_ns, &mut kept.pool, &mut kept.tracing)?;
    if let Some(reason) = note {
        warnings.push(Warning::NoCupti { reason });
    }
    Ok(Some(w))
}

/// Teardown: wait for the GPU, then give the memory back (or free it, if the context broke).
fn tear_down(mut issuer: Issuer<'_>, mut witness: Option<Witness>, kept: &mut Kept) {
    if result::ctx::synchronize().is_ok() {
        issuer.stamps.release(&mut kept.pool);
        issuer.buffers.release(&mut kept.pool);
        if let Some(w) = &mut witness {
            w.release(&mut kept.pool);
        }
    }
    drop(witness);
    drop(issuer);
}

/// A stopwatch whose every lap goes to one phase.
struct Lap(u64);

impl Lap {
    fn to(&mut self, phase: &mut u64) {
        let now = now_ns();
        *phase += now - self.0;
        self.0 = now;
    }
}

/// The trial loop: the recorded timelines and their timed regions summed.
fn run_trials(
    issuer: &mut Issuer<'_>,
    mailbox: Option<(&Mailbox, usize)>,
    witness: Option<&Witness>,
    pace: Option<&Pace>,
    (trials, warm_up): (usize, bool),
    timing: &mut ClaimTiming,
) -> Result<(Vec<Timeline>, u64), Error> {
    let (program, kernels) = (issuer.program, issuer.kernels);
    let mut host = vec![0u64; issuer.stamps.len()];
    let fail_at = FAIL_AT_OP.load(std::sync::atomic::Ordering::SeqCst);
    let mut timelines = Vec::with_capacity(trials);
    let mut gpu_time_ns = 0u64;
    let mut issued = Issued {
        calls: Vec::with_capacity(program.ops.len()),
        readings: Vec::new(),
    };
    // Trial 0 is the warm-up, where one runs.
    for trial in usize::from(!warm_up)..=trials {
        // The warm-up is there for first-use costs (a module's lazy load, a stream's first launch,
        // a graph's first upload), which every launch pays whatever it spins; so its spins are
        // launched with 0 cycles and its adds over 0 elements, and it costs launches instead of
        // a trial's GPU time (about a fifth of the catalogue's). Copies keep their sizes: a
        // copy's first use is its size's.
        issuer.warming = trial == 0;
        // The warm-up's timeline is discarded, and with it any alignment: each recorded trial
        // still aligns right before its own timed region.
        let aligning = mailbox.filter(|_| trial > 0);
        let mut lap = Lap(now_ns());
        let alignment = prepare_trial(issuer, aligning, witness, pace, &mut lap, timing)?;
        issued.calls.clear();
        issued.readings.clear();
        let before = pace.map(Pace::probe);
        let switches = preemptions();
        let t0 = now_ns();
        issue_ops(issuer, witness, trial == 0, fail_at, t0, &mut issued)?;
        let preempted = preemptions().saturating_sub(switches);
        let own_pace = pace.zip(before).map(|(p, before_ns)| IssuerPace {
            before_ns,
            after_ns: p.probe(),
            fastest_ns: p.fastest_ns(),
        });
        result::ctx::synchronize().map_err(call("cuCtxSynchronize"))?;
        let elapsed = now_ns() - t0;
        // Read after the timed region: disarming collects the stretches into a new vector.
        let host_slow = pace.map(|p| p.disarm(t0)).unwrap_or_default();
        let mut region = 0;
        lap.to(&mut region);
        if let Some(w) = witness {
            w.marker(kernels, 1)?;
        }
        lap.to(&mut timing.witness_ns);
        let host_spans = issuer.host_fns.spans(program, t0)?;
        issuer.graphs.clear();
        issuer.memory.after_trial()?;
        lap.to(&mut timing.prepare_ns);
        if trial == 0 {
            timing.warmup_ns += region;
            continue; // warm-up
        }
        gpu_time_ns += elapsed;
        issuer.stamps.read(&mut host)?;
        let clock = alignment.map(|a| clock_sync(a, t0));
        let mut t = stamped(issuer, &host, &issued)?
            .with_host(host_spans, clock)
            .with_contents(issuer.buffers.contents(kernels)?)
            .with_preempted(u32::try_from(preempted).unwrap_or(u32::MAX))
            .with_host_slow(host_slow, own_pace);
        lap.to(&mut timing.readback_ns);
        if let Some((spans, sync)) = witness.map(|w| w.collect(&t.spans)).transpose()?.flatten() {
            t = t.with_witness(spans, sync);
        }
        lap.to(&mut timing.witness_ns);
        timelines.push(t);
    }
    if let Some(w) = witness {
        let mut lap = Lap(now_ns());
        let held = w.finish(program)?;
        // Held trials are the recorded trials, in order (every one under CUPTI, none with events).
        let first = timelines.len().saturating_sub(held.len());
        for (t, (spans, sync)) in timelines[first..].iter_mut().zip(held) {
            *t = std::mem::take(t).with_witness(spans, sync);
        }
        lap.to(&mut timing.witness_ns);
    }
    Ok((timelines, gpu_time_ns))
}

/// What issuing a trial's ops recorded: each call's times, the values ops read.
struct Issued {
    calls: Vec<HostCall>,
    readings: Vec<Reading>,
}

/// A recorded trial's clock sync, from the alignment made before its timed region at `t0`.
fn clock_sync(a: Alignment, t0: u64) -> ClockSync {
    ClockSync {
        // gpu = absolute host + offset = (host - t0) + (offset + t0)
        offset_ns: a.offset_ns + t0 as i64,
        error_ns: a.error_ns,
        shared: false,
    }
}

/// A recorded trial's timeline from its stamps read back into `host`, its relaunched graphs'
/// records and the values its ops read.
fn stamped(issuer: &Issuer<'_>, host: &[u64], issued: &Issued) -> Result<Timeline, Error> {
    let program = issuer.program;
    Ok(timeline(
        program,
        &issuer.first_record,
        host,
        graph_issue(program, &issued.calls),
    )?
    .with_relaunched(relaunched(program, &issuer.relaunch_records, host)?)
    .with_readings(issued.readings.clone()))
}

/// Readies one trial: its stamps zeroed, host functions reset, memory and buffers prepared, the
/// witness's first marker placed, the pace armed and, when `aligning`, the clocks aligned; each
/// part's time goes to its phase of `timing`.
fn prepare_trial(
    issuer: &mut Issuer<'_>,
    aligning: Option<(&Mailbox, usize)>,
    witness: Option<&Witness>,
    pace: Option<&Pace>,
    lap: &mut Lap,
    timing: &mut ClaimTiming,
) -> Result<Option<Alignment>, Error> {
    let (program, kernels) = (issuer.program, issuer.kernels);
    issuer.stamps.zero_on(kernels)?;
    issuer.host_fns.reset();
    issuer.memory.prepare(program)?;
    issuer.buffers.fill_on(kernels)?;
    // A trial that aligns waits for its preparation (and the witness's first marker) in the
    // alignment's own synchronize: the ping kernel runs in the legacy stream behind the fills.
    // Each wait for the GPU costs a whole time slice beside a neighbour that takes them
    // (about 2.4 ms on an H100 beside a loop of matrix products), so one wait instead of
    // three took a slice off every recorded trial there.
    if aligning.is_none() {
        result::ctx::synchronize().map_err(call("cuCtxSynchronize"))?;
    }
    lap.to(&mut timing.prepare_ns);
    if let (Some(w), Some(_)) = (witness, aligning) {
        w.reset()?;
        w.launch_marker(kernels, 0)?;
        lap.to(&mut timing.witness_ns);
    }
    // Armed before the clock alignment, so the woken thread is timing units by the first
    // issue (what it sees before is cut off).
    if let Some(p) = pace {
        p.arm();
    }
    let alignment = match aligning {
        Some((m, rounds)) => Some(m.align(kernels, rounds)?),
        None => None,
    };
    lap.to(&mut timing.clock_ns);
    if let (Some(w), None) = (witness, aligning) {
        w.reset()?;
        w.marker(kernels, 0)?;
    }
    lap.to(&mut timing.witness_ns);
    Ok(alignment)
}

/// Issues every op of a trial in order, each call timed from `t0` and the values ops read into
/// `issued`; op `fail_at` of the warm-up fails on purpose (`FAIL_AT_OP`).
fn issue_ops(
    issuer: &mut Issuer<'_>,
    witness: Option<&Witness>,
    warm_up: bool,
    fail_at: usize,
    t0: u64,
    issued: &mut Issued,
) -> Result<(), Error> {
    let program = issuer.program;
    for (i, op) in program.ops.iter().enumerate() {
        let on = op.kind.stream().map(|s| issuer.streams.get(s.0));
        if let Some(w) = witness {
            w.before(i, on)?;
        }
        let begin = now_ns() - t0;
        if warm_up && i == fail_at {
            return Err(Error::Driver {
                call: "an injected failure".into(),
                message: format!("op {i} failed on purpose (executor error-path test)"),
            });
        }
        let value = issuer.issue(i)?;
        let end = now_ns() - t0;
        if let Some(w) = witness {
            w.after(i, on)?;
        }
        if let Some(value) = value {
            issued.readings.push(Reading {
                op: op.id,
                value_ns: value,
            });
        }
        issued.calls.push(HostCall {
            op: op.id,
            begin_ns: begin,
            end_ns: end,
        });
    }
    Ok(())
}
