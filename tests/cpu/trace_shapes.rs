//! Never a wrong verdict from a trace's shape (issue 51, points 1–3): a verdict rests only on
//! what the trace shows. An overlap that was seen is a witness whatever the ready times say; the
//! kernels of one call (a graph launch) have no issue order between them; a file whose ops are
//! those of a file already read is refused, whatever its name. Each test fails on the code
//! before the issue.

use crate::common;

use common::kineto::judged;
use common::recording::Recording;
use std::path::{Path, PathBuf};
use stream_litmus::trace::{Trace, TraceError};
use stream_litmus::Verdict;

/// Five steps; in each, `A` on stream 7 and `B` on stream 9 ran together for 27 µs. `B`'s call
/// returned 1 µs before it started, and the trace's launch latency, jitter and clock error put
/// its latest ready time 38 µs after its start: after `A` had ended.
fn overlapping() -> String {
    let mut r = Recording::new();
    // Ops issued to an idle GPU that started up to 40 µs after their call returned: a jitter
    // of 38 µs.
    r.kernel("idle", 7, 342.0, 1.0, 297.0)
        .kernel("idle", 7, 412.0, 1.0, 405.0);
    for step in 0..5 {
        let t = 1000.0 + 200.0 * step as f64;
        r.kernel("A", 7, t + 10.0, 30.0, t)
            .kernel("B", 9, t + 13.0, 60.0, t + 7.0);
        r.range("ProfilerStep", t - 1.0, 150.0);
    }
    r.text()
}

#[test]
fn an_overlap_seen_is_a_witness_though_the_ready_time_came_after_it() {
    let text = overlapping();
    let sel = "trial each \"ProfilerStep*\"\nselect A = kernel \"A\"\nselect B = kernel \"B\"\n";
    for (check, want) in [
        ("~exists overlaps(A, B)", Verdict::Violated),
        ("exists overlaps(A, B)", Verdict::Holds),
        ("forall precedes(A, B)", Verdict::Violated),
        ("forall serializes(A, B)", Verdict::Violated),
    ] {
        let j = judged(&text, &format!("{sel}check {check}"));
        let reason = &j.trials[0].checks[0].reason;
        assert_eq!(j.verdict, want, "{check}: {reason}");
        let every = match want {
            Verdict::Holds => "Always 5/5",
            _ => "Never 0/5",
        };
        assert_eq!(j.counts.to_string(), every, "{check}: {reason}");
        if want == Verdict::Violated && check.contains("overlaps") {
            assert!(reason.contains("ran together for +27.00 µs"), "{reason}");
        }
    }
}

/// The committed recording of the lab itself: streams 14 and 17 ran together 32 times, 11–15 µs
/// each; the pairs were once left out as "issued only after the other ended".
#[test]
fn the_lab_recording_shows_its_streams_running_together() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cuda/traces");
    let gz = std::fs::read(root.join("cli_run.json.gz")).unwrap();
    let mut text = String::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut text)
        .unwrap();
    let j = judged(
        &text,
        "select A = kernel \"spin_stamp\" stream 14\nselect B = kernel \"spin_stamp\" stream 17\n\
         check exists overlaps(A, B)",
    );
    let reason = &j.trials[0].checks[0].reason;
    assert_eq!(j.verdict, Verdict::Holds, "{reason}");
}

/// A graph launch of three kernels that ran side by side on stream 7, between a kernel issued
/// before it and one after: their one call gives them no order among themselves.
#[test]
fn the_kernels_of_one_graph_launch_have_no_issue_order() {
    let mut r = Recording::new();
    r.kernel("S", 7, 1010.0, 50.0, 1000.0);
    r.graph(
        7,
        &[
            ("S", 1070.0, 40.0),
            ("S", 1071.0, 40.0),
            ("S", 1072.0, 40.0),
        ],
        1006.0,
    );
    r.kernel("S", 7, 1120.0, 50.0, 1012.0);
    let text = r.text();
    let sel = "select S = kernel \"S\"\n";
    let j = judged(&text, &format!("{sel}check forall precedes(S, S)"));
    let reason = &j.trials[0].checks[0].reason;
    assert_eq!(j.verdict, Verdict::Holds, "{reason}");
    assert!(
        reason.contains("3 pairs have no launch call to order them by issue"),
        "{reason}"
    );
    let j = judged(&text, &format!("{sel}check forall precedes(S, next S)"));
    let reason = &j.trials[0].checks[0].reason;
    assert_eq!(j.verdict, Verdict::Holds, "{reason}");
}

fn written(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A byte copy of a trace of no rank, given beside it under another name, is the same ops
/// twice: refused, as a file named twice is.
#[test]
fn a_copy_of_a_trace_given_beside_it_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = overlapping();
    let a = written(dir.path(), "a.json", &text);
    let b = written(dir.path(), "b.json", &text);
    let err = Trace::read(&[a.clone(), b]).unwrap_err();
    assert!(matches!(err, TraceError::NotOneRun(_)), "{err}");
    assert!(err.to_string().contains("the same ops"), "{err}");
    // Another trace of the same shape but other times is no copy.
    let other = text.replace("\"ts\":1010.000", "\"ts\":1010.500");
    let c = written(dir.path(), "c.json", &other);
    let err = Trace::read(&[a, c])
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(!err.contains("the same ops"), "{err}");
}
