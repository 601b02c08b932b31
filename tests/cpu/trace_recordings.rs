//! Two recordings compared (issue 35, point 9): `trace "FILE" as NAME` names the recording a
//! trace belongs to, `from NAME` selects from it, and `faster` compares phases of two
//! recordings; no relation of times pairs ops of two recordings, whose clocks are not one.

use crate::common;

use common::kineto::{made, MadeOp};
use stream_litmus::trace::Trace;
use stream_litmus::trace_claims::{judge, TraceJudgement};
use stream_litmus::Verdict;

/// One kernel of `us` µs, after the idle-issued memsets of [`made`].
fn recording(us: f64) -> String {
    let ops: [MadeOp; 1] = [("kernel", "step", 7, 1010.0, us, 1000.0)];
    made(&ops, &[])
}

const HEAD: &str = "claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n";

/// The claim `lines` after two traces, a slow and a fast recording, named SLOW and FAST.
fn judged(lines: &str) -> Result<TraceJudgement, String> {
    let dir = tempfile::tempdir().unwrap();
    let (slow, fast) = (dir.path().join("slow.json"), dir.path().join("fast.json"));
    std::fs::write(&slow, recording(300.0)).unwrap();
    std::fs::write(&fast, recording(100.0)).unwrap();
    let text = format!("{HEAD}trace \"slow.json\" as SLOW\ntrace \"fast.json\" as FAST\n{lines}\n");
    let claims =
        stream_litmus::litmus::parse_traced("t.litmus", &text).map_err(|e| e.to_string())?;
    let c = &claims[0];
    assert_eq!(c.runs, ["SLOW", "FAST"]);
    let trace = Trace::read_runs(&[slow, fast], &c.runs).map_err(|e| e.to_string())?;
    judge(c, &trace).map_err(|e| e.to_string())
}

#[test]
fn faster_compares_two_recordings() {
    let j = judged("select S = kernel from SLOW\nselect F = kernel from FAST\ncheck faster(S, F)")
        .unwrap();
    let reason = &j.trials[0].checks[0].reason;
    assert_eq!(j.verdict, Verdict::Holds, "{reason}");
    assert!(
        reason.contains("S took 300.00 µs") && reason.contains("F 100.00 µs"),
        "{reason}"
    );
    // The other way round, it is refuted.
    let j = judged("select S = kernel from SLOW\nselect F = kernel from FAST\ncheck faster(F, S)")
        .unwrap();
    assert_eq!(j.verdict, Verdict::Violated);
}

#[test]
fn pairs_of_two_recordings_are_left_out_and_counted() {
    // Both kernels ran at 1010 µs of their own clock: no overlap is claimed across recordings.
    let j = judged("select K = kernel\ncheck exists overlaps(K, K)").unwrap();
    let reason = &j.trials[0].checks[0].reason;
    assert_eq!(j.verdict, Verdict::Inconclusive, "{reason}");
    assert!(
        reason.contains("2 pairs of two recordings") && reason.contains("are left out"),
        "{reason}"
    );
}

#[test]
fn recordings_are_named_whole_and_related_only_by_faster() {
    let parse = |text: &str| {
        stream_litmus::litmus::parse_traced("t.litmus", &format!("{HEAD}{text}\n"))
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let partly = parse(
        "trace \"a.json\" as A\ntrace \"b.json\"\nselect K = kernel\ncheck exists overlaps(K, K)",
    );
    assert!(
        partly.contains("names some of its traces, not `b.json`"),
        "{partly}"
    );
    let unknown =
        parse("trace \"a.json\" as A\nselect K = kernel from B\ncheck exists overlaps(K, K)");
    assert!(unknown.contains("recording"), "{unknown}");
    let across = parse(
        "trace \"a.json\" as A\ntrace \"b.json\" as B\nselect X = kernel from A\n\
         select Y = kernel from B\ncheck exists overlaps(X, Y)",
    );
    assert!(
        across.contains("relates ops of two recordings, A and B")
            && across.contains("only `faster(SLOW, FAST)` compares recordings"),
        "{across}"
    );
}
