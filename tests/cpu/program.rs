//! Programs as data, on the CPU: the builder, validation, serialization and the catalogue.

use proptest::prelude::*;
use std::time::Duration;
use stream_litmus::catalogue;
use stream_litmus::{
    ApiCall, EventId, HostFnApi, OpId, OpKind, Program, StreamId, StreamKind, SyncTarget, Warning,
    MAX_SPIN_NS,
};

const US: Duration = Duration::from_micros(1);

#[test]
fn builder_assigns_ids_in_issue_order_and_reuses_builtin_streams() {
    let mut p = Program::builder("ids");
    let null = p.stream(StreamKind::LegacyNull);
    let s1 = p.stream(StreamKind::Blocking);
    assert_eq!(
        p.stream(StreamKind::LegacyNull),
        null,
        "the null stream is one stream"
    );
    let e = p.event("E");
    let a = p.spin(null, "A", 5 * US);
    let r = p.record(s1, e);
    let w = p.wait(null, e);
    let program = p.build();
    assert_eq!((a.0, r.0, w.0), (0, 1, 2));
    assert_eq!(program.streams.len(), 2);
    assert_eq!(program.streams[1].label, "s1");
    assert_eq!(program.ops[1].label, "record E");
    assert!(program.validate().unwrap().is_empty());
}

#[test]
fn unknown_stream_and_event_are_rejected_with_the_op_named() {
    let mut p = Program::builder("bad");
    let s = p.stream(StreamKind::NonBlocking);
    p.spin(StreamId(7), "A", 5 * US);
    p.record(s, EventId(3));
    let err = p.build().validate().unwrap_err();
    let text = err.to_string();
    assert_eq!(err.problems.len(), 2, "{text}");
    assert!(text.contains("op 0 'A' uses unknown stream s7"), "{text}");
    assert!(text.contains("unknown event e3"), "{text}");
    assert!(text.contains("nothing was sent to the GPU"), "{text}");
}

#[test]
fn zero_and_absurd_durations_are_rejected() {
    let mut p = Program::builder("durations");
    let s = p.stream(StreamKind::NonBlocking);
    p.spin(s, "zero", Duration::ZERO);
    p.spin(s, "long", Duration::from_secs(5));
    p.spin(s, "ok", Duration::from_nanos(MAX_SPIN_NS));
    let err = p.build().validate().unwrap_err();
    assert_eq!(err.problems.len(), 2, "{err}");
    assert!(err.problems[0].contains("zero duration"), "{err}");
    assert!(err.problems[1].contains("over the 1 s limit"), "{err}");
}

#[test]
fn bad_grid_and_block_are_rejected() {
    let mut p = Program::builder("shape");
    let s = p.stream(StreamKind::NonBlocking);
    p.spin_grid(s, "A", US, 0, 32);
    p.spin_grid(s, "B", US, 1, 2048);
    let err = p.build().validate().unwrap_err();
    assert_eq!(err.problems.len(), 2, "{err}");
}

#[test]
fn a_builtin_stream_declared_twice_is_rejected() {
    let mut p = Program::builder("twice");
    p.stream_labelled(StreamKind::PerThread, "p1");
    p.stream_labelled(StreamKind::PerThread, "p2");
    let err = p.build().validate().unwrap_err();
    assert!(err.to_string().contains("declared 2 times"), "{err}");
}

#[test]
fn waiting_on_a_never_recorded_event_is_a_warning_not_an_error() {
    let mut p = Program::builder("wait-first");
    let s = p.stream(StreamKind::NonBlocking);
    let e = p.event("E");
    let w = p.wait(s, e);
    let sync = p.host_sync(SyncTarget::Event(e));
    p.record(s, e);
    p.wait(s, e);
    let warnings = p.build().validate().expect("legal CUDA");
    assert_eq!(
        warnings,
        vec![
            Warning::WaitBeforeRecord { op: w, event: e },
            Warning::SyncBeforeRecord { op: sync, event: e }
        ]
    );
    assert!(warnings[0].to_string().contains("orders nothing"));
}

