//! When an op was ready to start: its issue moved onto the GPU clock, the question every order
//! and missing overlap depends on (docs/design.md, decisions 2 and 21).

use super::{micros, signed, HostWaits};
use crate::measured::calibration::{Tolerances, HOST_FN_LATENCY_NS};
use crate::measured::timeline::Timeline;
use crate::program::OpId;

/// When `op` would have started at the latest had it depended on nothing: ready plus jitter.
///
/// Ready is the op's issue time moved onto the GPU clock. With the trial's clock sync and a
/// calibrated launch latency, by those: issue + the sync's offset + the launch latency + the
/// sync's error, whatever else the trial did (a host function first in a stream once made its
/// kernel, the only stamped op, look issued late). Without them (files recorded before every
/// trial was clock-synced), by the smallest `start − issue` among the ops that depend on nothing
/// (no earlier op in their stream, no wait before them), which started as soon as they could.
pub fn latest_free_start(
    waits: &HostWaits,
    timeline: &Timeline,
    op: OpId,
    tol: &Tolerances,
) -> Option<i64> {
    let (offset, synced) = match synced_delay(timeline, tol) {
        Some(delay) => (delay, true),
        // A trace has one clock: a delay made up from the trial's own ops would move its calls
        // by however long those ops were queued.
        None if timeline.one_clock() => return None,
        None => (shortest_delay(waits, timeline)?, false),
    };
    let mut ready = (timeline.issued_ns(op)? as i64).checked_add(offset)?;
    // Nothing ran on the GPU before a held trial's release: an op issued before it was ready only
    // then ([`held_release`]); likewise an op that reached the GPU during a hold in mid-trial
    // ([`releases`]). The offset from the trial's own starts already counts from there.
    if synced {
        if let Some(release) = held_until(&releases(waits, timeline, tol), timeline, op) {
            ready = ready.max(release);
        }
    }
    ready
        .checked_add(signed(tol.launch_jitter_ns))?
        .checked_add(host_fn_latency(timeline, op))
}

/// When a trial that something else held back as a whole was let go, and how long it was held:
/// the GPU's first start ([`Timeline::gpu_release`]) when that came over a stall threshold after
/// the earliest ready time (by the clock sync) of an op on the GPU that depends on nothing. Such
/// an op starts within a launch jitter of being ready on a GPU of our own; beside a neighbour that
/// takes time slices, 99 % of the trials on an H100 beside a loop of bf16 matrix products were
/// held 1.8–2.5 ms. Nothing of the trial ran before the release, so every op issued before it was
/// pending then and ready from then on; the order in which the GPU took them up is its own
/// (`crate::judge::disturbance` sets aside the trials of checks that read it).
pub fn held_release(
    waits: &HostWaits,
    timeline: &Timeline,
    tol: &Tolerances,
) -> Option<(i64, u64)> {
    // A trace's trial is a window of someone's program: its first op started late because the
    // program's own earlier work had the GPU, which the trace shows, not a neighbour.
    if timeline.one_clock() {
        return None;
    }
    let delay = synced_delay(timeline, tol)?;
    let release = timeline.gpu_release()?;
    let on_gpu = timeline
        .spans
        .iter()
        .map(|s| s.op)
        .chain(timeline.witnessed.iter().map(|w| w.op));
    let first_ready = on_gpu
        .filter(|&op| waits.free(op) && !waits.captured(op))
        .filter_map(|op| (timeline.issued_ns(op)? as i64).checked_add(delay))
        .min()?;
    let held = release.saturating_sub(first_ready);
    (held > signed(tol.stall_threshold_ns())).then_some((release, held as u64))
}

/// A point where something else had the GPU and then let our work go: the trial's start
/// ([`held_release`]), or a stretch in mid-trial where nothing of ours ran on the GPU and
/// nothing of ours was waiting there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    /// Ops that reached the GPU from this instant on were held (`i64::MIN` at the trial's start:
    /// every op issued before the release).
    pub from: i64,
    /// When the GPU took them up: its first start after the hold.
    pub at: i64,
    /// How long the first of them waited beyond its ready time.
    pub held_ns: u64,
}

impl Release {
    /// Whether the hold fell in mid-trial, after work of the trial had run.
    pub fn mid_trial(&self) -> bool {
        self.from > i64::MIN
    }
}

