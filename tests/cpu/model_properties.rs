//! The model of stream semantics over random programs, on the CPU.
//!
//! 1. Properties (proptest): a strict partial order, total order per stream, monotone in waits,
//!    host syncs that decide the orders the model makes, and so on.
//! 2. The fuzz driver, on a simulated GPU: faithful to the model it finds nothing; made to ignore
//!    event waits it finds the bug and shrinks it to the minimal program.

use proptest::prelude::*;
use std::time::Duration;
use stream_litmus::fuzz::{fuzz, programs, FuzzConfig, Shape};
use stream_litmus::model::{HappensBefore, Refinement};
use stream_litmus::{
    Check, ClockSync, HostCall, OpId, OpKind, Program, Span, StreamKind, SyncTarget, Timeline,
    Tolerances, Truth,
};

const SPIN: Duration = Duration::from_micros(10);

// ---- 1. properties ----------------------------------------------------------------------------

fn ops(p: &Program) -> impl Iterator<Item = OpId> + '_ {
    p.ops.iter().map(|op| op.id)
}

/// `p` with a wait on `event` by `stream` inserted before position `at`; returns the new program
/// and the map from old op ids to new ones.
fn with_wait(p: &Program, at: usize, stream: usize, event: usize) -> (Program, Vec<OpId>) {
    let at = at.min(p.ops.len());
    let mut b = Program::builder("with-wait");
    for s in &p.streams {
        b.stream_labelled(s.kind, s.label.clone());
    }
    for e in &p.events {
        b.event(e.label.clone());
    }
    let mut map = Vec::new();
    for (i, op) in p.ops.iter().enumerate() {
        if i == at {
            b.wait(
                stream_litmus::StreamId(stream % p.streams.len()),
                stream_litmus::EventId(event % p.events.len()),
            );
        }
        // Ops that name an earlier op name it by its new id.
        let kind = match op.kind.clone() {
            OpKind::GraphLaunch { stream, graph } => OpKind::GraphLaunch {
                stream,
                graph: map[graph.0],
            },
            kind => kind,
        };
        map.push(b.push(op.label.clone(), kind));
    }
    if at == p.ops.len() {
        b.wait(
            stream_litmus::StreamId(stream % p.streams.len()),
            stream_litmus::EventId(event % p.events.len()),
        );
    }
    (b.build(), map)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Irreflexive, antisymmetric (so acyclic) and transitive.
    #[test]
    fn must_precede_is_a_strict_partial_order(p in programs(Shape::default())) {
        let hb = HappensBefore::of(&p);
        for a in ops(&p) {
            prop_assert!(!hb.must_precede(a, a));
            for b in ops(&p) {
                prop_assert!(!(hb.must_precede(a, b) && hb.must_precede(b, a)));
                if hb.must_precede(a, b) {
                    for c in ops(&p) {
                        if hb.must_precede(b, c) {
                            prop_assert!(hb.must_precede(a, c));
                        }
                    }
                }
            }
        }
    }

    /// Ops on one stream are totally ordered, in issue order; a graph's nodes, which run only
    /// inside its launch, are ordered by their launch instead.
    #[test]
    fn each_stream_is_a_total_order(p in programs(Shape::default())) {
        let hb = HappensBefore::of(&p);
        let direct = p.captures();
        for a in p.ops.iter().filter(|op| direct[op.id.0].is_none()) {
            for b in p.ops.iter().filter(|op| direct[op.id.0].is_none()) {
                if a.id < b.id && a.kind.stream().is_some() && a.kind.stream() == b.kind.stream() {
                    prop_assert!(hb.must_precede(a.id, b.id), "{} before {}", a.label, b.label);
                }
            }
        }
    }

    /// A graph's nodes run inside its launch: work issued after the launch on its stream
    /// follows every node, and no node is ordered before its own launch.
    #[test]
    fn a_graph_launch_holds_its_nodes(p in programs(Shape::default())) {
        let hb = HappensBefore::of(&p);
        let captured = p.captures();
        for (node, launch) in p.graph_launches().iter().enumerate() {
            let Some(l) = *launch else { continue };
            prop_assert!(!hb.must_precede(OpId(node), l));
            let s = p.ops[l.0].kind.stream();
            for later in p.ops.iter().filter(|o| o.id > l && captured[o.id.0].is_none()) {
                if later.kind.stream() == s {
                    prop_assert!(hb.must_precede(OpId(node), later.id), "{}", p);
                }
            }
        }
    }

    /// Nothing waits for an op issued after it.
    #[test]
    fn orders_point_forward_in_issue_order(p in programs(Shape::default())) {
        let hb = HappensBefore::of(&p);
        for (a, b) in hb.must_pairs() {
            prop_assert!(a < b);
        }
    }

    /// Adding a wait never removes an ordering.
    #[test]
    fn adding_a_wait_never_removes_an_ordering(
        p in programs(Shape::default()), at in 0usize..20, s in 0usize..6, e in 0usize..3,
    ) {
        let (q, map) = with_wait(&p, at, s, e);
        let (hp, hq) = (HappensBefore::of(&p), HappensBefore::of(&q));
        for (a, b) in hp.must_pairs() {
            prop_assert!(hq.must_precede(map[a.0], map[b.0]), "{}\n{}", p, q);
        }
    }

    /// With only non-blocking streams, no events and no host syncs, nothing is ordered across
    /// streams.
    #[test]
    fn independent_streams_order_nothing_across_streams(
        spins in prop::collection::vec(0usize..4, 2..12),
    ) {
        let mut b = Program::builder("independent");
        let streams: Vec<_> = (0..4).map(|_| b.stream(StreamKind::NonBlocking)).collect();
        for (i, s) in spins.iter().enumerate() {
            b.spin(streams[*s], format!("K{i}"), SPIN);
        }
        let p = b.build();
        let hb = HappensBefore::of(&p);
        for (x, y) in hb.must_pairs() {
            prop_assert_eq!(p.ops[x.0].kind.stream(), p.ops[y.0].kind.stream());
        }
    }

    /// The legacy stream's ops are ordered with every op of a blocking stream, one way or the
    /// other (no-op waits are no ops).
    #[test]
    fn the_legacy_stream_is_ordered_with_every_blocking_op(p in programs(Shape::default())) {
        let hb = HappensBefore::of(&p);
        let kind = |op: &stream_litmus::Op| op.kind.stream().map(|s| p.streams[s.0].kind);
        // A graph's nodes take part through their launch, which this rule orders.
        let captured = p.captures();
        let acts = |op: &&stream_litmus::Op| !p.is_noop_wait(op.id) && captured[op.id.0].is_none();
        for a in p.ops.iter().filter(acts).filter(|op| kind(op) == Some(StreamKind::LegacyNull)) {
            for b in p.ops.iter().filter(acts).filter(|op| matches!(kind(op), Some(StreamKind::Blocking | StreamKind::PerThread))) {
                prop_assert!(hb.must_precede(a.id, b.id) || hb.must_precede(b.id, a.id));
            }
        }
    }

    /// A device sync separates everything issued before it from everything issued after.
    #[test]
    fn a_device_sync_separates_before_from_after(p in programs(Shape::default())) {
        let hb = HappensBefore::of(&p);
        for h in p.ops.iter().filter(|op| op.kind == OpKind::HostSync { target: SyncTarget::Device }) {
            for a in 0..h.id.0 {
                for b in h.id.0 + 1..p.ops.len() {
                    prop_assert!(hb.must_precede(OpId(a), OpId(b)));
                }
            }
        }
    }

    /// The queue refinement only adds orderings to the documented semantics; with at least as
    /// many queues as streams it adds none.
    #[test]
    fn queues_only_add_orderings(p in programs(Shape::default()), n in 1usize..8) {
        let (doc, q) = (HappensBefore::of(&p), HappensBefore::with(&p, Refinement::Queues(n)));
        for (a, b) in doc.must_pairs() {
            prop_assert!(q.must_precede(a, b));
        }
        let wide = HappensBefore::with(&p, Refinement::Queues(p.streams.len()));
        prop_assert_eq!(wide.must_pairs(), doc.must_pairs());
    }

    /// Orders made by the host are judged as the model makes them: on a GPU that follows the
    /// model, a must-precede pair of kernels whose later kernel was issued after a host sync
    /// that covers the earlier one, called while it still ran, is decided Yes (on the device or
    /// through the host), and no pair is refuted.
    #[test]
    fn host_syncs_between_kernels_decide_the_orders_the_model_makes(p in programs(Shape::default())) {
        let hb = HappensBefore::of(&p);
        let (t, tol) = simulate(&p, &hb);
        let slack = (SIM_CLOCK.error_ns + tol.timer_step_ns) as i64;
        for (a, b) in hb.must_pairs() {
            let (Some(sa), true) = (t.span(a), p.ops[b.0].kind.is_stamped()) else { continue };
            let m = Check::Precedes { before: a, after: b }.measure_in(&p, &t, &tol);
            prop_assert_ne!(m.truth, Truth::No, "{}\n{}", p, m.reason);
            let waited = p.ops[a.0 + 1..b.0].iter().any(|h| {
                h.kind.host_waits_for().is_some()
                    && hb.must_precede(a, h.id)
                    && (t.host_call(h.id).unwrap().begin_ns as i64) < sa.end() as i64 - slack
            });
            if waited {
                prop_assert_eq!(m.truth, Truth::Yes, "{}\n{}", p, m.reason);
            }
        }
    }

    /// A GPU that follows the model exactly is never found unsound.
    #[test]
    fn a_gpu_that_follows_the_model_is_sound(p in programs(Shape::default())) {
        let (t, tol) = simulate(&p, &HappensBefore::of(&p));
        prop_assert!(stream_litmus::fuzz::unsound(&p, &t, &tol).0.is_none());
    }
}

