//! Placement and thinning on hand-made timelines: every op gets a lane, an interval (or an
//! instant) and the source that placed it, or the reason it has none; dense lanes become runs.

use std::time::Duration;
use stream_litmus::report::placement::{
    extent, origin, placed_ops, Lane, Mark, PlacedOp, Source, Unplaced,
};
use stream_litmus::report::terminal::picture;
use stream_litmus::report::thin::{thin, Drawn, Role};
use stream_litmus::{
    ClockSync, CopyDir, HostCall, HostSpan, OpId, Place, Program, Span, StreamKind, SyncTarget,
    Timeline, WitnessKind, WitnessSpan, WitnessSync,
};

const US: Duration = Duration::from_micros(50);

fn call(op: usize, begin_ns: u64, end_ns: u64) -> HostCall {
    HostCall {
        op: OpId(op),
        begin_ns,
        end_ns,
    }
}

fn sync(kind: WitnessKind, offset_ns: i64, error_ns: u64) -> WitnessSync {
    WitnessSync {
        kind,
        offset_ns,
        error_ns,
        anchors: 2,
        disagreement_ns: error_ns,
    }
}

fn at(p: &PlacedOp) -> Mark {
    p.at.unwrap_or_else(|why| panic!("op {} not placed: {why}", p.op.0))
}

/// K on s1, C (a copy) on s2, a record and a wait, a host sync.
fn kernel_copy_program() -> Program {
    let mut b = Program::builder("kernel and copy");
    let (s1, s2) = (
        b.stream(StreamKind::NonBlocking),
        b.stream(StreamKind::NonBlocking),
    );
    let e = b.event("E");
    b.spin(s1, "K", US); // 0
    b.record(s1, e); // 1
    b.copy_new(s2, "C", CopyDir::H2D, 1 << 20, Place::Pinned); // 2
    b.wait(s2, e); // 3
    b.host_sync(SyncTarget::Device); // 4
    b.build()
}

fn kernel_copy_calls() -> Vec<HostCall> {
    vec![
        call(0, 0, 2_000),
        call(1, 2_000, 3_000),
        call(2, 3_000, 5_000),
        call(3, 5_000, 6_000),
        call(4, 6_000, 60_000),
    ]
}

#[test]
fn kernels_copies_instants_and_host_calls_are_placed_with_their_source() {
    let program = kernel_copy_program();
    let t = Timeline::new(
        vec![Span::single(OpId(0), 1_004_000, 1_054_000)],
        kernel_copy_calls(),
    )
    .with_host(
        vec![],
        Some(ClockSync {
            shared: false,
            offset_ns: 1_000_000,
            error_ns: 900,
        }),
    )
    .with_witness(
        vec![WitnessSpan {
            op: OpId(2),
            start_ns: 10_000,
            end_ns: 40_000,
        }],
        Some(sync(WitnessKind::Cupti, 1_000_000, 800)),
    );
    let placed = placed_ops(&program, &t);
    assert_eq!(placed.len(), program.ops.len(), "one per op");
    let s = |i| Lane::Stream(stream_litmus::StreamId(i));

    let k = at(&placed[0]);
    assert_eq!((placed[0].lane, k.source), (s(0), Source::Stamps));
    assert_eq!(
        (k.start, k.end, k.slack_ns, k.instant),
        (1_004_000, 1_054_000, 0, false)
    );
    let kc = placed[0].call.expect("K's call on the host lane");
    assert_eq!(
        (kc.start, kc.end, kc.source),
        (1_000_000, 1_002_000, Source::ClockSync)
    );

    let c = at(&placed[2]);
    assert_eq!((placed[2].lane, c.source), (s(1), Source::Cupti));
    assert_eq!((c.start, c.end, c.slack_ns), (1_010_000, 1_040_000, 800));

    // A record and a wait are instants where their calls returned.
    for (i, lane, when) in [(1, s(0), 1_003_000), (3, s(1), 1_006_000)] {
        let m = at(&placed[i]);
        assert!(m.instant, "op {i}");
        assert_eq!((placed[i].lane, m.start, m.end), (lane, when, when));
    }
    // The host sync is its call, on the host lane, with no second call mark.
    let h = at(&placed[4]);
    assert_eq!(placed[4].lane, Lane::Host);
    assert_eq!((h.start, h.end, h.slack_ns), (1_006_000, 1_060_000, 900));
    assert!(placed[4].call.is_none());

    assert_eq!(origin(&placed), 1_004_000, "the first stamped start");
    assert_eq!(extent(&placed, true), Some((1_000_000, 1_060_000)));
}