#[test]
fn every_catalogue_claim_is_valid_and_well_formed() {
    let claims = catalogue::all(catalogue::DEFAULT_SPIN);
    let mut ids: Vec<&str> = claims.iter().map(|c| c.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), claims.len(), "claim ids are unique");
    for c in &claims {
        assert!(
            c.program.validate().is_ok(),
            "{}: {:?}",
            c.id,
            c.program.validate()
        );
        assert!(!c.checks.is_empty(), "{} checks nothing", c.id);
        assert!(!c.source.document.is_empty() && !c.source.section.is_empty());
        for check in &c.checks {
            for op in check.ops() {
                assert!(c.program.op(op).is_some(), "{}: no op {}", c.id, op.0);
            }
        }
    }
}

#[test]
#[cfg_attr(
    not(seeds),
    ignore = "needs the seed notes in ../shared/seeds, beside the checkout (build.rs looks)"
)]
fn catalogue_sources_are_seed_files_that_exist() {
    // The notes live beside the checkout, not in it: build.rs compiles this test in only when
    // they are there, so missing notes here are a failure, not a silent pass.
    let seeds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/seeds");
    assert!(seeds.is_dir(), "{} is missing", seeds.display());
    for c in catalogue::all(catalogue::DEFAULT_SPIN) {
        if c.source.document.ends_with(".txt") {
            let text =
                std::fs::read_to_string(seeds.join(&c.source.document)).expect("seed exists");
            let heading = c.source.section.split_whitespace().last().unwrap();
            assert!(
                text.contains(heading),
                "{}: '{heading}' not in {}",
                c.id,
                c.source.document
            );
        }
    }
}

#[test]
fn a_claim_survives_json_and_prints_as_a_listing() {
    let claim = catalogue::claim("null.barrier", catalogue::DEFAULT_SPIN).unwrap();
    let json = serde_json::to_string(&claim).unwrap();
    let back: stream_litmus::Claim = serde_json::from_str(&json).unwrap();
    assert_eq!(back, claim);
    // The listing is the claim file's program, op by op with its index.
    let listing = claim.program.to_string();
    assert!(listing.contains("    0 A: spin 50us on s1\n"), "{listing}");
    assert!(
        listing.contains("  stream null = legacy-null\n"),
        "{listing}"
    );
    let file = stream_litmus::litmus::print_claim(&claim);
    for line in [
        "A: spin 50us on s1",
        "N: spin 50us on null",
        "B: spin 50us on s2",
    ] {
        assert!(file.contains(line), "{file}");
    }
}

/// Every kernel spins for a fixed multiple of the catalogue's spin, so `--spin-us` scales the
/// whole catalogue: doubling the spin doubles every kernel.
#[test]
fn the_scaled_catalogue_scales_every_spin() {
    let spins = |spin| -> Vec<u64> {
        catalogue::all(spin)
            .iter()
            .flat_map(|c| c.program.ops.clone())
            .filter_map(|op| match op.kind {
                OpKind::Spin { duration_ns, .. } => Some(duration_ns),
                _ => None,
            })
            .collect()
    };
    let (single, double) = (spins(8 * US), spins(16 * US));
    assert_eq!(single.len(), double.len());
    for (a, b) in single.iter().zip(&double) {
        assert_eq!(2 * a, *b);
    }
}

fn stream_kind() -> impl Strategy<Value = StreamKind> {
    prop::sample::select(StreamKind::ALL.to_vec())
}