// ---- 2. the fuzz driver on a simulated GPU ------------------------------------------------------

const TOL: Tolerances = Tolerances {
    timer_step_ns: 32,
    launch_jitter_ns: 500,
    dependent_gap_ns: 1_000,
    launch_latency_ns: None,
    copy_rates: None,
};

/// Runs `p` on an idealised GPU that schedules every op as early as `rules` allow: the host issues
/// an op every µs (a host sync returns when its work is done), an op starts 0.5 µs after issue at
/// the earliest, and spins last their duration. A graph's nodes run when its launch is issued,
/// and the launch spans them. The host clock is aligned with [`SIM_CLOCK`].
fn simulate(p: &Program, rules: &HappensBefore) -> (Timeline, Tolerances) {
    let captured = p.captures();
    let launches = p.graph_launches();
    let mut host = 0u64;
    let mut end = vec![0u64; p.ops.len()];
    let mut spans = Vec::new();
    let mut calls = Vec::new();
    // The earliest start of op `i` issued at `issued`: behind everything the rules put before it
    // (and, for a graph's node, before its launch).
    let earliest = |i: usize, issued: u64, end: &[u64], also: Option<usize>| {
        (0..p.ops.len())
            .filter(|&j| j != i && Some(j) != also)
            .filter(|&j| {
                rules.must_precede(OpId(j), OpId(i))
                    || also.is_some_and(|l| rules.must_precede(OpId(j), OpId(l)))
            })
            .map(|j| end[j])
            .fold(issued + 500, u64::max)
    };
    let dur = |i: usize| match p.ops[i].kind {
        OpKind::Spin { duration_ns, .. } => duration_ns,
        _ => 0,
    };
    for (i, op) in p.ops.iter().enumerate() {
        if captured[i].is_some() {
            continue;
        }
        let issued = host + 500;
        let start = earliest(i, issued, &end, None);
        end[i] = start + dur(i);
        if let OpKind::GraphLaunch { .. } = op.kind {
            for c in (0..i).filter(|&c| launches[c] == Some(op.id)) {
                let from = earliest(c, issued, &end, Some(i));
                end[c] = from + dur(c);
                end[i] = end[i].max(end[c]);
                if p.ops[c].kind.is_stamped() {
                    spans.push(Span::single(OpId(c), from, end[c]));
                }
                calls.push(HostCall {
                    op: OpId(c),
                    begin_ns: host,
                    end_ns: issued,
                });
            }
        }
        if op.kind.is_stamped() {
            spans.push(Span::single(op.id, start, end[i]));
        }
        let sync = matches!(op.kind, OpKind::HostSync { .. });
        calls.push(HostCall {
            op: op.id,
            begin_ns: host,
            end_ns: if sync { end[i].max(issued) } else { issued },
        });
        host = if sync {
            end[i].max(issued)
        } else {
            issued + 500
        };
    }
    (
        Timeline::new(spans, calls).with_host(vec![], Some(SIM_CLOCK)),
        TOL,
    )
}