/// Without a clock sync host times are placed by the issue offset (and say so); without anything
/// stamped or witnessed they cannot be placed at all; a copy the witness missed says so; events
/// as the witness are named.
#[test]
fn placement_names_a_weaker_source_or_the_reason_for_none() {
    let program = kernel_copy_program();
    let t = Timeline::new(
        vec![Span::single(OpId(0), 1_004_000, 1_054_000)],
        kernel_copy_calls(),
    );
    let placed = placed_ops(&program, &t);
    // Issue offset: K started 1 002 000 after its call returned.
    let kc = placed[0].call.unwrap();
    assert_eq!((kc.start, kc.source), (1_002_000, Source::IssueOffset));
    assert_eq!(at(&placed[4]).source, Source::IssueOffset);
    assert_eq!(placed[2].at, Err(Unplaced::NoWitnessSpan));

    let bare = Timeline::new(vec![], kernel_copy_calls());
    let placed = placed_ops(&program, &bare);
    assert_eq!(placed[0].at, Err(Unplaced::NoStamps));
    assert_eq!(placed[1].at, Err(Unplaced::NoClock));
    assert_eq!(placed[4].at, Err(Unplaced::NoClock));

    let events = t.clone().with_witness(
        vec![WitnessSpan {
            op: OpId(2),
            start_ns: 10_000,
            end_ns: 40_000,
        }],
        Some(sync(WitnessKind::Events, 1_000_000, 1_300)),
    );
    assert_eq!(at(&placed_ops(&program, &events)[2]).source, Source::Events);
    let unaligned = t.with_witness(
        vec![WitnessSpan {
            op: OpId(2),
            start_ns: 10_000,
            end_ns: 40_000,
        }],
        None,
    );
    assert_eq!(
        placed_ops(&program, &unaligned)[2].at,
        Err(Unplaced::NoWitnessSync)
    );
}

/// A host function by the clock sync, on its stream's lane.
#[test]
fn host_functions_are_placed_by_the_host_clock_on_their_stream() {
    let mut b = Program::builder("host fn");
    let s = b.stream(StreamKind::Blocking);
    b.spin(s, "K", US);
    b.host_fn(
        s,
        "H",
        Duration::from_micros(20),
        stream_litmus::HostFnApi::LaunchHostFunc,
    );
    let program = b.build();
    let t = Timeline::new(
        vec![Span::single(OpId(0), 1_004_000, 1_054_000)],
        vec![call(0, 0, 2_000), call(1, 2_000, 3_000)],
    )
    .with_host(
        vec![HostSpan {
            op: OpId(1),
            begin_ns: 56_000,
            end_ns: 76_000,
        }],
        Some(ClockSync {
            shared: false,
            offset_ns: 1_000_000,
            error_ns: 900,
        }),
    );
    let placed = placed_ops(&program, &t);
    let h = at(&placed[1]);
    assert_eq!(placed[1].lane, Lane::Stream(stream_litmus::StreamId(0)));
    assert_eq!(
        (h.start, h.end, h.source, h.slack_ns),
        (1_056_000, 1_076_000, Source::ClockSync, 900)
    );
}

