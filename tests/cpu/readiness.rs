//! When an op was ready, and what a graph launch stands for in a check (issue 23).
//!
//! Readiness: with a clock sync and a calibrated launch latency, an op was ready at its issue
//! plus the sync's offset, the latency and the sync's error; without them, at its issue plus the
//! smallest launch delay of the ops that depended on nothing. A kernel behind a host function
//! once made its own wait look like launch latency. A graph launch stands for the span of its
//! graph's nodes.

use std::time::Duration;
use stream_litmus::{
    Check, ClockSync, HostCall, HostFnApi, HostSpan, OpId, Program, Span, StreamKind, Timeline,
    Tolerances, Truth,
};

const US: u64 = 1_000;

/// The lab's tolerances on an H100, with the launch latency the start-up calibration measures.
const SYNCED: Tolerances = Tolerances {
    timer_step_ns: 32,
    launch_jitter_ns: 600,
    dependent_gap_ns: 2_000,
    launch_latency_ns: Some(3 * US),
    copy_rates: None,
};

/// The same, as files recorded before the launch latency was calibrated.
const UNSYNCED: Tolerances = Tolerances {
    launch_latency_ns: None,
    copy_rates: None,
    ..SYNCED
};

/// `gpu = host + 1 ms`, within ±1.2 µs (the H100's usual sync error).
const CLOCK: ClockSync = ClockSync {
    shared: false,
    offset_ns: 1_000 * US as i64,
    error_ns: 1_200,
};

fn call(op: usize, begin: u64, end: u64) -> HostCall {
    HostCall {
        op: OpId(op),
        begin_ns: begin,
        end_ns: end,
    }
}

/// `H: host_fn 200us on s1`, `K: spin 50us on s1`: the host issued K 5.5 µs into the trial,
/// 200 µs before H ended; K started right after H's end.
fn host_fn_first() -> (Program, Timeline) {
    let mut b = Program::builder("host fn first");
    let s = b.stream(StreamKind::NonBlocking);
    b.host_fn(
        s,
        "H",
        Duration::from_micros(200),
        HostFnApi::LaunchHostFunc,
    );
    b.spin(s, "K", Duration::from_micros(50));
    let gpu = |host: u64| host + 1_000 * US;
    let timeline = Timeline::new(
        vec![Span::single(OpId(1), gpu(214 * US), gpu(264 * US))],
        vec![call(0, 0, 3 * US), call(1, 3 * US, 5_500)],
    )
    .with_host(
        vec![HostSpan {
            op: OpId(0),
            begin_ns: 10 * US,
            end_ns: 210 * US,
        }],
        Some(CLOCK),
    );
    (b.build(), timeline)
}

const H_THEN_K: Check = Check::Precedes {
    before: OpId(0),
    after: OpId(1),
};

#[test]
fn a_kernel_behind_a_host_function_was_ready_when_the_sync_says() {
    let (p, t) = host_fn_first();
    let m = H_THEN_K.measure_in(&p, &t, &SYNCED);
    assert_eq!(m.truth, Truth::Yes, "{}", m.reason);
    assert!(m.reason.contains("launch latency"), "{}", m.reason);
    assert!(m.reason.contains("clock-sync error"), "{}", m.reason);
}

/// Without a calibrated latency, the only stamped op (K) waited for H, so its delay is no launch
/// delay: the ready time is unknown, and the reason says why, not "issued too late".
#[test]
fn without_a_sync_a_waiting_op_gives_no_launch_delay() {
    let (p, t) = host_fn_first();
    let m = H_THEN_K.measure_in(&p, &t, &UNSYNCED);
    assert_eq!(m.truth, Truth::Unknown, "{}", m.reason);
    assert!(!m.reason.contains("too late"), "{}", m.reason);
    assert!(m.reason.contains("depended on nothing"), "{}", m.reason);
}

