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
pub(crate) fn latest_free_start(
    waits: &HostWaits,
    timeline: &Timeline,
    op: OpId,
    tol: &Tolerances,
) -> Option<i64> {
    let (offset, synced) = match synced_delay(timeline, tol) {
        Some(delay) => (delay, true),
        None => (shortest_delay(waits, timeline)?, false),
    };
    let mut ready = (timeline.issued_ns(op)? as i64).checked_add(offset)?;
    // Nothing ran on the GPU before a held trial's release: an op issued before it was ready only
    // then ([`held_release`]). The offset from the trial's own starts already counts from there.
    if synced {
        if let Some((release, _)) = held_release(waits, timeline, tol) {
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
pub(crate) fn held_release(
    waits: &HostWaits,
    timeline: &Timeline,
    tol: &Tolerances,
) -> Option<(i64, u64)> {
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
pub(crate) fn synced_delay(timeline: &Timeline, tol: &Tolerances) -> Option<i64> {
    synced_delay_within(timeline, tol, tol.stall_threshold_ns() / 4)
}

/// [`synced_delay`] with a sync of at most `max_error_ns` error.
pub(crate) fn synced_delay_within(
    timeline: &Timeline,
    tol: &Tolerances,
    max_error_ns: u64,
) -> Option<i64> {
    let clock = timeline.clock?;
    let latency = tol.launch_latency_ns?;
    if clock.error_ns > max_error_ns {
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
