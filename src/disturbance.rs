//! Disturbance: trials that something outside the program spoiled, found in the stamps alone.
//!
//! Every relation of [`crate::relation`] reads a late start as waiting: an op that was ready
//! (issued, plus the launch jitter) while another ran, and started only after it ended, "waited"
//! for it. That holds on a GPU of our own. On a shared GPU another context takes time slices,
//! during which none of our work runs, and a neighbour's copies hold the copy engines. Such a
//! stall looks like waiting to every relation, and turned claims that hold into "Violated" (and
//! misconceptions into "Holds") on a GPU shared with a training job.
//!
//! A stall has two signatures that real waiting has not:
//! - **Idle**: an op was ready, every op it may wait for had ended, none of our own work was
//!   holding what it needs (the SMs for a kernel, a copy engine of its direction for a copy), and
//!   still it did not start for longer than the stall threshold. A real wait ends within a
//!   dependent gap of its blocker's end (1.7–2.2 µs on an H100 and an H200); a neighbour's time
//!   slice lasts hundreds of µs, its copies milliseconds.
//!   An op's readiness is its issue time plus the trial's host-to-GPU offset. Taken from the
//!   trial's own starts, that offset hides a trial that a neighbour held back as a whole: both
//!   kernels of `priority.equal_waits_behind` waited out a neighbour's time slice, were released
//!   together, and the later one went first, in 2 of 10 catalogue runs beside a neighbour on an
//!   H100. So every trial is clock-synced (`gpu/clock.rs`), and an op counts as ready from its
//!   issue plus the calibrated launch latency as well ([`crate::Calibration::launch_latency_ns`]).
//! - **Paused**: a running block of ours stopped reading the clock for longer than
//!   [`PAUSE_FLOOR_NS`] (the spin records the largest gap between two consecutive `%globaltimer`
//!   reads; see `kernels/stamp.cu`). Within one context nothing suspends a running block that
//!   long; a context switch to a neighbour does.
//!
//! "May wait for" is what the happens-before model ([`crate::model`]) orders before the op, by
//! the documented rules or with every stream in one hardware queue, the most any connection
//! setting serializes; ops in graphs fall back to everything issued before them. A first version
//! took every op issued before, a superset that no real wait can escape; on an H100 beside two
//! neighbours it let 8 wrong verdicts in 10 catalogue runs through, all stalls hidden behind an
//! earlier op of another stream that held nothing the stalled op needed (a kernel in front of a
//! copy, an H2D copy in front of a D2H one, a kernel of equal priority issued just before).
//!
//! A disturbed trial carries no evidence: the verdict counts it apart and the lab replaces it like
//! an undecided trial (see [`crate::verdict`]).

use crate::calibration::Tolerances;
use crate::model::{HappensBefore, Refinement};
use crate::program::{ApiCall, CopyDir, OpId, OpKind, Program};
use crate::relation::Check;
use crate::sharing::Sharing;
use crate::timeline::{Interval, Timeline};
use crate::witness::WitnessKind;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The stall threshold is this many dependent gaps, and at least [`STALL_FLOOR_NS`]. A real wait
/// ends within one dependent gap of its blocker's end, and the idle window of an op opens only a
/// launch jitter after it was ready, so the threshold need not hold the jitter again. 24 gaps
/// (45–53 µs on an H100, 37 µs on an H200) are over twice the longest idle stretch in the idle
/// runs recorded as fixtures (19.5 µs, a D2H copy behind a kernel in its stream, over 1,500
/// trials; see `tests/disturbance.rs`), and below the shortest stall that turned a verdict (84 µs).
/// The jitter is no part of it because it is the first thing a neighbour inflates: a run
/// calibrated beside one measured 301 µs, which would have hidden stalls of 256 µs.
pub const STALL_GAPS: u64 = 24;
/// The smallest stall threshold: a dependent gap measured under load can be small, and a few µs
/// of GPU-side scheduling noise is not a neighbour.
pub const STALL_FLOOR_NS: u64 = 20_000;

/// The shortest pause of a running block that counts as a switch-out. On an idle H100, blocks of
/// grids larger than the GPU (4096 blocks of 256 threads) pause for 49.3 µs, again and again
/// (six in ten blocks of `scenario.sleep.grid`), with nobody else on the GPU; blocks of
/// smaller grids never pause for 1 µs. A neighbour's time slice switched our blocks out for
/// 1.5–2.4 ms. Four times the idle pause sits far from both.
pub const PAUSE_FLOOR_NS: u64 = 200_000;