/// Every release of the trial, in time order: the trial's start ([`held_release`]), then each
/// hold in mid-trial.
///
/// Beside a neighbour that takes time slices, the GPU changes hands whenever our work pauses: a
/// host sync, a host function, a host that issues the next op late. An op issued then waits out
/// the neighbour's slice (1.7–2.5 ms beside a loop of bf16 matrix products on an H100), and that
/// wait is an unexplained stall to [`crate::judge::disturbance`]: every trial of
/// `implicit.mem_free` (K1, `cuMemFree`, K2) was set aside for K2's. Such a stretch is a release
/// like the trial's start, and not a stall, under one condition: **nothing of ours was pending
/// on the GPU when it began.** Every op that could have reached the GPU before the stretch (its
/// issuing call began, on the GPU clock less the sync's error, before it) had ended by then. Then
/// the stretch cut nothing apart: what ran before it ran as on a GPU of our own (any stall there
/// is judged as before), and what came after could not have started before it, on any GPU,
/// since it had not been issued. What the hold loses is what the trial's start loses: the order
/// and spacing in which the ops issued during it reached the GPU
/// (`crate::judge::disturbance` sets aside the checks that read them, and the amounts of time a
/// stretch lengthens).
///
/// A first version took every stretch where nothing of ours ran for a release, pending work or
/// not, and decided `streams.non_blocking_pair` "Violated" beside the matmul loop: a switch can
/// fall where no op of ours runs and still keep a pending one from starting beside another.
/// Only with the trial's clock sync, on one device, without graphs (a captured op reaches the
/// GPU with its launch), and with every op that takes time placed.
pub fn releases(waits: &HostWaits, timeline: &Timeline, tol: &Tolerances) -> Vec<Release> {
    let mut found: Vec<Release> = held_release(waits, timeline, tol)
        .map(|(at, held_ns)| Release {
            from: i64::MIN,
            at,
            held_ns,
        })
        .into_iter()
        .collect();
    if let Some(mid) = mid_trial_releases(waits, timeline, tol) {
        found.extend(mid);
    }
    found
}

fn mid_trial_releases(
    waits: &HostWaits,
    timeline: &Timeline,
    tol: &Tolerances,
) -> Option<Vec<Release>> {
    let delay = synced_delay(timeline, tol)?;
    // Only with a lab trial's clock sync (see `held_release` for a trace's).
    if timeline.clock?.shared {
        return None;
    }
    let timed: Vec<OpId> = waits.timed_direct()?.collect();
    if timeline.spans.iter().any(|s| s.device != 0) {
        return None;
    }
    let threshold = signed(tol.stall_threshold_ns());
    // Where each op that takes time ran (`None`: not placed), and the earliest instant it could
    // have reached the GPU: its issuing call's begin, less the sync's error.
    let mut ops = Vec::with_capacity(timed.len());
    for &op in &timed {
        let on_gpu = timeline.host_span(op).is_none();
        let placed = timeline.interval(op).map(|i| {
            (
                i.start.saturating_sub(signed(i.slack_ns)),
                i.end.saturating_add(signed(i.slack_ns)),
            )
        });
        let reached = reached(timeline, op);
        let ready = timeline
            .issued_ns(op)
            .and_then(|i| (i as i64).checked_add(delay));
        ops.push((on_gpu, placed, reached?, ready?));
    }
    // What of ours ran: the GPU's ops, and our host functions too (the GPU idles while one runs
    // and the op behind it waits for it, which is no hold).
    let mut busy: Vec<(i64, i64)> = ops.iter().map(|o| o.1).collect::<Option<_>>()?;
    busy.sort_unstable();
    let mut found = Vec::new();
    let mut covered = busy.first()?.1;
    for &(start, end) in &busy[1..] {
        if start.saturating_sub(covered) > threshold {
            let (from, at) = (covered, start);
            // Nothing pending when the stretch began: whatever could have reached the GPU
            // before it had ended (a host function too, on the host).
            let clean = ops.iter().all(|&(_, placed, reached, _)| {
                reached >= from || placed.is_some_and(|p| p.1 <= from)
            });
            let first_ready = (ops.iter())
                .filter(|o| o.0 && o.2 >= from && o.3 < at)
                .map(|o| o.3)
                .min();
            if let (true, Some(ready)) = (clean, first_ready) {
                let held = at.saturating_sub(ready);
                if held > threshold {
                    found.push(Release {
                        from,
                        at,
                        held_ns: held as u64,
                    });
                }
            }
        }
        covered = covered.max(end);
    }
    Some(found)
}

/// The earliest instant `op` could have reached the GPU: its issuing call's begin on the GPU
/// clock, less the clock sync's error (`None` without a sync or a call).
fn reached(timeline: &Timeline, op: OpId) -> Option<i64> {
    let clock = timeline.clock?;
    let begin = timeline.host_call(op)?.begin_ns;
    Some(clock.to_gpu(begin).saturating_sub(signed(clock.error_ns)))
}

/// When the release that held `op` let it go, if one did: the trial's start holds every op
/// issued before it; one in mid-trial, the ops that reached the GPU during its stretch.
pub fn held_until(releases: &[Release], timeline: &Timeline, op: OpId) -> Option<i64> {
    releases
        .iter()
        .filter(|r| {
            !r.mid_trial() || reached(timeline, op).is_some_and(|t| t >= r.from && t < r.at)
        })
        .map(|r| r.at)
        .max()
}