proptest! {
    /// Any program the builder makes serializes and deserializes to itself, and validation is a
    /// function of the data alone.
    #[test]
    fn programs_round_trip_through_json(
        kinds in prop::collection::vec(stream_kind(), 1..5),
        ops in prop::collection::vec((0usize..8, 0u8..4, 1u64..100_000, 1u32..4), 0..12),
    ) {
        let mut p = Program::builder("random");
        let streams: Vec<StreamId> = kinds.iter().map(|&k| p.stream(k)).collect();
        let events: Vec<EventId> = (0..3).map(|i| p.event(format!("e{i}"))).collect();
        for (target, kind, ns, grid) in ops {
            let s = streams[target % streams.len()];
            let e = events[target % events.len()];
            match kind {
                0 => { p.spin_grid(s, "k", Duration::from_nanos(ns), grid, 32); }
                1 => { p.record(s, e); }
                2 => { p.wait(s, e); }
                _ => { p.host_sync(SyncTarget::Stream(s)); }
            }
        }
        let program = p.build();
        let json = serde_json::to_string(&program).unwrap();
        let back: Program = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(&back, &program);
        prop_assert!(program.validate().is_ok());
        prop_assert_eq!(back.validate(), program.validate());
    }
}

/// The catalogue's programs are exactly those recorded on the GPU in
/// tests/fixtures/catalogue-h100.json.gz: a refactor of the catalogue cannot silently change what
/// the recorded verdicts are about (re-record the fixture when a claim changes on purpose).
#[test]
fn the_catalogue_is_the_one_recorded_on_the_gpu() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/catalogue-h100.json.gz");
    let run = stream_litmus::RunRecord::load(&path).unwrap();
    let now = catalogue::all(catalogue::DEFAULT_SPIN);
    assert_eq!(
        run.claims.len(),
        now.len(),
        "claims were added or removed since the recording"
    );
    for rec in &run.claims {
        let current = now
            .iter()
            .find(|c| c.id == rec.claim.id)
            .expect("claim still exists");
        assert_eq!(
            current, &rec.claim,
            "{} changed since it was recorded",
            rec.claim.id
        );
    }
}

/// Reading an elapsed time needs both events recorded first; the events it reads get timing.
#[test]
fn an_elapsed_time_needs_both_events_recorded_first() {
    let mut p = Program::builder("elapsed");
    let s = p.stream(StreamKind::NonBlocking);
    let (a, b) = (p.event("a"), p.event("b"));
    p.record(s, a);
    p.elapsed(a, b);
    let err = p.build().validate().unwrap_err();
    assert!(
        err.to_string()
            .contains("reads the elapsed time of event e1 before any record"),
        "{err}"
    );
    let mut q = Program::builder("elapsed-ok");
    let s = q.stream(StreamKind::NonBlocking);
    let (a, b, untimed) = (q.event("a"), q.event("b"), q.event("c"));
    q.record(s, untimed);
    q.record(s, a);
    q.spin(s, "K", 5 * US);
    q.record(s, b);
    q.elapsed(a, b);
    let q = q.build();
    assert!(q.validate().is_ok());
    assert!(q.is_timed_event(a) && q.is_timed_event(b) && !q.is_timed_event(untimed));
    assert!(q.to_string().contains("elapsed a to b"), "{q}");
}

/// docs/claims.md has a row for every claim of the catalogue, so the docs cannot fall behind the
/// code without a test failing.
#[test]
fn docs_claims_names_every_catalogue_claim() {
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/claims.md"),
    )
    .unwrap();
    for c in catalogue::all(catalogue::DEFAULT_SPIN) {
        assert!(
            docs.contains(&format!("`{}`", c.id)),
            "docs/claims.md has no row for {}",
            c.id
        );
    }
}