/// The simulated host clock is the GPU's, known within ±0.3 µs.
const SIM_CLOCK: ClockSync = ClockSync {
    shared: false,
    offset_ns: 0,
    error_ns: 300,
};

/// The same program with every event wait made a no-op (it waits on a fresh, never-recorded event).
fn ignoring_waits(p: &Program) -> Program {
    let mut q = p.clone();
    q.events.push(stream_litmus::Event {
        label: "never".into(),
    });
    let never = stream_litmus::EventId(q.events.len() - 1);
    for op in &mut q.ops {
        if let OpKind::Wait { event, .. } = &mut op.kind {
            *event = never;
        }
    }
    q
}

fn config(cases: usize) -> FuzzConfig {
    FuzzConfig {
        cases,
        seed: 7,
        shape: Shape {
            spin: SPIN,
            ..Shape::default()
        },
        refinement: Refinement::Documented,
        regressions: Vec::new(),
    }
}

#[test]
fn fuzzing_a_faithful_gpu_finds_nothing_and_measures_precision() {
    let mut exec = |p: &Program| Ok(simulate(p, &HappensBefore::of(p)));
    let report = fuzz(&config(200), &mut exec, &mut |_, _| {});
    assert!(report.violations.is_empty());
    assert_eq!(report.programs_run, 200);
    assert!(report.must_pairs > 0);
    let decided: usize = report
        .precision
        .values()
        .map(|t| t.overlapped + t.serialized)
        .sum();
    assert!(decided > 0, "{:?}", report.precision);
    for (kind, t) in &report.precision {
        assert_eq!(
            t.serialized, 0,
            "{kind}: an ASAP scheduler never holds back a ready kernel"
        );
    }
}

