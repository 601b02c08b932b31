//! What a claim reads of its trials, and so which disturbances spoil them: the claim-wide view
//! ([`Sensitivity`]) and, per trial, the signs of a neighbour it shows and the mark chosen from
//! them ([`super::marks()`]).

use super::stall::Waits;
use super::{copy_pace, launch, speed_dependent, stall_threshold, stalls_with, Marks, Stall};
use crate::judge::relation::Check;
use crate::judge::relation::{released_apart, releases, Release};
use crate::measured::calibration::Tolerances;
use crate::measured::sharing::Sharing;
use crate::measured::timeline::Timeline;
use crate::program::{ApiCall, OpId, OpKind, Program};

/// What a claim's program and checks make of a disturbance, read once for all its trials (see
/// [`marks`]).
pub(super) struct Sensitivity<'a> {
    program: &'a Program,
    checks: &'a [Check],
    tol: &'a Tolerances,
    /// Who used the GPU beside the claim, when a neighbour was busy.
    pub(super) busy: Option<String>,
    /// Every check reads host time in launch calls: the stamps decide nothing.
    launch_only: bool,
    /// A speed-dependent claim with copies or memsets, judged by their pace.
    pub(super) paced: bool,
    /// The copy rates were measured with the GPU alone (or there are no copies).
    trusted: bool,
    /// A speed-dependent claim that no pace can clear: disturbed as a whole beside a neighbour.
    blanket: bool,
    host_times: bool,
    /// The models' waits, and the relations' view of the host calls (`waits.host`).
    pub(super) waits: Waits,
    arrival: bool,
    lengths: bool,
}

/// What one trial shows of a disturbance, before one of them is chosen as its mark.
pub(super) struct Signs {
    /// The holds a neighbour put on it.
    held: Vec<Release>,
    /// Its stalls, the longest first (none for a claim of launch costs only).
    pub(super) found: Vec<Stall>,
    /// A hold that lost an order or a length the claim reads.
    lost_order: Option<Release>,
    /// A pair of a check let go together that alone would not have met.
    pub(super) apart: Option<(OpId, OpId)>,
    /// A launch call that may have waited for a neighbour's slice.
    launch_waited: Option<String>,
    /// A copy or a stage below its pace.
    slow: Option<copy_pace::Slowed>,
    /// A makespan that would have turned at its phase's best pace.
    turned: Option<String>,
}

