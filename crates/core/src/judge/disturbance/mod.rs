//! Disturbance: trials that something outside the program spoiled, found in the stamps alone.
//!
//! Every relation of [`crate::judge::relation`] reads a late start as waiting: an op that was ready
//! (issued, plus the launch jitter) while another ran, and started only after it ended, "waited"
//! for it. That holds on a GPU of our own. On a shared GPU another context takes time slices,
//! during which none of our work runs, and a neighbour's copies hold the copy engines. Such a
//! stall looks like waiting to every relation, and turned claims that hold into "Violated" (and
//! misconceptions into "Holds") on a GPU shared with a training job.
//!
//! A disturbance has signatures that real waiting has not:
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
//!   Such a hold is no stall in itself: nothing of the trial ran before its release, so every
//!   op issued before was pending then and is ready from then on
//!   ([`crate::judge::relation::releases`]); what it loses is the order in which the GPU
//!   received those ops, so a held trial is disturbed for the checks that read it (see
//!   [`marks`]). Beside a time-slicing neighbour nearly every trial is held. The same holds in
//!   mid-trial, after a host sync, where the GPU went quiet with nothing of ours pending: the
//!   ops issued after it are let go together, and amounts of time across it (makespans, host
//!   time, races) are disturbed.
//! - **Slow**: a copy below its pace ([`copy_pace`]), against the copy rates measured at start-up or
//!   the claim's own other trials.
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
//! an undecided trial (see [`crate::judge::verdict`]). Except where its outcome rests on an
//! overlap of two of our ops, which no neighbour makes ([`overlap`]): such a trial counts.

pub mod copy_pace;
mod idle;
mod launch;
mod makespan;
mod marks;
mod overlap;
mod sensitivity;
mod stall;

use crate::judge::relation::Check;
use crate::judge::relation::{releases, HostWaits, Release};
use crate::measured::calibration::Tolerances;
use crate::measured::sharing::Sharing;
use crate::measured::timeline::Timeline;
pub use crate::measured::timeline::PAUSE_FLOOR_NS;
use crate::program::{ApiCall, OpId, OpKind, Program};
use idle::{idle, paused};
pub use marks::Marks;
use sensitivity::Sensitivity;
use stall::Waits;
pub use stall::{stall_threshold, Stall, StallKind, STALL_FLOOR_NS, STALL_GAPS};

/// Every stall of the trial longer than the threshold, the longest first.
pub fn stalls(program: &Program, timeline: &Timeline, tol: &Tolerances) -> Vec<Stall> {
    let waits = Waits::of(program);
    let held = releases(&waits.host, timeline, tol);
    stalls_with(&waits, &held, program, timeline, tol)
}

/// [`stalls`], with the trial's releases already found.
fn stalls_with(
    waits: &Waits,
    held: &[Release],
    program: &Program,
    timeline: &Timeline,
    tol: &Tolerances,
) -> Vec<Stall> {
    let threshold = stall_threshold(tol);
    let mut found = paused(timeline, threshold.max(PAUSE_FLOOR_NS));
    found.extend(idle(waits, program, timeline, tol, held, threshold));
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
    let waits = Waits::of(program);
    let held = releases(&waits.host, timeline, tol);
    let mut found: Vec<Stall> = paused(timeline, threshold);
    found.extend(idle(&waits, program, timeline, tol, &held, threshold));
    found.sort_by(|a, b| b.len_ns.cmp(&a.len_ns).then(a.op.cmp(&b.op)));
    found
}

