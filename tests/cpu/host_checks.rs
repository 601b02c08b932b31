//! Host-side checks on the CPU: host spans and host calls placed on the `%globaltimer` axis with
//! a clock sync, judged against stamps with the alignment error as tolerance; addresses and host
//! costs read from the timeline. Hand-made timelines cover each boundary.

use crate::common;

use common::{call, kernel_and_call, CALL, CLOCK, K, TOL};
use rstest::rstest;
use stream_litmus::{observe, Check, HostSpan, OpId, Reading, Span, Timeline, Truth};

const K2: OpId = OpId(2);

#[rstest]
#[case::long_before(10_000, Truth::Yes, 42_000)]
#[case::within_the_error(51_500, Truth::Unknown, 500)]
#[case::after(60_000, Truth::No, -8_000)]
fn a_call_returns_before_the_end(#[case] end: u64, #[case] truth: Truth, #[case] value: i64) {
    let m = Check::ReturnsBefore {
        call: CALL,
        span: K,
    }
    .measure(&kernel_and_call(50_000, 0, end), &TOL);
    assert_eq!((m.truth, m.value_ns), (truth, value), "{}", m.reason);
    assert!(m.reason.contains("±1.00 µs"), "{}", m.reason);
}

#[rstest]
#[case::after(54_500, Truth::Yes, 2_500)]
#[case::within_the_error(51_200, Truth::Unknown, -800)]
#[case::clearly_before(40_000, Truth::No, -12_000)]
fn a_sync_returns_after_the_end(#[case] end: u64, #[case] truth: Truth, #[case] value: i64) {
    let m = Check::ReturnsAfter {
        call: CALL,
        span: K,
    }
    .measure(&kernel_and_call(50_000, 0, end), &TOL);
    assert_eq!((m.truth, m.value_ns), (truth, value), "{}", m.reason);
}

#[test]
fn host_times_without_a_clock_sync_decide_nothing() {
    let t = Timeline::new(
        vec![Span::single(K, 1_002_000, 1_052_000)],
        vec![call(K, 0, 0), call(CALL, 0, 60_000)],
    );
    let m = Check::ReturnsAfter {
        call: CALL,
        span: K,
    }
    .measure(&t, &TOL);
    assert_eq!(m.truth, Truth::Unknown);
    assert!(m.reason.contains("no clock sync"), "{}", m.reason);
}

#[rstest]
#[case::not_ready_while_running(10_000, 0, Truth::Yes)]
#[case::ready_while_running(10_000, 1, Truth::No)]
#[case::ready_after_the_end(55_000, 1, Truth::Yes)]
#[case::not_ready_long_after(60_000, 0, Truth::No)]
#[case::not_ready_at_the_end(52_500, 0, Truth::Yes)]
fn a_query_answers_with_the_work(#[case] asked: u64, #[case] answer: i64, #[case] truth: Truth) {
    let t = kernel_and_call(50_000, asked, asked + 300).with_readings(vec![Reading {
        op: CALL,
        value_ns: answer,
    }]);
    let m = Check::Answers {
        query: CALL,
        span: K,
    }
    .measure(&t, &TOL);
    assert_eq!(m.truth, truth, "{}", m.reason);
    assert_eq!(m.value_ns, asked as i64 - 52_000);
}

/// K1 from GPU 1 002 000 (host 2 000) to host 52 000, the call from host 1 000 to `returned`,
/// K2 issued at `issued` and stamped from `k2_start` (host ns) for 50 µs.
fn separated(returned: u64, issued: u64, k2_start: u64) -> Timeline {
    let g = |h: u64| h + 1_000_000;
    Timeline::new(
        vec![
            Span::single(K, g(2_000), g(52_000)),
            Span::single(K2, g(k2_start), g(k2_start + 50_000)),
        ],
        vec![
            call(K, 0, 0),
            call(CALL, 1_000, returned),
            call(K2, issued, issued),
        ],
    )
    .with_host(vec![], Some(CLOCK))
}

const SEPARATES: Check = Check::Separates {
    call: CALL,
    before: K,
    after: K2,
};

#[rstest]
#[case::ran_together(1_500, 1_600, 5_000, Truth::No)]
#[case::waited_on_the_device(1_500, 1_600, 53_000, Truth::Yes)]
#[case::host_held_until_the_end(54_000, 54_100, 56_000, Truth::Yes)]
#[case::late_for_another_reason(1_500, 60_000, 62_000, Truth::Unknown)]
fn a_call_between_two_kernels(
    #[case] returned: u64,
    #[case] issued: u64,
    #[case] k2_start: u64,
    #[case] truth: Truth,
) {
    let m = SEPARATES.measure(&separated(returned, issued, k2_start), &TOL);
    assert_eq!(m.truth, truth, "{}", m.reason);
}