impl<'a> Sensitivity<'a> {
    pub(super) fn of(
        program: &'a Program,
        checks: &'a [Check],
        sharing: Option<&Sharing>,
        tol: &'a Tolerances,
    ) -> Sensitivity<'a> {
        let busy = sharing.filter(|s| s.busy()).and_then(Sharing::describe);
        // The stamps decide nothing of a claim whose every check reads host time in launch calls.
        let launch_only = !checks.is_empty() && checks.iter().all(launch::is_launch_cost);
        let speed = speed_dependent(program, checks);
        let memsets = program.ops.iter().any(|o| {
            matches!(
                o.kind,
                OpKind::Api {
                    call: ApiCall::Memset,
                    ..
                }
            )
        });
        let paced = speed && (program.has_copies() || memsets);
        // Memsets have no calibrated rate: their own trials are the reference.
        let trusted = tol.copy_rates.is_some_and(|r| r.alone) || !program.has_copies();
        let waits = Waits::of(program);
        Sensitivity {
            program,
            checks,
            tol,
            busy,
            launch_only,
            paced,
            trusted,
            blanket: speed && (!paced || !trusted),
            host_times: checks.iter().any(Check::reads_host_time),
            arrival: reads_arrival(&waits, checks),
            waits,
            lengths: checks.iter().any(reads_lengths),
        }
    }

    /// What trial `t` shows; `stage` and `turned` are the claim-wide rules' findings for it.
    pub(super) fn signs(
        &self,
        marks: &mut Marks,
        t: &Timeline,
        stage: Option<copy_pace::Slowed>,
        turned: Option<String>,
    ) -> Signs {
        let (program, checks, tol) = (self.program, self.checks, self.tol);
        let held = releases(&self.waits.host, t, tol);
        let mut found = stalls_with(&self.waits, &held, program, t, tol);
        if let Some(h) = horizon(checks, t) {
            found.retain(|s| s.at_ns < h);
        }
        // What the stamps show of a neighbour, for the launch calls' rule.
        let stamps_saw = !found.is_empty() || !held.is_empty();
        if self.launch_only {
            marks.launch_saw_neighbour |= stamps_saw;
            found.clear();
        }
        // Only where the trial may have shared the GPU (`None` for claims without launch costs).
        let launch_waited = (stamps_saw || self.busy.is_some())
            .then(|| launch::held_launch(program, checks, t, stall_threshold(tol)))
            .flatten();
        let slow_copy = if self.paced {
            copy_pace::slow_copies(program, t, tol).into_iter().next()
        } else {
            None
        };
        let lost_order = held
            .iter()
            .find(|r| !self.launch_only && (self.arrival || (r.mid_trial() && self.lengths)))
            .copied();
        let apart = checks.iter().find_map(|c| {
            let (a, b) = match *c {
                Check::Overlaps { a, b } | Check::Serializes { a, b } => (a, b),
                Check::Precedes { before, after } | Check::Separates { before, after, .. } => {
                    (before, after)
                }
                _ => return None,
            };
            released_apart(&held, t, a, b)
        });
        Signs {
            held,
            found,
            lost_order,
            apart,
            launch_waited,
            slow: slow_copy.or(stage),
            turned,
        }
    }

    /// The mark of trial `t`: the first of its signs, in the order below, counted in `marks`.
    pub(super) fn mark(&self, marks: &mut Marks, t: &Timeline, signs: &Signs) -> Option<String> {
        let program = self.program;
        let beside = || {
            self.busy
                .as_ref()
                .map(|who| format!(" (the GPU was shared with {who})"))
                .unwrap_or_default()
        };
        if let Some(worst) = signs.found.first() {
            marks.stalls.push(worst.len_ns);
            Some(format!(
                "disturbed: {} unexplained stall{} (threshold {:.2} µs), the longest: {}",
                signs.found.len(),
                if signs.found.len() == 1 { "" } else { "s" },
                stall_threshold(self.tol) as f64 / 1e3,
                worst.describe(program, t)
            ))
        } else if let Some(r) = signs.lost_order {
            marks.held.push(r.held_ns);
            Some(held_mark(&r, self.arrival))
        } else if let Some((a, b)) = signs.apart {
            let longest = signs.held.iter().map(|r| r.held_ns).max();
            marks.held.push(longest.unwrap_or(0));
            Some(format!(
                "disturbed: something else held {} back until {} was issued, although alone it \
                 would have ended before that: whether they ran together is the hold's doing",
                program.label(a),
                program.label(b)
            ))
        } else if self.host_times && t.preempted > 0 {
            marks.preempted += 1;
            Some(format!(
                "disturbed: the OS preempted the issuing thread {} time{} while it issued the \
                 trial, which moves the host times this claim compares",
                t.preempted,
                if t.preempted == 1 { "" } else { "s" }
            ))
        } else if let Some(why) = crate::judge::slowdown::spoiled(self.checks, t) {
            marks.slowed += 1;
            Some(why)
        } else if let Some(why) = &signs.launch_waited {
            marks.waited += 1;
            Some(format!("{why}{}", beside()))
        } else if let Some(slow) = &signs.slow {
            marks.paced += 1;
            Some(format!("disturbed: {}{}", slow.describe(program), beside()))
        } else if let Some(why) = &signs.turned {
            marks.turned += 1;
            Some(format!("{why}{}", beside()))
        } else if let (true, Some(who)) = (self.blanket, &self.busy) {
            Some(self.blanket_mark(who))
        } else {
            None
        }
    }

    /// The mark of a speed-dependent claim's trial beside `who`, which no pace cleared.
    fn blanket_mark(&self, who: &str) -> String {
        if self.paced && !self.trusted {
            format!(
                "disturbed: {who} used the GPU, and this claim depends on how fast copies run: \
                 the copy engines may have been shared, and the copy rates were never measured \
                 with the GPU alone to tell"
            )
        } else {
            format!(
                "disturbed: {who} used the GPU, which stretches times without stopping our \
                 work, and this claim depends on their length"
            )
        }
    }
}