/// `n` kernels issued one by one on s, then `n` captured and launched as a graph.
fn graph_program(n: usize) -> (Program, Timeline) {
    let mut b = Program::builder("graph");
    let s = b.stream(StreamKind::Blocking);
    for i in 0..n {
        b.spin(s, format!("D{i}"), US);
    }
    b.begin_capture(s);
    for i in 0..n {
        b.spin(s, format!("G{i}"), US);
    }
    let end = b.end_capture(s);
    let launch = b.graph_launch(s, end);
    let program = b.build();
    let mut spans = Vec::new();
    let mut calls = Vec::new();
    for i in 0..n as u64 {
        spans.push(Span::single(
            OpId(i as usize),
            10_000 + i * 1_000,
            10_900 + i * 1_000,
        ));
        calls.push(call(i as usize, i * 100, i * 100 + 90));
    }
    let base = n as u64 * 100;
    calls.push(call(n, base, base + 10));
    let launched = (base + 1_000, base + 1_100);
    for i in 0..n as u64 {
        let op = n + 1 + i as usize;
        let start = 2_000_000 + i * 1_000;
        spans.push(Span::single(OpId(op), start, start + 900));
        calls.push(call(op, launched.0, launched.1)); // a captured op's call is its launch's
    }
    calls.push(call(end.0, base + 20, base + 900));
    calls.push(call(launch.0, launched.0, launched.1));
    (program, Timeline::new(spans, calls))
}

#[test]
fn a_graph_launch_spans_what_its_graph_ran_and_captured_ops_have_no_call_of_their_own() {
    let (program, t) = graph_program(3);
    let placed = placed_ops(&program, &t);
    let (end, launch) = (OpId(7), OpId(8));
    for p in &placed[4..7] {
        assert_eq!(p.graph, Some(end), "op {} is captured", p.op.0);
        assert!(p.call.is_none(), "the launch issued op {}", p.op.0);
        assert_eq!(at(p).source, Source::Stamps);
    }
    assert!(placed[..3]
        .iter()
        .all(|p| p.graph.is_none() && p.call.is_some()));
    for capture in [3, 7] {
        assert_eq!(
            placed[capture].lane,
            Lane::Host,
            "capture calls are host-side"
        );
    }
    let l = at(&placed[launch.0]);
    assert_eq!((l.start, l.end, l.instant), (2_000_000, 2_002_900, false));
    assert!(placed[launch.0].call.is_some());
}

#[test]
fn dense_lanes_are_thinned_into_runs_that_name_their_ops() {
    let (program, t) = graph_program(1000);
    let placed = placed_ops(&program, &t);
    let lanes = thin(&program, &placed, true, 48);
    let stream = &lanes[0].1;
    let runs: Vec<_> = stream
        .iter()
        .filter_map(|d| match d {
            Drawn::Run(r) => Some((r.first.0, r.last.0, r.count, r.kind)),
            _ => None,
        })
        .collect();
    assert_eq!(
        runs,
        [(0, 999, 1000, "kernel"), (1001, 2000, 1000, "kernel")]
    );
    assert!(stream.len() <= 48, "{} marks", stream.len());
    let host = &lanes[1];
    assert_eq!(host.0, Lane::Host);
    assert!(host.1.len() <= 48);
    assert!(host.1.iter().any(|d| matches!(
        d,
        Drawn::Run(r) if r.role == Role::Call && (r.first.0, r.last.0) == (0, 999)
    )));
    // A lane within the limit is drawn op by op.
    let (program, t) = graph_program(10);
    let placed = placed_ops(&program, &t);
    let lanes = thin(&program, &placed, false, 48);
    assert!(lanes[0]
        .1
        .iter()
        .all(|d| matches!(d, Drawn::One { role: Role::Op, .. })));
}

/// Alternating kinds leave runs of one kind too short: the lane is merged in equal chunks.
#[test]
fn alternating_kinds_are_thinned_in_chunks() {
    let mut b = Program::builder("alternating");
    let s = b.stream(StreamKind::Blocking);
    for i in 0..200 {
        b.spin(s, format!("K{i}"), US);
        b.copy_new(s, format!("C{i}"), CopyDir::H2D, 1 << 10, Place::Pinned);
    }
    let program = b.build();
    let placed = placed_ops(&program, &Timeline::default());
    let lanes = thin(&program, &placed, false, 20);
    let drawn = &lanes[0].1;
    assert!(drawn.len() <= 20, "{}", drawn.len());
    let covered: usize = drawn
        .iter()
        .map(|d| match d {
            Drawn::One { .. } => 1,
            Drawn::Run(r) => {
                assert_eq!((r.kind, r.start, r.unplaced), ("op", None, r.count));
                r.count
            }
        })
        .sum();
    assert_eq!(covered, 400, "every op in exactly one mark");
}

