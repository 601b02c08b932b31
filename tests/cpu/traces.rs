//! Claims on traces, on hand-made profiler traces: each quantifier and selector at its
//! boundaries, trials, and every bad input the reader must refuse with a clear message.
//! (The examples' recorded traces are re-judged in `tests/examples.rs`.)

use crate::common;

use common::hand_traces::{file, judged, kineto, kineto_at, two, Op, AB};
use stream_litmus::litmus;
use stream_litmus::trace::{GpuKind, HostMemory, Trace, TraceError};
use stream_litmus::trace_claims::judge;
use stream_litmus::CopyDir;
use stream_litmus::Verdict;

#[test]
fn the_trace_gives_its_own_latency_and_jitter() {
    let (_d, path) = file(&two((1010.0, 100.0), (1200.0, 50.0)));
    let t = Trace::read(&[path]).unwrap();
    let tol = t.tolerances.tolerances;
    assert_eq!(
        tol.launch_latency_ns,
        Some(2_000),
        "{}",
        t.tolerances.describe()
    );
    // gemm_a, issued to an idle GPU too, started 5 µs after its call returned: 3 µs over the
    // shortest.
    assert_eq!(tol.launch_jitter_ns, 3_000);
    assert_eq!(
        tol.timer_step_ns, 32,
        "fractions of a µs: the CUPTI timer step"
    );
}

#[test]
fn overlaps_by_one_timer_step_and_not_by_less() {
    // A ends at 1110; B starting 32 ns before A's end ran together with it, 16 ns does not prove.
    let yes = judged(
        &two((1010.0, 100.0), (1109.968, 50.0)),
        &format!("{AB}\ncheck overlaps(A, B)"),
    );
    assert_eq!(yes.verdict, Verdict::Holds, "{:?}", yes.trials);
    // Less than a step of overlap is no proof of running together; B was ready long before.
    let less = judged(
        &two((1010.0, 100.0), (1109.984, 50.0)),
        &format!("{AB}\ncheck overlaps(A, B)"),
    );
    assert_ne!(less.verdict, Verdict::Holds);
}

#[test]
fn a_gap_while_ready_refutes_an_overlap_and_names_the_holder() {
    // B was ready at 1000 + 2 + 0.5 µs, yet started after A ended: it waited, behind A.
    let j = judged(
        &two((1010.0, 100.0), (1112.0, 50.0)),
        &format!("{AB}\ncheck overlaps(A, B)"),
    );
    assert_eq!(j.verdict, Verdict::Violated);
    let why = &j.trials[0].checks[0].reason;
    assert!(
        why.contains("it waited") && why.contains("after gemm_a"),
        "{why}"
    );
}