/// The mark of a trial whose hold `r` lost what the claim reads: the order in which the GPU
/// received its ops (`arrival`), or the lengths and races across a hold in mid-trial.
fn held_mark(r: &Release, arrival: bool) -> String {
    match (r.mid_trial(), arrival) {
        (false, _) => format!(
            "disturbed: the trial was held back as a whole for {:.2} µs (something else \
             had the GPU) and its ops were let go together, so the order in which the GPU \
             received ops of different streams, which this claim reads, was lost",
            r.held_ns as f64 / 1e3
        ),
        (true, true) => format!(
            "disturbed: the trial was held back in mid-trial for {:.2} µs (something else \
             had the GPU; nothing of ours was pending) and the ops issued meanwhile were \
             let go together, so the order in which the GPU received ops of different \
             streams, which this claim reads, was lost",
            r.held_ns as f64 / 1e3
        ),
        (true, false) => format!(
            "disturbed: the trial was held back in mid-trial for {:.2} µs (something else \
             had the GPU), which lengthens the times, or changes the races, this claim \
             reads",
            r.held_ns as f64 / 1e3
        ),
    }
}

/// Whether a check's truth depends on the order in which the GPU received ops of streams that
/// no rule orders: which of two equal-priority kernels is dispatched first (`Behind`,
/// `Interleaves`), or whether one of two independent ops waited for the other (`Precedes`,
/// `Serializes` of ops that do not wait for each other even with every stream in one hardware
/// queue). A trial held back as a whole and let go at once received all its pending ops
/// together, in an order of the GPU's choosing: beside another catalogue run on an H100, both
/// kernels of `priority.equal_waits_behind` were let go together and the later went first.
/// Orders that a stream, an event or the legacy stream make are kept across the hold.
fn reads_arrival(waits: &Waits, checks: &[Check]) -> bool {
    checks.iter().any(|c| match *c {
        Check::Behind { .. } | Check::Interleaves { .. } => true,
        Check::Precedes { before, after } => !waits.may_wait(before, after),
        Check::Serializes { a, b } => !waits.may_wait(a, b) && !waits.may_wait(b, a),
        _ => false,
    })
}

/// When the last thing the claim's checks read was over, on the GPU clock: the latest end of
/// their ops (a host call's return, moved through the trial's clock sync). A stall that began
/// after it cannot have moved anything a check reads: beside a neighbour that takes time slices,
/// the GPU is handed over at every host sync, and `implicit.mem_free` (does `cuMemFree` return
/// only after K1?) lost every trial to K2 waiting out the slice that followed the sync. `None`
/// (every stall counts) when a check reads no ops (buffer contents: whatever ran before the
/// read-back) or an op cannot be placed.
fn horizon(checks: &[Check], t: &Timeline) -> Option<i64> {
    let mut latest = i64::MIN;
    for c in checks {
        // A makespan's phase ends when its last op ends, which need not be the phase's last op:
        // beside another catalogue run on an H100, `scenario.pipeline.8`'s 8-stream phase ended
        // 1.6 ms after D7, its last op, behind kernels held 1.2–1.4 ms, and a horizon at D7's end
        // let that trial count: "Violated, Sometimes 4/5".
        let ops = c.ops_read();
        if ops.is_empty() {
            return None;
        }
        for op in ops {
            let end = match t.interval(op) {
                Some(i) => i.end.saturating_add(i.slack_ns as i64),
                None => t.host_to_gpu(t.host_call(op)?.end_ns)?,
            };
            latest = latest.max(end);
        }
    }
    (latest > i64::MIN).then_some(latest)
}

/// Whether a check reads an amount of time that a hold in mid-trial would lengthen (a makespan,
/// host time in calls, an elapsed time, how long a call held the host), or the outcome of a race
/// that the ops let go together after it could run differently (a buffer's contents).
fn reads_lengths(c: &Check) -> bool {
    matches!(
        c,
        Check::Faster { .. }
            | Check::LaunchCheaper { .. }
            | Check::ElapsedCovers { .. }
            | Check::Blocks { .. }
            | Check::Contents { .. }
    )
}