/// The terminal picture has a row per op, ending in its op id, with its source or why it has
/// none.
#[test]
fn the_terminal_picture_has_a_row_per_op() {
    let program = kernel_copy_program();
    let t = Timeline::new(
        vec![Span::single(OpId(0), 1_004_000, 1_054_000)],
        kernel_copy_calls(),
    )
    .with_host(
        vec![],
        Some(ClockSync {
            shared: false,
            offset_ns: 1_000_000,
            error_ns: 900,
        }),
    );
    let text = picture(&program, &t, 40);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 5, "{text}");
    for (i, row) in rows.iter().enumerate() {
        assert!(
            rows.iter().any(|r| r.ends_with(&format!("[op {i}]"))),
            "no row for op {i}:\n{text}"
        );
        assert!(
            row.contains(" µs, ") || row.contains("? not placed"),
            "{row}"
        );
    }
    let copy = rows.iter().find(|r| r.ends_with("[op 2]")).unwrap();
    assert!(
        copy.contains("? not placed: the witness saw no span"),
        "{copy}"
    );
    let k = rows.iter().find(|r| r.ends_with("[op 0]")).unwrap();
    assert!(
        k.contains('█') && k.contains("0.00..50.00 µs, stamps"),
        "{k}"
    );
    let sync = rows.iter().find(|r| r.ends_with("[op 4]")).unwrap();
    assert!(sync.starts_with("  host ") && sync.contains('░'), "{sync}");
}

/// Ops that name a stream, event, buffer or op the program does not have (a hand-edited results
/// file) are drawn as nothing or a `?`, never a panic, in all three pictures.
#[test]
fn missing_references_draw_nothing_or_a_question_mark() {
    use stream_litmus::{BufferId, EventId, OpKind, StreamId};
    let mut b = Program::builder("bad references");
    let s = b.stream(StreamKind::Blocking);
    b.spin(s, "K", US);
    b.push(
        "ghost",
        OpKind::Spin {
            stream: StreamId(7),
            duration_ns: 1_000,
            grid: 1,
            block: 32,
        },
    );
    b.push(
        "record ghost",
        OpKind::Record {
            stream: s,
            event: EventId(9),
        },
    );
    b.push(
        "wait ghost",
        OpKind::Wait {
            stream: StreamId(usize::MAX),
            event: EventId(9),
        },
    );
    b.push(
        "copy ghost",
        OpKind::Copy {
            stream: s,
            src: BufferId(3),
            dst: BufferId(4),
            bytes: 64,
        },
    );
    b.push(
        "free ghost",
        OpKind::FreeAsync {
            stream: s,
            alloc: OpId(99),
        },
    );
    b.push(
        "launch ghost",
        OpKind::GraphLaunch {
            stream: s,
            graph: OpId(usize::MAX),
        },
    );
    let program = b.build();
    let t = Timeline::new(
        vec![
            Span::single(OpId(0), 1_004_000, 1_054_000),
            Span::single(OpId(1), 1_010_000, 1_020_000),
        ],
        (0..7)
            .map(|i| call(i, i as u64 * 1_000, i as u64 * 1_000 + 500))
            .collect(),
    );
    let placed = placed_ops(&program, &t);
    assert_eq!(placed.len(), 7);
    let svg = stream_litmus::report::svg::timeline_svg(&program, &t, "bad");
    roxmltree::Document::parse(&svg).expect("well-formed");
    assert!(svg.contains("copy ghost (op 4): copy ?"), "{svg}");
    let text = picture(&program, &t, 40);
    assert_eq!(text.lines().count(), 7, "{text}");
    assert!(
        text.contains("s7"),
        "the missing stream's lane is named by its id: {text}"
    );
}