/// The shortest stall that counts as a disturbance, from the trial's tolerances.
pub fn stall_threshold(tol: &Tolerances) -> u64 {
    STALL_GAPS
        .saturating_mul(tol.dependent_gap_ns)
        .max(STALL_FLOOR_NS)
}

/// Which signature a stall has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StallKind {
    /// The op was free to start and nothing of ours held what it needs, yet it did not start.
    Idle,
    /// A running block of the op stopped reading the clock.
    Paused,
}

/// One unexplained stall of one op, on the `%globaltimer` axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stall {
    pub op: OpId,
    pub kind: StallKind,
    /// When the stall began, in `%globaltimer` ns.
    pub at_ns: i64,
    pub len_ns: u64,
}

impl Stall {
    /// "K2 idle for 312.40 µs while ready" with trial-relative time.
    pub fn describe(&self, program: &Program, timeline: &Timeline) -> String {
        let at = (self.at_ns - timeline.origin_ns() as i64) as f64 / 1e3;
        let what = match self.kind {
            StallKind::Idle => "was free to start and nothing of ours held it, yet waited",
            StallKind::Paused => "stopped running (a block was switched out) for",
        };
        format!(
            "{} {what} {:.2} µs from {at:.2} µs",
            program.label(self.op),
            self.len_ns as f64 / 1e3
        )
    }
}

impl fmt::Display for StallKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StallKind::Idle => "idle",
            StallKind::Paused => "paused",
        })
    }
}

/// Every stall of the trial longer than the threshold, the longest first.
pub fn stalls(program: &Program, timeline: &Timeline, tol: &Tolerances) -> Vec<Stall> {
    stalls_with(&Waits::of(program), program, timeline, tol)
}

fn stalls_with(
    waits: &Waits,
    program: &Program,
    timeline: &Timeline,
    tol: &Tolerances,
) -> Vec<Stall> {
    let threshold = stall_threshold(tol);
    let mut found = paused(timeline, threshold.max(PAUSE_FLOOR_NS));
    found.extend(idle(waits, program, timeline, tol, threshold));
    found.sort_by(|a, b| b.len_ns.cmp(&a.len_ns).then(a.op.cmp(&b.op)));
    found
}

/// Every stall of the trial (pauses too) longer than `threshold`, the longest first: with a small
/// threshold, how close an undisturbed trial comes to the real one.
pub fn stalls_longer_than(
    program: &Program,
    timeline: &Timeline,
    tol: &Tolerances,
    threshold: u64,
) -> Vec<Stall> {
    let mut found: Vec<Stall> = paused(timeline, threshold);
    found.extend(idle(&Waits::of(program), program, timeline, tol, threshold));
    found.sort_by(|a, b| b.len_ns.cmp(&a.len_ns).then(a.op.cmp(&b.op)));
    found
}

/// Which earlier ops an op may wait for: those the model orders before it, by the documented
/// rules or with every stream in one hardware queue (the most any driver setting serializes).
/// Ops in a graph fall back to everything the device received before them.
struct Waits {
    /// Per op, where it stands in the order the device receives work: a captured op reaches the
    /// device with its graph's launch, after the ops captured before it.
    positions: Vec<(usize, usize)>,
    models: [HappensBefore; 2],
}

impl Waits {
    fn of(program: &Program) -> Waits {
        Waits {
            positions: program
                .graph_launches()
                .into_iter()
                .enumerate()
                .map(|(op, launch)| (launch.map_or(op, |l| l.0), op))
                .collect(),
            models: [
                HappensBefore::of(program),
                HappensBefore::with(program, Refinement::Queues(1)),
            ],
        }
    }

    fn captured(&self, op: OpId) -> bool {
        self.positions.get(op.0).is_some_and(|p| p.0 != op.0)
    }

    /// Whether `op` may have waited for the end of `before`.
    fn may_wait(&self, before: OpId, op: OpId) -> bool {
        if self.captured(op) || self.captured(before) {
            return self.positions[before.0] < self.positions[op.0];
        }
        self.models.iter().any(|m| m.must_precede(before, op))
    }
}

/// Which trials of a claim were disturbed, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marks {
    /// Per trial: why it carries no evidence, or `None`.
    pub trials: Vec<Option<String>>,
    /// The longest stall of each trial that had one, in ns.
    stalls: Vec<u64>,
    /// Trials set aside because the OS preempted the issuing thread.
    preempted: usize,
    /// Trials set aside because the host's CPU ran slow: inside the calls a check compares (the
    /// pace thread), or around the trial (the issuing thread's own units).
    slowed: usize,
    /// The neighbours, when another process may have used the GPU during the claim.
    shared: Option<String>,
}