/// Host-side and memory ops are validated like the rest: frees name an earlier allocation once,
/// captures are closed, hold only stream work on created streams, and launch once; a device
/// cannot be queried.
#[test]
fn captures_frees_and_queries_are_validated() {
    let mut p = Program::builder("bad");
    let s = p.stream(StreamKind::NonBlocking);
    let null = p.stream(StreamKind::LegacyNull);
    let k = p.spin(s, "K", 5 * US);
    p.free_async(s, k);
    p.query("q", SyncTarget::Device);
    p.begin_capture(null);
    p.api(ApiCall::MemAlloc, 1 << 20);
    let err = p.build().validate().unwrap_err().to_string();
    for expected in [
        "frees op 0, which is no stream-ordered allocation",
        "queries the device",
        "captures a built-in stream",
        "is issued during a stream capture",
        "is never ended",
    ] {
        assert!(err.contains(expected), "{expected}: {err}");
    }

    let mut q = Program::builder("good");
    let s1 = q.stream(StreamKind::Blocking);
    let a = q.alloc_async(s1, "A", 1 << 20);
    q.free_async(s1, a);
    q.begin_capture(s1);
    let g = q.spin(s1, "G", 5 * US);
    let end = q.end_capture(s1);
    q.graph_launch(s1, end);
    q.host_fn(s1, "H", 5 * US, HostFnApi::StreamAddCallback);
    let q = q.build();
    assert!(q.validate().is_ok(), "{:?}", q.validate());
    assert_eq!(q.captured_by(g), Some(end));
    assert_eq!(q.captured_by(a), None);
    assert_eq!(
        q.captured_by(OpId(2)),
        None,
        "the begin-capture op itself is not captured"
    );
    let listing = q.to_string();
    assert!(
        listing.contains("graph_launch \"end capture\" on s1"),
        "{listing}"
    );
    assert!(
        listing.contains("H: host_fn 5us on s1 via cuStreamAddCallback"),
        "{listing}"
    );

    // A graph of kernels may be launched again (each launch stamps records of its own); one
    // holding a copy may not.
    let mut twice = Program::builder("twice");
    let s1 = twice.stream(StreamKind::Blocking);
    twice.begin_capture(s1);
    twice.spin(s1, "G", 5 * US);
    let end = twice.end_capture(s1);
    twice.graph_launch(s1, end);
    twice.graph_launch(s1, end);
    let twice = twice.build();
    assert!(twice.validate().is_ok(), "{:?}", twice.validate());
    let mut copied = Program::builder("copied twice");
    let s1 = copied.stream(StreamKind::Blocking);
    let h = copied.buffer("h", stream_litmus::Place::Pinned, 1 << 10, 1);
    let d = copied.buffer("d", stream_litmus::Place::Device, 1 << 10, 0);
    copied.begin_capture(s1);
    copied.copy(s1, "C", h, d);
    let end = copied.end_capture(s1);
    copied.graph_launch(s1, end);
    copied.graph_launch(s1, end);
    let err = copied.build().validate().unwrap_err().to_string();
    assert!(
        err.contains("again, and that graph holds op 1 'C'"),
        "{err}"
    );
}

/// The one-pass `captures` and `graph_launches` (readback and judging of 2,000-op programs) say
/// what `captured_by` and `launch_of` say op by op: on the catalogue, and on programs with a
/// capture never ended, a graph never launched, one launched twice, and two captures.
#[test]
fn captures_in_one_pass_agree_with_captured_by() {
    let mut programs: Vec<Program> = catalogue::all(catalogue::DEFAULT_SPIN)
        .into_iter()
        .map(|c| c.program)
        .collect();
    let mut odd = Program::builder("odd");
    let s1 = odd.stream(StreamKind::Blocking);
    let s2 = odd.stream(StreamKind::NonBlocking);
    odd.spin(s1, "D", 5 * US);
    odd.begin_capture(s1);
    odd.spin(s1, "G1", 5 * US);
    let first = odd.end_capture(s1);
    odd.begin_capture(s2);
    odd.spin(s2, "G2", 5 * US);
    let second = odd.end_capture(s2);
    odd.graph_launch(s1, second);
    odd.graph_launch(s2, second);
    odd.spin(s1, "after", 5 * US);
    odd.begin_capture(s1);
    odd.spin(s1, "never ended", 5 * US);
    programs.push(odd.build());
    let _ = first; // captured, never launched
    for p in &programs {
        let captures = p.captures();
        let launches = p.graph_launches();
        for op in &p.ops {
            let by = p.captured_by(op.id);
            assert_eq!(captures[op.id.0], by, "{}: op {}", p.name, op.id.0);
            let launch = by.and_then(|end| p.launch_of(end));
            assert_eq!(launches[op.id.0], launch, "{}: op {}", p.name, op.id.0);
        }
    }
}
