//! Two small programs with hand-made timelines, for the disturbance rules at their boundaries.

use super::call;
use stream_litmus::{Pause, Program, Span, StreamKind, Timeline};

/// A on s1 from 0 to 50 µs, issued at host 0; B on s2 issued at host 10 µs, stamped from
/// `b_start`. The trial's offset makes host time h GPU time h (A started as it was issued).
pub fn pair(b_start: u64, a_pause: Option<Pause>) -> (Program, Timeline) {
    let mut p = Program::builder("pair");
    let (s1, s2) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
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

/// K (a kernel, 0–500 µs) then C (a copy on another stream, issued at 10 µs) that started only at
/// `c_start`; `same_stream`: C behind K in K's stream.
pub fn kernel_then_copy(c_start: u64, same_stream: bool) -> (Program, Timeline) {
    use stream_litmus::{CopyDir, Place, WitnessSpan};
    let mut p = Program::builder("kc");
    let (s1, s2) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let k = p.spin(s1, "K", std::time::Duration::from_micros(500));
    let c = p.copy_new(
        if same_stream { s1 } else { s2 },
        "C",
        CopyDir::H2D,
        1 << 20,
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
            end_ns: c_start as i64 + 100_000,
        }],
        Some(EXACT_SYNC),
    );
    (p.build(), t)
}