impl Marks {
    /// "2 of 7 trials disturbed, not counted: unexplained stalls of 270.12–331.40 µs; the GPU
    /// was shared with pid 1234 python3 (87 % SM)", or `None` when nothing was disturbed and
    /// nobody else was busy on the GPU.
    pub fn summary(&self, counts: &crate::verdict::Counts) -> Option<String> {
        let total = self.trials.len();
        let mut parts = Vec::new();
        if counts.disturbed > 0 {
            parts.push(format!(
                "{} of {total} trials disturbed, not counted",
                counts.disturbed
            ));
        }
        if let (Some(lo), Some(hi)) = (self.stalls.iter().min(), self.stalls.iter().max()) {
            parts.push(format!(
                "unexplained stalls of {:.2}–{:.2} µs in {} trials",
                *lo as f64 / 1e3,
                *hi as f64 / 1e3,
                self.stalls.len()
            ));
        }
        if self.preempted > 0 {
            parts.push(format!(
                "the issuing thread was preempted in {} trials",
                self.preempted
            ));
        }
        if self.slowed > 0 {
            parts.push(format!("the host's CPU ran slow in {} trials", self.slowed));
        }
        if let Some(who) = &self.shared {
            parts.push(format!("the GPU was shared with {who}"));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// Marks the disturbed trials of a claim. A trial is disturbed when its stamps show a stall
/// ([`stalls`]), or when the claim compares host times ([`Check::reads_host_time`]) and the OS
/// preempted the issuing thread during the trial (a descheduled thread once made a graph launch
/// of 1000 kernels look dearer than the launches one by one on an idle H100), or the host's CPU
/// ran slow while it issued the trial ([`crate::slowdown`]: the same claim, with nobody
/// preempted, on a VM that computed ten times slower for milliseconds).
///
/// Some things a neighbour does slow our work down without stopping it, which no stamp shows; a
/// claim that depends on them is disturbed as a whole when another process was busy on the GPU
/// ([`speed_dependent`]):
/// - amounts of time ([`Check::Faster`]'s makespans, [`Check::LaunchCheaper`]'s host time in
///   launch calls): a neighbour's copies share the bus and its kernels the SMs, which stretches
///   makespans, and a launch call that must reach the GPU (a graph's first launch uploads it)
///   waits out the neighbour's time slice on the host. Beside a catalogue loop on an H100, one
///   graph launch of 100 kernels took 838 µs of host time against 474 µs for the 100 launches,
///   in a trial with no stall;
/// - anything a copy decides (a check on a copy, or on contents in a program with copies):
///   a neighbour's copies share the copy engines and the bus, so ours run slower, start later
///   behind each other, and lose races they win on a GPU of our own. Beside a catalogue loop on
///   an H100, a prefetch load started 170 µs after the kernel it should overlap had ended, behind
///   a slowed load of its stream, and a race without its dependency corrupted 656,800 elements,
///   both in trials with no stall.
pub fn marks(
    program: &Program,
    checks: &[Check],
    timelines: &[Timeline],
    sharing: Option<&Sharing>,
    tol: &Tolerances,
) -> Marks {
    let busy = sharing.filter(|s| s.busy()).and_then(Sharing::describe);
    let amounts = speed_dependent(program, checks);
    let mut marks = Marks {
        shared: busy.clone(),
        ..Marks::default()
    };
    let host_times = checks.iter().any(Check::reads_host_time);
    let waits = Waits::of(program);
    for t in timelines {
        let found = stalls_with(&waits, program, t, tol);
        let mark = if let Some(worst) = found.first() {
            marks.stalls.push(worst.len_ns);
            Some(format!(
                "disturbed: {} unexplained stall{} (threshold {:.2} µs), the longest: {}",
                found.len(),
                if found.len() == 1 { "" } else { "s" },
                stall_threshold(tol) as f64 / 1e3,
                worst.describe(program, t)
            ))
        } else if host_times && t.preempted > 0 {
            marks.preempted += 1;
            Some(format!(
                "disturbed: the OS preempted the issuing thread {} time{} while it issued the \
                 trial, which moves the host times this claim compares",
                t.preempted,
                if t.preempted == 1 { "" } else { "s" }
            ))
        } else if let Some(why) = crate::slowdown::spoiled(checks, t) {
            marks.slowed += 1;
            Some(why)
        } else if let (true, Some(who)) = (amounts, &busy) {
            Some(format!(
                "disturbed: {who} used the GPU, which slows copies and stretches times \
                 without stopping our work, and this claim depends on their speed"
            ))
        } else {
            None
        };
        marks.trials.push(mark);
    }
    marks
}

/// Whether a check of the claim depends on how fast work runs in a way a busy neighbour changes
/// without any stall: amounts of time, or a copy (see [`marks`]).
pub fn speed_dependent(program: &Program, checks: &[Check]) -> bool {
    let is_copy = |op: OpId| {
        program.ops.get(op.0).is_some_and(|o| {
            matches!(
                o.kind,
                OpKind::Copy { .. }
                    | OpKind::Api {
                        call: ApiCall::Memset,
                        ..
                    }
            )
        })
    };
    checks.iter().any(|c| match *c {
        Check::Faster { .. } | Check::LaunchCheaper { .. } => true,
        // What a buffer holds after a race between copies and kernels (directly, or through a
        // kernel reading what a copy wrote) depends on the copies' speed.
        Check::Contents { .. } => program.has_copies(),
        _ => c.ops().into_iter().any(is_copy),
    })
}

/// Blocks that stopped reading the clock for longer than `threshold`.
fn paused(timeline: &Timeline, threshold: u64) -> Vec<Stall> {
    timeline
        .spans
        .iter()
        .filter_map(|s| {
            let worst = s
                .blocks
                .iter()
                .filter_map(|b| b.pause)
                .max_by_key(|p| p.ns)?;
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

/// Whether the op occupies the device (or the host on the device's behalf) for a while, so that
/// an op issued after it may wait for its end. Host functions do: work behind them waits.
fn takes_time(kind: &OpKind) -> bool {
    matches!(
        kind,
        OpKind::Spin { .. }
            | OpKind::Add { .. }
            | OpKind::AllReduce { .. }
            | OpKind::Copy { .. }
            | OpKind::HostFn { .. }
            | OpKind::Api {
                call: ApiCall::Memset,
                ..
            }
    )
}

/// Ops that were free to start, with nothing of ours holding them, and yet idle for longer than
/// `threshold`.
fn idle(
    waits: &Waits,
    program: &Program,
    timeline: &Timeline,
    tol: &Tolerances,
    threshold: u64,
) -> Vec<Stall> {
    let events_witness = timeline
        .witness
        .is_some_and(|w| w.kind == WitnessKind::Events);
    let placed: Vec<Option<Interval>> = program
        .ops
        .iter()
        .map(|op| {
            if takes_time(&op.kind) {
                timeline.interval(op.id)
            } else {
                None
            }
        })
        .collect();
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
        let mut from = ready.saturating_add(tol.launch_jitter_ns as i64);
        let mut unknown_before = false;
        // The latest end of what the op may wait for. `from` only grows, and an op whose idle
        // window has shrunk to the threshold is passed over either way, so the scan stops there;
        // it looks at the ops issued just before first (in a stream, the one it waited for), so
        // a claim of 2,000 ops in one stream is judged in linear time, not quadratic.
        let before = (0..op.id.0).rev();
        for other in before.chain(op.id.0 + 1..program.ops.len()).map(OpId) {
            if !takes_time(&program.ops[other.0].kind) || !waits.may_wait(other, op.id) {
                continue;
            }
            match placed[other.0] {
                Some(p) => from = from.max(p.end.saturating_add(p.slack_ns as i64)),
                None => unknown_before = true,
            }
            if unknown_before || until.saturating_sub(from) <= threshold as i64 {
                break;
            }
        }
        // An earlier op we cannot place may be what this one waited for.
        if unknown_before || until.saturating_sub(from) <= threshold as i64 {
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

/// The host-to-GPU offset of an op that waits for nothing, from the trial's clock sync and the
/// calibrated launch latency: `ready = issued + offset`. The sync's error is added, so that the
/// op is taken as ready no sooner than it could have been; a sync worse than a quarter of the
/// stall threshold (its kernel held back by a neighbour in every round) is not used.
fn clocked_offset(timeline: &Timeline, tol: &Tolerances, threshold: u64) -> Option<i64> {
    let clock = timeline.clock?;
    let latency = tol.launch_latency_ns?;
    if clock.error_ns > threshold / 4 {
        return None;
    }
    let late = i64::try_from(latency.saturating_add(clock.error_ns)).ok()?;
    clock.offset_ns.checked_add(late)
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
