//! Small programs with hand-made timelines, for the disturbance rules at their boundaries, and
//! the clock sync and tolerances of the held trials built on them.

use super::{call, TOL};
use stream_litmus::{
    ClockSync, OpId, Pause, Program, ProgramBuilder, Span, StreamId, StreamKind, Timeline,
    Tolerances,
};

/// `N` non-blocking streams of `p`, made in order.
pub fn streams<const N: usize>(p: &mut ProgramBuilder) -> [StreamId; N] {
    std::array::from_fn(|_| p.stream(StreamKind::NonBlocking))
}

/// Host time h is GPU time h (offset 0, within ±1 µs).
pub const SYNC: ClockSync = ClockSync {
    shared: false,
    offset_ns: 0,
    error_ns: 1_000,
};

/// [`TOL`] with launches that take 6 µs and no copy rates.
pub fn tol() -> Tolerances {
    Tolerances {
        launch_latency_ns: Some(6_000),
        copy_rates: None,
        ..TOL
    }
}

/// A (stream 1, issued at host 0) and B (stream 2, issued at `b_issue_ns`), 50 µs each, started
/// at the given GPU times, in a trial synced by [`SYNC`].
pub fn two_spins(
    a_start_ns: u64,
    b_start_ns: u64,
    b_issue_ns: u64,
) -> (Program, Timeline, [OpId; 2]) {
    let mut p = Program::builder("two spins");
    let [s1, s2] = streams(&mut p);
    let a = p.spin(s1, "A", std::time::Duration::from_micros(50));
    let b = p.spin(s2, "B", std::time::Duration::from_micros(50));
    let t = Timeline::new(
        vec![
            Span::single(a, a_start_ns, a_start_ns + 50_000),
            Span::single(b, b_start_ns, b_start_ns + 50_000),
        ],
        vec![call(a, 0, 1_000), call(b, b_issue_ns, b_issue_ns + 1_000)],
    )
    .with_host(vec![], Some(SYNC));
    (p.build(), t, [a, b])
}

/// A on s1 from 0 to 50 µs, issued at host 0; B on s2 issued at host 10 µs, stamped from
/// `b_start`. The trial's offset makes host time h GPU time h (A started as it was issued).
pub fn pair(b_start: u64, a_pause: Option<Pause>) -> (Program, Timeline) {
    let mut p = Program::builder("pair");
    let [s1, s2] = streams(&mut p);
    let a = p.spin(s1, "A", std::time::Duration::from_micros(50));
    let b = p.spin(s2, "B", std::time::Duration::from_micros(50));
    let mut span_a = Span::single(a, 0, 50_000);
    span_a.blocks.edit(|b| b[0].pause = a_pause);
    let t = Timeline::new(
        vec![span_a, Span::single(b, b_start, b_start + 50_000)],
        vec![call(a, 0, 0), call(b, 10_000, 10_000)],
    );
    (p.build(), t)
}

/// A witness on the stamps' own clock, exact: copy spans are placed as written.
pub const EXACT_SYNC: stream_litmus::WitnessSync = stream_litmus::WitnessSync {
    kind: stream_litmus::WitnessKind::Cupti,
    offset_ns: 0,
    error_ns: 0,
    disagreement_ns: 0,
    anchors: 1,
};

/// K (a kernel, 0–500 µs) then C (a copy of 1 MiB on another stream, issued at 10 µs) that
/// started only at `c_start` and took 100 µs; `same_stream`: C behind K in K's stream.
pub fn kernel_then_copy(c_start: u64, same_stream: bool) -> (Program, Timeline) {
    kernel_and_copy(1 << 20, c_start, 100_000, same_stream)
}

/// K (a kernel, 0–500 µs) and C (a pinned H2D copy of `bytes`, issued at 10 µs) that ran from
/// `c_start` for `c_ns`, on the exact witness; `same_stream`: C behind K in K's stream.
pub fn kernel_and_copy(
    bytes: u64,
    c_start: u64,
    c_ns: u64,
    same_stream: bool,
) -> (Program, Timeline) {
    use stream_litmus::{CopyDir, Place, WitnessSpan};
    let mut p = Program::builder("kc");
    let [s1, s2] = streams(&mut p);
    let k = p.spin(s1, "K", std::time::Duration::from_micros(500));
    let c = p.copy_new(
        if same_stream { s1 } else { s2 },
        "C",
        CopyDir::H2D,
        bytes,
        Place::Pinned,
    );
    let t = Timeline::new(
        vec![Span::single(k, 0, 500_000)],
        vec![call(k, 0, 0), call(c, 10_000, 10_000)],
    )
    .with_witness(
        vec![WitnessSpan {
            op: c,
            start_ns: c_start as i64,
            end_ns: (c_start + c_ns) as i64,
        }],
        Some(EXACT_SYNC),
    );
    (p.build(), t)
}
