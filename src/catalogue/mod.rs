//! The claim catalogue, one file per family of claims.
//!
//! Every claim cites its source: a seed file of the study notes (`shared/seeds/`, Chinese notes;
//! the section is quoted in its original words) or a section of NVIDIA's documentation.
//! docs/claims.md lists each claim with its verdict on the GPUs it was measured on.
//!
//! Claims take the spin length as a parameter: every kernel in a claim spins for a multiple of
//! it, so the whole catalogue can be shortened or lengthened at once (`--spin-us`) to find how
//! short reliable verdicts can go.
//!
//! **May import:** `judge` (claims, checks, expectations), `program`, `border`.

mod allocator;
mod connections;
mod copies;
mod event_waits;
mod graphs;
mod host;
mod implicit;
pub mod multi_gpu;
mod null_stream;
mod ordering;
mod per_thread;
mod priorities;
pub mod scenarios;
mod training;

pub use allocator::{alloc_async_other_stream, alloc_async_same_stream, ALLOC_BYTES};
pub use connections::{
    connections_default, connections_one_adjacent, connections_one_false_dependency,
    connections_one_single_stream,
};
pub use copies::{
    copy_engines_both_ways, copy_engines_same_way, copy_overlaps_kernel, copy_returns,
    malloc_memory, pinned_bandwidth, racing_writers, BIG_COPY, COPY_BYTES, RACE_ELEMENTS,
};
pub use event_waits::{
    event_elapsed_time, event_rerecord, event_third_stream, event_wait_orders, event_wait_snapshot,
};
pub use graphs::{graph_keeps_order, graph_launch_cost, COST_SPIN_DIVISOR};
pub use host::{
    host_fn_in_stream_order, launch_returns_early, queries_until_done, syncs_return_after_work,
};
pub use implicit::{implicit_sync, Between, IMPLICIT_BYTES};
pub use multi_gpu::multi_gpu;
pub use null_stream::{
    non_blocking_exempt, non_blocking_pair, null_barrier, seed002_non_blocking,
    seed002_without_null,
};
pub use ordering::fifo;
pub use per_thread::{
    per_thread_record_under_legacy, per_thread_vs_blocking, per_thread_vs_legacy,
};
pub use priorities::{priority_equal_waits, priority_jumps_ahead, priority_no_preemption};
pub use training::{hook_on_comm_stream, hook_on_compute_stream, hook_one_connection};

use crate::judge::claim::{Claim, ClaimBuilder};
use crate::program::{HostFnApi, OpId, Place, StreamId, StreamKind, SyncTarget};
use std::time::Duration;

/// Both issue orders of one kernel on each of two streams, separated by a device sync:
/// `X` on `x` then `Y` on `y`, sync, then `Y'` on `y` and `X'` on `x`. Returns the pairs in issue
/// order, `[(X, Y), (Y', X')]`, for claims that must hold whichever kernel is issued first.
fn both_issue_orders(
    c: &mut ClaimBuilder,
    (x, x_label): (StreamId, &str),
    (y, y_label): (StreamId, &str),
    spin: Duration,
) -> [(OpId, OpId); 2] {
    let first = c.spin(x, x_label, spin);
    let second = c.spin(y, y_label, spin);
    c.host_sync(SyncTarget::Device);
    let third = c.spin(y, format!("{y_label}'"), spin);
    let fourth = c.spin(x, format!("{x_label}'"), spin);
    [(first, second), (third, fourth)]
}

/// Seed file names, as cited in claims and docs/claims.md.
pub mod seeds {
    /// CSDN notes, "7. Stream and Event" (sleep kernels, single vs multi stream).
    pub const S000: &str = "000_a5eb0762e7ac500e.txt";
    /// "CUDA 流（Streams）示例": priorities, events, callbacks, pinned memory.
    pub const S001: &str = "001_a7500a1b7456fe7d.txt";
    /// "CUDA 流简介" with the weight-prefetch demo and the null-stream rules.
    pub const S002: &str = "002_84e77744080bec39.txt";
    /// "CUDA Stream & Event" reading list and the gradient-hook experiments.
    pub const S003: &str = "003_2d7c825d6571bec0.txt";
    /// "异步内存拷贝 - 实践篇" notebook.
    pub const S004: &str = "004_7b52a762cd78229c.txt";
}