#[test]
fn fuzzing_a_gpu_that_ignores_waits_finds_and_shrinks_the_bug() {
    let mut exec = |p: &Program| Ok(simulate(p, &HappensBefore::of(&ignoring_waits(p))));
    // With every kind of op the bug is found too; the minimal program below is counted in ops,
    // and a graph is one pick of five ops (capture, two spins, end, launch), so the shrinking is
    // checked on programs of single-op picks.
    let full = fuzz(&config(200), &mut exec, &mut |_, _| {});
    assert!(
        !full.violations.is_empty(),
        "the bug was not found among graphs"
    );
    let mut single = config(500);
    (single.shape.graphs, single.shape.host_fns) = (false, false);
    let report = fuzz(&single, &mut exec, &mut |_, _| {});
    assert!(!report.violations.is_empty(), "the bug was not found");
    // The counts behind the rate: shrinking runs are counted apart, and the rate is in the JSON.
    let shrunk: usize = report.violations.iter().map(|v| v.shrink_runs).sum();
    assert_eq!(report.shrink_runs, shrunk);
    assert_eq!(report.programs_run, 500 + shrunk);
    assert!(report.exec_ns <= report.elapsed_ns);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(
        json["programs_per_second"].as_f64(),
        Some(report.programs_per_second())
    );
    let v = &report.violations[0];
    let listing = v.program.to_string();
    // Minimal: a kernel, its record, the wait, the waiting kernel (the shrinker may keep a
    // harmless extra stream, never an extra op).
    assert_eq!(v.program.ops.len(), 4, "not minimal:\n{listing}");
    assert!(v.original.ops.len() >= v.program.ops.len());
    let kinds: Vec<_> = v
        .program
        .ops
        .iter()
        .map(|op| std::mem::discriminant(&op.kind))
        .collect();
    assert_eq!(
        kinds.iter().collect::<std::collections::HashSet<_>>().len(),
        3,
        "{listing}"
    );
    // The shrunk program is a real counterexample: unsound on the buggy GPU, sound on a faithful one.
    let (t, tol) = simulate(&v.program, &HappensBefore::of(&v.program));
    assert!(stream_litmus::fuzz::unsound(&v.program, &t, &tol)
        .0
        .is_none());
}