/// A sync whose error is over a quarter of the stall threshold (its kernel held back in every
/// round) is not used: the smallest-delay estimate takes over.
#[test]
fn a_sync_with_a_large_error_is_not_used() {
    let (p, mut t) = host_fn_first();
    t.clock = Some(ClockSync {
        shared: false,
        error_ns: 100 * US,
        ..CLOCK
    });
    let m = H_THEN_K.measure_in(&p, &t, &SYNCED);
    assert_eq!(m.truth, Truth::Unknown, "{}", m.reason);
}

/// Capture `K1`, `K2` on s1, `G: end_capture s1`, `L: graph_launch G on s2`, `K3: spin on s2`.
fn launched_graph(k3_start: u64) -> (Program, Timeline) {
    let mut b = Program::builder("graph launch in a check");
    let (s1, s2) = (
        b.stream(StreamKind::NonBlocking),
        b.stream(StreamKind::NonBlocking),
    );
    b.begin_capture(s1);
    b.spin(s1, "K1", Duration::from_micros(50));
    b.spin(s1, "K2", Duration::from_micros(50));
    let g = b.end_capture(s1);
    b.graph_launch(s2, g);
    b.spin(s2, "K3", Duration::from_micros(50));
    let gpu = |host: u64| host + 1_000 * US;
    // The nodes' host calls are their launch's, as the executor records them.
    let launch = call(4, 20 * US, 30 * US);
    let timeline = Timeline::new(
        vec![
            Span::single(OpId(1), gpu(35 * US), gpu(85 * US)),
            Span::single(OpId(2), gpu(87 * US), gpu(137 * US)),
            Span::single(OpId(5), gpu(k3_start), gpu(k3_start + 50 * US)),
        ],
        vec![
            call(0, 0, 2 * US),
            HostCall {
                op: OpId(1),
                ..launch
            },
            HostCall {
                op: OpId(2),
                ..launch
            },
            call(3, 4 * US, 19 * US),
            launch,
            call(5, 30 * US, 33 * US),
        ],
    )
    .with_host(vec![], Some(CLOCK));
    (b.build(), timeline)
}

const L_THEN_K3: Check = Check::Precedes {
    before: OpId(4),
    after: OpId(5),
};

#[test]
fn a_graph_launch_stands_for_its_nodes_span() {
    let (p, t) = launched_graph(139 * US);
    let m = L_THEN_K3.measure_in(&p, &t, &SYNCED);
    assert_eq!(m.truth, Truth::Yes, "{}", m.reason);
    assert_eq!(m.value_ns, 2 * US as i64, "the gap after K2's end");
    assert!(
        m.reason
            .contains("graph launch stands for the span of its graph's nodes K1, K2"),
        "{}",
        m.reason
    );
}

#[test]
fn a_kernel_inside_a_graph_launchs_span_refutes_the_order() {
    let (p, t) = launched_graph(100 * US);
    let m = L_THEN_K3.measure_in(&p, &t, &SYNCED);
    assert_eq!(m.truth, Truth::No, "{}", m.reason);
    let o = Check::Overlaps {
        a: OpId(4),
        b: OpId(5),
    }
    .measure_in(&p, &t, &SYNCED);
    assert_eq!(o.truth, Truth::Yes, "{}", o.reason);
}

/// A launch whose node has no stamps is not placed: Unknown, naming the launch.
#[test]
fn a_graph_launch_with_a_node_unstamped_is_unknown() {
    let (p, mut t) = launched_graph(139 * US);
    t.spans.retain(|s| s.op != OpId(2));
    let m = L_THEN_K3.measure_in(&p, &t, &SYNCED);
    assert_eq!(m.truth, Truth::Unknown, "{}", m.reason);
    assert!(m.reason.contains("op 4 has no stamps"), "{}", m.reason);
}