/// Spin length of the catalogue's kernels unless told otherwise. A kernel must still be running
/// when the ops issued after it reach the GPU (a few µs per launch, plus the launch jitter), or
/// its relations are undecided; see docs/claims.md for how short it could go.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(50);

/// The five core claims of the lab, with the same-stream FIFO claim once per stream kind.
pub fn core(spin: Duration) -> Vec<Claim> {
    let mut claims: Vec<Claim> = StreamKind::ALL.iter().map(|&k| fifo(k, spin)).collect();
    claims.extend([
        null_barrier(spin),
        non_blocking_exempt(spin),
        non_blocking_pair(spin),
        event_wait_orders(spin),
        event_wait_snapshot(spin),
        connections_default(spin),
        connections_one_false_dependency(spin),
        connections_one_single_stream(spin),
    ]);
    claims
}

/// The synchronization claims of the notes about streams, events, priorities and connections.
pub fn synchronization(spin: Duration) -> Vec<Claim> {
    vec![
        per_thread_vs_blocking(spin),
        per_thread_vs_legacy(spin),
        per_thread_record_under_legacy(spin, false),
        per_thread_record_under_legacy(spin, true),
        event_rerecord(spin),
        connections_one_adjacent(spin),
        hook_on_compute_stream(spin),
        hook_on_comm_stream(spin),
        hook_one_connection(spin),
        seed002_non_blocking(spin),
        seed002_without_null(spin),
        event_third_stream(spin),
        priority_jumps_ahead(spin),
        priority_no_preemption(spin),
        priority_equal_waits(spin),
        event_elapsed_time(spin),
    ]
}

/// The host side of streams, implicit synchronization, the stream-ordered allocator and graphs:
/// the claims that need host-clock alignment, driver calls beyond streams and events, or graphs.
pub fn host_and_memory(spin: Duration) -> Vec<Claim> {
    let mut claims = vec![
        host_fn_in_stream_order(HostFnApi::LaunchHostFunc, spin),
        host_fn_in_stream_order(HostFnApi::StreamAddCallback, spin),
        launch_returns_early(spin),
        queries_until_done(spin),
        syncs_return_after_work(spin),
    ];
    claims.extend(Between::ALL.iter().map(|&b| implicit_sync(b, spin)));
    claims.extend([
        alloc_async_same_stream(spin),
        alloc_async_other_stream(spin),
        graph_keeps_order(spin),
        graph_launch_cost(100, spin),
        graph_launch_cost(1000, spin),
    ]);
    claims
}

/// Copies, overlap and data: the claims whose copy spans come from the witness (CUPTI or events).
pub fn copies(spin: Duration) -> Vec<Claim> {
    let mut claims = vec![
        copy_returns(Place::Pinned),
        copy_returns(Place::Pageable),
        pinned_bandwidth(),
    ];
    for host in [Place::Pinned, Place::Pageable] {
        for kernel_first in [true, false] {
            claims.push(copy_overlaps_kernel(host, kernel_first, spin));
        }
    }
    claims.extend([
        copy_engines_both_ways(),
        copy_engines_same_way(),
        malloc_memory(Place::Pinned),
        malloc_memory(Place::Device),
        racing_writers(false),
        racing_writers(true),
    ]);
    claims
}

/// The notes' example systems: seed 000's sleep experiment, seed 004's pipeline, seed 002's
/// weight prefetch (with each of its five dependencies removed in turn).
pub fn scenarios(spin: Duration) -> Vec<Claim> {
    use scenarios::{pipeline, prefetch, sleep, Regime};
    let mut claims = vec![sleep(4096, spin), sleep(1, spin)];
    claims.extend([1, 2, 4, 8].map(|n| pipeline(n, spin * 13)));
    for regime in Regime::ALL {
        claims.push(prefetch(regime, None));
        claims.extend((1..=5).map(|k| prefetch(regime, Some(k))));
    }
    claims
}

/// Every claim in the catalogue.
pub fn all(spin: Duration) -> Vec<Claim> {
    let mut claims = core(spin);
    claims.extend(synchronization(spin));
    claims.extend(host_and_memory(spin));
    claims.extend(copies(spin));
    claims.extend(scenarios(spin));
    claims
}