/// A host function placed with the clock sync precedes a kernel within its error bound, and an
/// overlap larger than the bound refutes the order.
#[rstest]
#[case::after(53_000, Truth::Yes)]
#[case::within_the_error(51_100, Truth::Yes)]
#[case::overlapping(40_000, Truth::No)]
fn a_host_span_precedes_a_kernel(#[case] k2_start: u64, #[case] truth: Truth) {
    let h = OpId(1);
    let t = Timeline::new(
        vec![
            Span::single(K, 1_000_100, 1_001_000),
            Span::single(K2, k2_start + 1_000_000, k2_start + 1_050_000),
        ],
        vec![call(K, 0, 0), call(h, 100, 200), call(K2, 300, 400)],
    )
    .with_host(
        vec![HostSpan {
            op: h,
            begin_ns: 2_000,
            end_ns: 52_000,
        }],
        Some(CLOCK),
    );
    let m = Check::Precedes {
        before: h,
        after: K2,
    }
    .measure(&t, &TOL);
    assert_eq!(m.truth, truth, "{}", m.reason);
    assert_eq!(
        t.interval(h).map(|i| (i.start, i.slack_ns)),
        Some((1_002_000, 968))
    );
}

#[test]
fn reuse_is_the_same_address() {
    let t = |a: i64, b: i64| {
        Timeline::new(vec![], vec![]).with_readings(vec![
            Reading { op: K, value_ns: a },
            Reading {
                op: CALL,
                value_ns: b,
            },
        ])
    };
    let reuses = Check::Reuses {
        first: K,
        second: CALL,
    };
    assert_eq!(reuses.measure(&t(0x7000, 0x7000), &TOL).truth, Truth::Yes);
    let m = reuses.measure(&t(0x7000, 0x17000), &TOL);
    assert_eq!((m.truth, m.value_ns), (Truth::No, 0x10000));
    let none = Timeline::default();
    assert_eq!(reuses.measure(&none, &TOL).truth, Truth::Unknown);
}

#[test]
fn a_graph_launch_is_cheaper_than_its_kernels_one_by_one() {
    // Ops 0..=2 launched directly at 2 µs each; op 3 the graph launch.
    let calls = |launch: u64| {
        vec![
            call(OpId(0), 0, 2_000),
            call(OpId(1), 2_000, 4_000),
            call(OpId(2), 4_000, 6_000),
            call(OpId(3), 10_000, 10_000 + launch),
        ]
    };
    let cheaper = Check::LaunchCheaper {
        graph: OpId(3),
        first: OpId(0),
        last: OpId(2),
    };
    let m = cheaper.measure(&Timeline::new(vec![], calls(1_500)), &TOL);
    assert_eq!((m.truth, m.value_ns), (Truth::Yes, 4_500));
    assert!(m.reason.contains("4.0× less"), "{}", m.reason);
    let m = cheaper.measure(&Timeline::new(vec![], calls(7_000)), &TOL);
    assert_eq!(m.truth, Truth::No);
}

#[test]
fn observations_count_every_trial() {
    let trials = vec![
        kernel_and_call(50_000, 0, 54_000),
        kernel_and_call(50_000, 0, 10_000),
        kernel_and_call(50_000, 0, 55_000),
    ];
    let mut p = stream_litmus::Program::builder("kernel and call");
    let s = p.stream(stream_litmus::StreamKind::NonBlocking);
    p.spin(s, "K", std::time::Duration::from_micros(50));
    p.host_sync(stream_litmus::SyncTarget::Stream(s));
    let o = observe(
        &p.build(),
        &[Check::ReturnsAfter {
            call: CALL,
            span: K,
        }],
        &trials,
        &TOL,
    );
    assert_eq!(o[0].counts.to_string(), "Sometimes 2/3");
    assert_eq!((o[0].min_ns, o[0].max_ns), (-42_000, 3_000));
}

/// Every figure reads in its own direction: a query asked 502.67 µs before the end says so,
/// never "after the end by −502.67 µs"; values on both sides of zero name no side.
#[test]
fn signed_figures_read_in_their_own_direction() {
    let q = Check::Answers {
        query: OpId(1),
        span: OpId(0),
    };
    assert_eq!(
        q.quantity_for(-502_670, -502_670),
        ("asked before the end by", true)
    );
    assert_eq!(
        q.quantity_for(2_000, 3_000),
        ("asked after the end by", false)
    );
    assert_eq!(q.quantity_for(-1, 1), ("asked, against the end,", false));
    let p = Check::Precedes {
        before: OpId(0),
        after: OpId(1),
    };
    assert_eq!(p.quantity_for(-49_920, -49_760), ("overlap", true));
    assert_eq!(p.quantity_for(0, 5), ("gap", false));
    let r = Check::ReturnsAfter {
        call: OpId(1),
        span: OpId(0),
    };
    assert_eq!(r.quantity_for(-5, -1).0, "returned before the end by");
}
