//! Launch calls a neighbour could have held: the evidence behind a [`Check::LaunchCheaper`]
//! trial beside another process on the GPU.
//!
//! The check compares host time: one graph launch's call against the calls that launch the same
//! kernels one by one. A neighbour on the GPU moves it in one way only: a launch call that must
//! reach the GPU (a graph's first launch uploads the graph; a call whose stream's queue is full
//! waits for room) waits until our context has the GPU again, which beside a time-slicing
//! neighbour is the rest of the neighbour's slice, hundreds of µs to milliseconds. Beside a
//! catalogue loop on an H100 one graph launch of 100 kernels took 838 µs against 474 µs for the
//! 100 launches, with no stall in the stamps. Such a wait is no cost of the call, and nothing in
//! the stamps says which call waited. Before this rule every launch-cost trial beside a busy
//! neighbour was disturbed as a whole.
//!
//! What the trial does show is each call's own length. A call that waited out a neighbour's
//! slice, or most of one, is longer than the stall threshold, the shortest hold the lab takes for
//! a neighbour anywhere ([`super::stall_threshold`]; 20–80 µs, against 2–8 µs for a launch call
//! on an idle H100 or H200, at most 30 µs in every recorded idle trial); such a call may have cost
//! nothing of its own. A call that began near the end of a slice waited for its tail only, and
//! stays under the threshold; that happens at most once per slice, and a time-slicing
//! neighbour's slices last milliseconds (1.5–2.5 ms beside the neighbours measured on an H100),
//! so at most once per [`MIN_SLICE_NS`] of the launches' span, and once more. So, when the trial
//! may have shared the GPU (NVML saw a busy neighbour, or the claim's own kernels stalled or were
//! held back):
//! - a Yes (the graph launch was cheaper) counts only if the launches one by one, with every call
//!   over the threshold counted as nothing, still took longer than the graph launch and a tail
//!   wait of up to the threshold for each [`MIN_SLICE_NS`] of their span and one more: the
//!   launches' own cost is at least that much, and the graph launch's own waiting only made the
//!   Yes harder to reach;
//! - a No (the graph launch was dearer) counts only if the graph launch's call was itself no
//!   longer than the threshold, since it may otherwise have waited for the GPU.
//!
//! (A first form cut each long call to the threshold instead of counting it as nothing, and took
//! no tail waits into account: a call that waited a slice may have cost almost nothing, so that
//! form could count a Yes a neighbour had made. A review found it before any recorded verdict
//! turned on it.)
//!
//! Measured before the rule, in every run recorded beside a neighbour on an H100 (a catalogue
//! loop, a bf16 matmul loop, a page-locked copy loop, PyTorch jobs: 14 runs, 183 trials of
//! `graph.launch_cost.100` and `.1000`), the longest launch one by one took 101 µs (14 of
//! 117,300 over 45 µs), none a slice, and the graph launch was 1.6–5.0× cheaper than the
//! launches one by one, as on the idle GPU (3.0–4.5×).
//!
//! The rule leans on time slices: under MPS, where clients share SMs without them, a launch call
//! that waits for room in its queue waits for our own kernels, which a neighbour slows without a
//! slice, and such waits can be shorter than the threshold (docs/gpus.md: prefer exclusive mode there).
//!
//! The host's own pace is judged apart, before this rule ([`crate::judge::slowdown`]): the
//! stretches in which the CPU computed slowly, and a preempted issuing thread, set the trial
//! aside wherever they fall.

use crate::judge::relation::Check;

/// The shortest time slice a time-slicing neighbour is taken to hold the GPU for: half the
/// shortest measured beside the neighbours of issue 25 on an H100 (1.5–2.5 ms). Each wait of a
/// launch call shorter than the stall threshold is the tail of one slice.
pub const MIN_SLICE_NS: u64 = 1_000_000;
use crate::measured::timeline::Timeline;
use crate::program::{OpId, Program};

/// Why a neighbour on the GPU could have decided this trial's launch-cost comparisons, or
/// `None` when every one survives the launch calls longer than `threshold_ns` (see the module).
pub fn held_launch(
    program: &Program,
    checks: &[Check],
    timeline: &Timeline,
    threshold_ns: u64,
) -> Option<String> {
    checks.iter().find_map(|c| match *c {
        Check::LaunchCheaper { graph, first, last } => {
            spoiled(program, timeline, graph, first, last, threshold_ns)
        }
        _ => None,
    })
}

fn spoiled(
    program: &Program,
    timeline: &Timeline,
    graph: OpId,
    first: OpId,
    last: OpId,
    threshold_ns: u64,
) -> Option<String> {
    let launch = timeline
        .host_call(graph)
        .map(|c| c.end_ns.saturating_sub(c.begin_ns))?;
    let (mut direct, mut own, mut long) = (0u64, 0u64, 0usize);
    let (mut begin, mut end) = (u64::MAX, 0u64);
    for c in timeline.host_calls_of(first, last) {
        let took = c.end_ns.saturating_sub(c.begin_ns);
        direct = direct.saturating_add(took);
        // A call over the threshold may have waited all along: it counts as nothing.
        if took <= threshold_ns {
            own = own.saturating_add(took);
        } else {
            long += 1;
        }
        (begin, end) = (begin.min(c.begin_ns), end.max(c.end_ns));
    }
    let tails = 1 + end.saturating_sub(begin) / MIN_SLICE_NS;
    let allowed = threshold_ns.saturating_mul(tails);
    let micros = |ns: u64| ns as f64 / 1e3;
    let threshold = micros(threshold_ns);
    if launch < direct {
        // A Yes, as the measurement reads it.
        (launch.saturating_add(allowed) >= own).then(|| {
            format!(
                "disturbed: the launches one by one took {:.2} µs, the graph launch {:.2} µs; \
                 beside another process on the GPU a launch call may have waited for it: \
                 counting the {long} launches over {threshold:.2} µs (the stall threshold) as \
                 nothing, the launches took {:.2} µs, which is not more than the graph launch \
                 and {tails} wait{} of up to {threshold:.2} µs at a time slice's end",
                micros(direct),
                micros(launch),
                micros(own),
                if tails == 1 { "" } else { "s" }
            )
        })
    } else {
        // A No: the graph launch may have waited out the neighbour's slice.
        (launch > threshold_ns).then(|| {
            format!(
                "disturbed: the graph launch of {} took {:.2} µs against {:.2} µs for the \
                 launches one by one, and a launch call over {threshold:.2} µs (the stall \
                 threshold) may have waited for the GPU that another process held",
                program.label(graph),
                micros(launch),
                micros(direct)
            )
        })
    }
}

/// Whether a check reads host time in launch calls, which no stamp of the GPU's shows.
pub fn is_launch_cost(c: &Check) -> bool {
    matches!(c, Check::LaunchCheaper { .. })
}