/// Marks the disturbed trials of a claim. A trial is disturbed when its stamps show a stall
/// ([`stalls`]), or when the claim compares host times ([`Check::reads_host_time`]) and the OS
/// preempted the issuing thread during the trial (a descheduled thread once made a graph launch
/// of 1000 kernels look dearer than the launches one by one on an idle H100), or the host's CPU
/// ran slow while it issued the trial ([`crate::judge::slowdown`]: the same claim, with nobody
/// preempted, on a VM that computed ten times slower for milliseconds).
///
/// Some things a neighbour does slow our work down without stopping it, which no stall shows; a
/// claim that depends on them ([`speed_dependent`]) is judged by its pace ([`copy_pace`]):
/// - anything a copy decides (a check on a copy, on contents in a program with copies, or a
///   makespan with copies in it): a neighbour's copies share the copy engines and the bus, so
///   ours run slower, start later behind each other, and lose races they win on a GPU of our own
///   (beside a catalogue loop on an H100, a prefetch load started 170 µs after the kernel it
///   should overlap had ended, behind a slowed load of its stream, and a race without its
///   dependency corrupted 656,800 elements, both in trials with no stall). A trial whose copies
///   all ran at their calibrated pace, and no slower than the claim's other trials, was not
///   slowed. Where the copy rates were never measured with the GPU alone, the pace proves
///   nothing, and the trial is disturbed as a whole when a neighbour was busy (as every such
///   trial was before the rates were measured);
/// - makespans of programs without copies ([`Check::Faster`]): a neighbour's slices stretch
///   them, and no copy's pace tells by how much, so such a trial is disturbed as a whole beside
///   a busy neighbour.
///
/// Host time in launch calls ([`Check::LaunchCheaper`]) is judged by the calls' own lengths
/// wherever the trial may have shared the GPU ([`launch`]): the comparison counts only if it
/// survives every call that could have waited for a neighbour's slice (a call over the stall
/// threshold counted as nothing, a shorter wait allowed at each slice's end). The kernels it
/// launches stall beside a neighbour, but their stamps are not what it reads: a claim whose every
/// check is a launch cost is not disturbed by them.
///
/// And a makespan comparison whose outcome would have turned with the phase it went against at
/// its best pace in the claim's trials is disturbed, neighbour seen or not ([`makespan`]): copies
/// that run beside copies of ours all along escape the pace rule, and their stretch shows only
/// there.
pub fn marks(
    program: &Program,
    checks: &[Check],
    timelines: &[Timeline],
    sharing: Option<&Sharing>,
    tol: &Tolerances,
) -> Marks {
    marks_and_waits(program, checks, timelines, sharing, tol).0
}

/// [`marks`], with the program's [`HostWaits`] that judging them needed, so the verdict reuses
/// them instead of building the program's model again.
pub fn marks_and_waits(
    program: &Program,
    checks: &[Check],
    timelines: &[Timeline],
    sharing: Option<&Sharing>,
    tol: &Tolerances,
) -> (Marks, HostWaits) {
    let claim = Sensitivity::of(program, checks, sharing, tol);
    let mut marks = Marks {
        shared: claim.busy.clone(),
        ..Marks::default()
    };
    let stages = if claim.paced {
        copy_pace::slow_stages(program, timelines, tol)
    } else {
        vec![None; timelines.len()]
    };
    let turned = makespan::turned(program, checks, timelines, tol);
    // Trials whose mark their overlaps lift ([`overlap`]): the mark, and what they show.
    let mut lifted: Vec<Option<(String, overlap::ByOverlaps)>> = Vec::new();
    // Whether a disturbed trial shows an overlap check's pair apart with nothing to explain it.
    let mut apart_seen = false;
    for ((t, stage), turned) in timelines.iter().zip(stages).zip(turned) {
        let signs = claim.signs(&mut marks, t, stage, turned);
        let mark = claim.mark(&mut marks, t, &signs);
        // A pair let go together that alone would not have met keeps its mark.
        let by = match (&mark, signs.apart) {
            (Some(_), None) => {
                overlap::decided_by_overlaps(program, &claim.waits.host, checks, t, tol)
            }
            _ => None,
        };
        if let (Some(_), None) = (&mark, by) {
            let found = &signs.found;
            apart_seen |=
                overlap::apart_unexplained(program, &claim.waits.host, checks, t, tol, found);
        }
        let (kept, lift) = match by {
            Some(by) => (None, mark.map(|m| (m, by))),
            None => (mark, None),
        };
        lifted.push(lift);
        marks.trials.push(kept);
    }
    for (i, lift) in lifted.into_iter().enumerate() {
        let Some((mark, by)) = lift else { continue };
        if apart_seen && by == overlap::ByOverlaps::Shown {
            marks.trials[i] = Some(format!(
                "{mark}; its overlaps do not count for it, since another disturbed trial of \
                 this claim shows the pair apart with no stall of the later op to explain it"
            ));
        } else {
            marks.overlapped += 1;
        }
    }
    (marks, claim.waits.host)
}

/// Whether a check of the claim depends on how fast work runs in a way a busy neighbour changes
/// without any stall: a makespan, or a copy (see [`marks`]). Host time in launch calls is judged
/// by the calls' own lengths instead ([`launch`]).
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
        Check::Faster { .. } => true,
        Check::LaunchCheaper { .. } => false,
        // What a buffer holds after a race between copies and kernels (directly, or through a
        // kernel reading what a copy wrote) depends on the copies' speed.
        Check::Contents { .. } => program.has_copies(),
        _ => c.ops().into_iter().any(is_copy),
    })
}