#[test]
fn the_holder_named_ran_on_the_same_gpu() {
    // As above, and an op of another device (another rank's GPU) that ended after A, just before
    // B started: it cannot have held B back, so A is still named.
    let trace = kineto(
        &[
            Op("kernel", "gemm_a", 7, 1010.0, 100.0, 1000.0),
            Op("kernel", "nccl_b", 9, 1112.0, 50.0, 1000.0),
            Op("kernel", "far_away", 11, 1050.0, 61.5, 1000.0),
        ],
        &[],
    )
    .replace(r#""device":0,"stream":11"#, r#""device":1,"stream":11"#);
    let j = judged(&trace, &format!("{AB}\ncheck overlaps(A, B)"));
    assert_eq!(j.verdict, Verdict::Violated);
    let why = &j.trials[0].checks[0].reason;
    assert!(
        why.contains("after gemm_a") && !why.contains("far_away"),
        "{why}"
    );
}

#[test]
fn quantifiers_range_over_pairs_that_could_meet() {
    // Two A's and two B's: B1 overlaps A1; B2 was issued after A2 ended (cannot meet it).
    let t = kineto(
        &[
            Op("kernel", "gemm_1", 7, 1010.0, 100.0, 1000.0),
            Op("kernel", "nccl_1", 9, 1050.0, 100.0, 1000.0),
            Op("kernel", "gemm_2", 7, 3010.0, 100.0, 3000.0),
            Op("kernel", "nccl_2", 9, 3300.0, 50.0, 3290.0),
        ],
        &[],
    );
    let exists = judged(&t, &format!("{AB}\ncheck exists overlaps(A, B)"));
    assert_eq!(exists.verdict, Verdict::Holds);
    let none = judged(&t, &format!("{AB}\ncheck ~exists overlaps(A, B)"));
    assert_eq!(none.verdict, Verdict::Violated);
    let all = judged(&t, &format!("{AB}\ncheck forall overlaps(A, B)"));
    assert!(
        all.trials[0].checks[0].reason.contains("left out"),
        "{}",
        all.trials[0].checks[0].reason
    );
}

#[test]
fn not_exists_holds_when_every_pair_waited() {
    let t = kineto(
        &[
            Op("kernel", "gemm_1", 7, 1010.0, 100.0, 1000.0),
            Op("kernel", "nccl_1", 9, 1112.0, 100.0, 1000.0),
        ],
        &[],
    );
    let j = judged(&t, &format!("{AB}\ncheck ~exists overlaps(A, B)"));
    assert_eq!(
        j.verdict,
        Verdict::Holds,
        "{:?}",
        j.trials[0].checks[0].reason
    );
    let e = judged(&t, &format!("{AB}\ncheck exists overlaps(A, B)"));
    assert_eq!(e.verdict, Verdict::Violated);
}

#[test]
fn a_selection_of_many_ops_needs_a_quantifier() {
    let t = kineto(
        &[
            Op("kernel", "gemm_1", 7, 1010.0, 100.0, 1000.0),
            Op("kernel", "gemm_2", 7, 1110.5, 100.0, 1000.0),
            Op("kernel", "nccl_1", 9, 1050.0, 100.0, 1000.0),
        ],
        &[],
    );
    let j = judged(&t, &format!("{AB}\ncheck overlaps(A, B)"));
    assert_eq!(j.verdict, Verdict::Inconclusive);
    assert!(j.trials[0].checks[0].reason.contains("exists"));
}

#[test]
fn each_step_is_a_trial_and_counts() {
    let t = kineto(
        &[
            Op("kernel", "gemm_1", 7, 1010.0, 100.0, 1000.0),
            Op("kernel", "nccl_1", 9, 1050.0, 100.0, 1000.0),
            Op("kernel", "gemm_2", 7, 2010.0, 100.0, 2000.0),
            Op("kernel", "nccl_2", 9, 2112.0, 100.0, 2000.0),
        ],
        &[(990.0, 500.0), (1990.0, 500.0)],
    );
    let j = judged(
        &t,
        &format!("trial each \"ProfilerStep#*\"\n{AB}\ncheck overlaps(A, B)"),
    );
    assert_eq!(j.trials.len(), 2);
    assert_eq!(j.verdict, Verdict::Violated);
    assert_eq!(j.counts.to_string(), "Sometimes 1/2");
}

#[test]
fn selectors_filter_by_stream_kind_and_range() {
    let t = kineto(
        &[
            Op("kernel", "gemm_1", 7, 1010.0, 100.0, 1000.0),
            Op(
                "gpu_memcpy",
                "Memcpy HtoD (Pinned -> Device)",
                9,
                1050.0,
                100.0,
                1000.0,
            ),
            Op(
                "gpu_memcpy",
                "Memcpy DtoH (Device -> Pageable)",
                9,
                3050.0,
                100.0,
                3000.0,
            ),
        ],
        &[(990.0, 500.0)],
    );
    let pinned = "select K = kernel stream 7\nselect C = copy h2d pinned";
    assert_eq!(
        judged(&t, &format!("{pinned}\ncheck overlaps(K, C)")).verdict,
        Verdict::Holds
    );
    let ranged = "select K = any in \"ProfilerStep#0\" stream 7\nselect C = copy d2h pageable";
    let j = judged(&t, &format!("{ranged}\ncheck exists overlaps(K, C)"));
    assert_ne!(
        j.verdict,
        Verdict::Holds,
        "the D2H copy ran long after the kernel"
    );
}

#[test]
fn a_selection_of_nothing_names_what_is_there() {
    let (_d, path) = file(&two((1010.0, 100.0), (1200.0, 50.0)));
    let trace = Trace::read(&[path]).unwrap();
    let text = "claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\nselect A = kernel \"allgather*\"\nselect B = kernel\ncheck exists overlaps(A, B)\n";
    let claims = litmus::parse_traced("t.litmus", text).unwrap();
    let e = judge(&claims[0], &trace).unwrap_err();
    assert!(matches!(e, TraceError::Unjudgeable(_)), "{e}");
    let e = e.to_string();
    assert!(e.contains("holds no op") && e.contains("`gemm_a`"), "{e}");
}

fn refused(text: &str) -> String {
    let (_d, path) = file(text);
    Trace::read(&[path]).unwrap_err().to_string()
}

#[test]
fn bad_traces_are_refused_with_a_reason() {
    let no_gpu = r#"{"schemaVersion":1,"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1.0,"dur":2.0}]}"#;
    assert!(refused(no_gpu).contains("ProfilerActivity.CUDA"));
    let truncated = &two((1010.0, 100.0), (1200.0, 50.0))[..300];
    assert!(
        refused(truncated).contains("cut short"),
        "{}",
        refused(truncated)
    );
    assert!(refused(r#"[{"ph":"X","name":"a","ts":1,"dur":1}]"#).contains("another tool"));
    let other = r#"{"traceEvents":[{"ph":"X","cat":"function","name":"f","pid":1,"tid":1,"ts":1,"dur":1}]}"#;
    assert!(
        refused(other).contains("another tool"),
        "{}",
        refused(other)
    );
    let negative = two((1010.0, -5.0), (1200.0, 50.0));
    assert!(
        refused(&negative).contains("negative"),
        "{}",
        refused(&negative)
    );
    let absurd = two((1e300, 5.0), (1200.0, 50.0));
    assert!(refused(&absurd).contains("absurd"), "{}", refused(&absurd));
    // Issue 36, row 14: a negative timestamp, and events 73 years apart.
    let before_zero = two((-2300.0, 5.0), (1200.0, 50.0));
    assert!(
        refused(&before_zero).contains("absurd timestamp (-2300 µs)"),
        "{}",
        refused(&before_zero)
    );
    let apart = two((2.3e15, 5.0), (1200.0, 50.0));
    assert!(
        refused(&apart).contains("days apart"),
        "{}",
        refused(&apart)
    );
    assert!(refused("").contains("empty"));
    assert!(refused("not json").contains("not JSON"));
}

#[test]
fn traces_of_different_runs_are_refused_together() {
    let (_a, pa) = file(&two((1010.0, 100.0), (1200.0, 50.0)));
    let ops = [
        Op("kernel", "gemm_a", 7, 1010.0, 100.0, 1000.0),
        Op("kernel", "nccl_b", 9, 1200.0, 50.0, 1000.0),
    ];
    let later = kineto_at(9e6, &ops, &[]);
    let (_b, pb) = file(&later);
    let e = Trace::read(&[pa, pb]).unwrap_err();
    assert!(matches!(e, TraceError::NotOneRun(_)), "{e}");
    assert!(e.to_string().contains("different runs"), "{e}");
}

#[test]
fn claim_files_on_traces_refuse_what_they_cannot_judge() {
    let head = "claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n";
    let bad = [
        (
            "select A = kernel\ncheck interleaves(A, A)",
            "unknown relation on a trace",
        ),
        (
            "select A = kernel\ncheck precedes(A, Z)",
            "unknown selection `Z`",
        ),
        ("select A = gemm", "a selection starts with the kind"),
        (
            "select A = kernel stream\ncheck exists overlaps(A, A)",
            "needs a number",
        ),
        (
            "select A = kernel\nstream s = non-blocking\ncheck exists overlaps(A, A)",
            "no program",
        ),
        (
            "select A = kernel\ncheck exists faster(A, A)",
            "no quantifier",
        ),
    ];
    for (body, wanted) in bad {
        let e = litmus::parse_traced("t.litmus", &format!("{head}{body}\n")).unwrap_err();
        assert!(e.to_string().contains(wanted), "{body}: {e}");
    }
    // A claim on a trace is refused where a program is wanted, and said so.
    let e = litmus::parse(
        "t.litmus",
        &format!("{head}select A = kernel\ncheck exists overlaps(A, A)\n"),
    )
    .unwrap_err();
    assert!(e.to_string().contains("--trace"), "{e}");
}

/// A trace's copies and a lab program's copies speak of one `program::CopyDir`: the profiler's
/// names (CUPTI's memcpy kinds, arrays being device memory) read to it, and a name without a
/// direction reads to none rather than a guess.
#[rstest::rstest]
#[case(
    "Memcpy HtoD (Pinned -> Device)",
    Some(CopyDir::H2D),
    HostMemory::Pinned
)]
#[case(
    "Memcpy HtoA (Pageable -> Array)",
    Some(CopyDir::H2D),
    HostMemory::Pageable
)]
#[case(
    "Memcpy DtoH (Device -> Pageable)",
    Some(CopyDir::D2H),
    HostMemory::Pageable
)]
#[case(
    "Memcpy AtoH (Array -> Pinned)",
    Some(CopyDir::D2H),
    HostMemory::Pinned
)]
#[case("Memcpy DtoD (Device -> Device)", Some(CopyDir::D2D), HostMemory::None)]
#[case("Memcpy AtoD (Array -> Device)", Some(CopyDir::D2D), HostMemory::None)]
#[case("Memcpy PtoP (Device -> Device)", Some(CopyDir::P2P), HostMemory::None)]
#[case(
    "Memcpy HtoH (Pinned -> Pinned)",
    Some(CopyDir::H2H),
    HostMemory::Pinned
)]
#[case("Memcpy Unknown", None, HostMemory::None)]
fn a_traced_copy_has_the_programs_direction(
    #[case] name: &str,
    #[case] dir: Option<CopyDir>,
    #[case] host: HostMemory,
) {
    assert_eq!(
        GpuKind::of("gpu_memcpy", name),
        Some(GpuKind::Copy(dir, host))
    );
}