/// Whether a hold could have made `a` and `b` run together where on a GPU of our own they would
/// not have: the one whose issuing call began first was held (it reached the GPU before the
/// release that let it go), and the other's call began after the first could have ended had it
/// not been held (its earliest arrival plus its length), yet before it did end. Then whether they
/// met, and which went first, is the hold's doing. The catalogue issues its ops microseconds
/// apart, and its kernels last tens of microseconds; a program that issues an op after a call
/// that holds the host (a pageable copy, an allocation) can meet that case: held A and B issued
/// after a 350 µs allocation, let go together or one after the other, ran together, where alone
/// A had ended before B was issued. Arrival times are the calls' begins on the GPU clock less the
/// sync's error: a pageable copy's call returns only once its data has nearly moved. An op that
/// cannot be placed says nothing either way (its checks are undecided).
/// Returns the held op and the other.
pub fn released_apart(
    releases: &[Release],
    timeline: &Timeline,
    a: OpId,
    b: OpId,
) -> Option<(OpId, OpId)> {
    if releases.is_empty() {
        return None;
    }
    let (ra, rb) = (reached(timeline, a)?, reached(timeline, b)?);
    let (first, other, then, then_reached) = match ra <= rb {
        true => (a, b, ra, rb),
        false => (b, a, rb, ra),
    };
    let held = held_until(releases, timeline, first).is_some_and(|release| then < release);
    let ran = timeline.interval(first).filter(|_| held)?;
    let alone_end = then.saturating_add(ran.end.saturating_sub(ran.start));
    (then_reached >= alone_end && then_reached < ran.end).then_some((first, other))
}

/// [`HOST_FN_LATENCY_NS`] for a host function (an op with a host span), else 0.
fn host_fn_latency(timeline: &Timeline, op: OpId) -> i64 {
    match timeline.host_span(op).is_some() {
        true => signed(HOST_FN_LATENCY_NS),
        false => 0,
    }
}

/// The host-to-GPU delay of an op that depends on nothing, from the clock sync: its offset, the
/// calibrated launch latency, and the sync's error (so that an op is never taken as ready sooner
/// than it could have been). A sync whose error is over a quarter of the stall threshold (its
/// kernel held back by a neighbour in every round) is not used, here as in the disturbance rule,
/// which could not have seen a trial held back as a whole with it.
pub fn synced_delay(timeline: &Timeline, tol: &Tolerances) -> Option<i64> {
    synced_delay_within(timeline, tol, tol.stall_threshold_ns() / 4)
}

/// [`synced_delay`] with a sync of at most `max_error_ns` error.
pub fn synced_delay_within(
    timeline: &Timeline,
    tol: &Tolerances,
    max_error_ns: u64,
) -> Option<i64> {
    let clock = timeline.clock?;
    let latency = tol.launch_latency_ns?;
    if clock.error_ns > max_error_ns && !clock.shared {
        return None;
    }
    clock
        .offset_ns
        .checked_add(signed(latency))?
        .checked_add(signed(clock.error_ns))
}

/// Without a usable sync, the smallest `start − issue` among the ops that depend on nothing
/// ([`HostWaits::free`]). A captured op counts from its launch call's begin and a copy from its
/// call's begin, which only makes the delay longer: a graph's nodes start before the launch
/// returns, and a pageable copy holds the host until it has nearly finished.
fn shortest_delay(waits: &HostWaits, timeline: &Timeline) -> Option<i64> {
    timeline.issue_offset_where(|op| waits.free(op), |op| waits.captured(op))
}

/// Whether ready times come from the trial's clock sync (see [`latest_free_start`]).
pub(super) fn synced(timeline: &Timeline, tol: &Tolerances) -> bool {
    synced_delay(timeline, tol).is_some()
}

/// How a ready time was found, for reasons: "issued, plus 5.10 µs launch latency, 1.20 µs clock
/// error and 2.00 µs launch jitter".
pub(super) fn ready_how(timeline: &Timeline, tol: &Tolerances, op: OpId) -> String {
    let us = |ns: u64| format!("{:.2} µs", ns as f64 / 1e3);
    let host_fn = match host_fn_latency(timeline, op) {
        0 => String::new(),
        _ => format!(
            ", plus {} host-function latency (a host function starts up to 2.8 ms after it is \
             ready)",
            us(HOST_FN_LATENCY_NS)
        ),
    };
    let how = match (timeline.clock, tol.launch_latency_ns) {
        (Some(c), Some(l)) if synced(timeline, tol) => format!(
            "issued, plus {} launch latency, {} clock-sync error and {} launch jitter",
            us(l),
            us(c.error_ns),
            us(tol.launch_jitter_ns)
        ),
        // The wording of files recorded before every trial was clock-synced, kept as it was.
        _ => format!(
            "issued, plus {} launch jitter",
            micros(signed(tol.launch_jitter_ns))
        ),
    };
    how + &host_fn
}