/// The model: the launch ends after its nodes, work after it on its stream follows them, and
/// `predict` says so.
#[test]
fn the_model_orders_work_after_a_launch_behind_its_nodes() {
    let (p, _) = launched_graph(139 * US);
    let hb = stream_litmus::model::HappensBefore::of(&p);
    assert!(hb.must_precede(OpId(4), OpId(5)));
    assert!(hb.must_precede(OpId(1), OpId(5)));
    assert!(hb.must_precede(OpId(2), OpId(5)));
    assert!(hb.must_precede(OpId(1), OpId(2)));
    // The nodes run inside the launch, not before it.
    assert!(!hb.must_precede(OpId(2), OpId(4)));
}

/// One graph launched on two streams: `L2` stands for the nodes' stamps in its own launch (the
/// timeline's `relaunched`), not for the first launch's.
fn launched_twice(k1_again: u64) -> (Program, Timeline) {
    let mut b = Program::builder("one graph on two streams");
    let (s1, s2) = (
        b.stream(StreamKind::NonBlocking),
        b.stream(StreamKind::NonBlocking),
    );
    b.begin_capture(s1);
    b.spin(s1, "K1", Duration::from_micros(100));
    let g = b.end_capture(s1);
    b.graph_launch(s1, g);
    b.graph_launch(s2, g);
    let gpu = |host: u64| host + 1_000 * US;
    let first = call(3, 20 * US, 30 * US);
    let timeline = Timeline::new(
        vec![Span::single(OpId(1), gpu(35 * US), gpu(135 * US))],
        vec![
            call(0, 0, 2 * US),
            HostCall {
                op: OpId(1),
                ..first
            },
            call(2, 4 * US, 19 * US),
            first,
            call(4, 31 * US, 45 * US),
        ],
    )
    .with_host(vec![], Some(CLOCK))
    .with_relaunched(vec![stream_litmus::Relaunch {
        launch: OpId(4),
        spans: vec![Span::single(
            OpId(1),
            gpu(k1_again),
            gpu(k1_again + 100 * US),
        )],
    }]);
    (b.build(), timeline)
}

const L1_THEN_L2: Check = Check::Precedes {
    before: OpId(3),
    after: OpId(4),
};

#[test]
fn a_later_launch_stands_for_its_own_stamps() {
    let (p, t) = launched_twice(137 * US);
    assert!(
        p.validate().is_ok(),
        "a graph of kernels may be launched again"
    );
    let m = L1_THEN_L2.measure_in(&p, &t, &SYNCED);
    assert_eq!(m.truth, Truth::Yes, "{}", m.reason);
    assert_eq!(m.value_ns, 2 * US as i64);
    // The second launch running inside the first refutes the order.
    let (p, t) = launched_twice(100 * US);
    let m = L1_THEN_L2.measure_in(&p, &t, &SYNCED);
    assert_eq!(m.truth, Truth::No, "{}", m.reason);
    // Without its stamps, the later launch is not placed (never the first launch's span).
    let (p, mut t) = launched_twice(137 * US);
    t.relaunched.clear();
    let m = L1_THEN_L2.measure_in(&p, &t, &SYNCED);
    assert_eq!(m.truth, Truth::Unknown, "{}", m.reason);
    let hb = stream_litmus::model::HappensBefore::of(&p);
    assert!(
        hb.must_precede(OpId(3), OpId(4)),
        "launches of one graph are ordered"
    );
}

/// A later launch gets records of its own only for kernels: a graph holding a host function
/// (or a copy) cannot be launched again.
#[test]
fn a_graph_with_a_host_function_is_launched_once() {
    let mut b = Program::builder("relaunch");
    let s = b.stream(StreamKind::NonBlocking);
    b.begin_capture(s);
    b.spin(s, "K", Duration::from_micros(50));
    b.host_fn(s, "H", Duration::from_micros(50), HostFnApi::LaunchHostFunc);
    let g = b.end_capture(s);
    b.graph_launch(s, g);
    b.graph_launch(s, g);
    let err = b.build().validate().unwrap_err().to_string();
    assert!(err.contains("launches the graph of op 3 again"), "{err}");
    assert!(err.contains("op 2 'H'"), "{err}");
}
