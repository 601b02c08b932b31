//! Runs of many trials (issue 41): a results file the tool writes is one it reads back, at any
//! trial count it accepts, one claim at a time.
//!
//! The files are generated here from the committed H100 catalogue run (its `fifo.*` claims, their
//! five recorded trials repeated to 1,000 or 10,000), written the way a run writes them (claim by
//! claim, `RunWriter`), and read back by `judge`, `render` and `compare` under a read limit
//! smaller than the file but larger than each claim: what the reader holds is one claim.

use crate::common;

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use stream_litmus::{ClaimRecord, RunRecord, RunWriter, Verdict, KEPT_TRIALS};

/// The committed catalogue run's `fifo.*` claims, each with its trials repeated to `trials`
/// and judged again.
fn fifo_run(trials: usize) -> RunRecord {
    let recorded = RunRecord::load(&common::fixture("catalogue-h100.json.gz")).unwrap();
    let mut run = RunRecord {
        claims: Vec::new(),
        trials_per_claim: trials,
        ..recorded.clone_head()
    };
    for c in recorded
        .claims
        .iter()
        .filter(|c| c.claim.id.starts_with("fifo."))
    {
        let mut t = c.trials().unwrap().clone();
        let five = std::mem::take(&mut t.timelines);
        t.timelines = five.iter().cycle().take(trials).cloned().collect();
        t.wanted = trials;
        run.claims.push(ClaimRecord::judged(c.claim.clone(), t));
    }
    assert_eq!(run.claims.len(), 4, "the fixture's fifo claims");
    run
}

fn write_streamed(run: &RunRecord, path: &Path) -> stream_litmus::WriteStats {
    let mut writer = RunWriter::start(path);
    for c in &run.claims {
        writer.claim(Arc::new(c.clone()));
    }
    writer.finish(run).unwrap()
}

fn json_bytes(v: &impl serde::Serialize) -> usize {
    serde_json::to_vec(v).unwrap().len()
}

#[test]
fn a_thousand_trials_read_back_one_claim_at_a_time() {
    let run = fifo_run(1000);
    for c in &run.claims {
        let j = c.judgement().unwrap();
        assert_eq!(j.verdict, Verdict::Holds, "{}", c.claim.id);
        assert_eq!(j.counts.to_string(), "Always 1000/1000", "{}", c.claim.id);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json.gz");
    let stats = write_streamed(&run, &path);
    // The read limit lies between the largest claim and the whole file: read whole, the file
    // would be refused.
    let largest = run.claims.iter().map(json_bytes).max().unwrap();
    let limit_mib = (largest >> 20) + 1;
    assert!(
        stats.bytes > 2 * (limit_mib << 20) as u64,
        "{} bytes of JSON against a claim of {largest}",
        stats.bytes
    );
    let limit = limit_mib.to_string();
    let env = [("STREAM_LITMUS_READ_LIMIT_MIB", limit.as_str())];
    let report = dir.path().join("report");
    let again = dir.path().join("again.json.gz");
    let cases: [Vec<&OsStr>; 4] = [
        vec!["judge".as_ref(), path.as_os_str()],
        vec![
            "judge".as_ref(),
            path.as_os_str(),
            "--write".as_ref(),
            again.as_os_str(),
        ],
        vec![
            "render".as_ref(),
            path.as_os_str(),
            "--out".as_ref(),
            report.as_os_str(),
        ],
        vec!["compare".as_ref(), path.as_os_str(), again.as_os_str()],
    ];
    for args in cases {
        let (code, err, _) = common::peak::run_cli(&args, &env);
        assert_eq!(code, Some(0), "{args:?} under a {limit} MiB limit: {err}");
    }
    // Read back in this process: the same verdicts and counts, every trial's stamps.
    let back = RunRecord::load(&again).unwrap();
    assert_eq!(back.trials_per_claim, 1000);
    for (a, b) in run.claims.iter().zip(&back.claims) {
        assert_eq!(a.claim.id, b.claim.id);
        assert_eq!(a.judgement(), b.judgement(), "{}", a.claim.id);
        assert_eq!(a.trials().unwrap().timelines.len(), 1000);
        assert_eq!(a.trials(), b.trials(), "{}", a.claim.id);
    }
}

#[test]
fn ten_thousand_trials_are_accepted_and_read_back() {
    let run = fifo_run(10_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json.gz");
    write_streamed(&run, &path);
    let mut seen = Vec::new();
    let head = RunRecord::read_each(&path, |c| {
        seen.push((c.claim.id.clone(), c.rejudge().judgement().unwrap().counts));
        Ok(())
    })
    .unwrap();
    assert_eq!(head.trials_per_claim, 10_000);
    assert!(head.claims.is_empty());
    assert_eq!(seen.len(), 4);
    for (id, counts) in seen {
        assert_eq!(counts.to_string(), "Always 10000/10000", "{id}");
    }
}

#[test]
fn a_writer_left_before_its_end_writes_nothing_and_keeps_the_old_file() {
    let run = fifo_run(5);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    std::fs::write(&path, "old").unwrap();
    let mut writer = RunWriter::start(&path);
    writer.claim(Arc::new(run.claims[0].clone()));
    drop(writer);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary left"
    );
}

#[test]
fn a_claim_over_the_read_limit_is_refused_with_the_limit_and_its_variable() {
    let run = fifo_run(1000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json.gz");
    write_streamed(&run, &path);
    let (code, err, _) = common::peak::run_cli(
        &["judge".as_ref(), path.as_os_str()],
        &[("STREAM_LITMUS_READ_LIMIT_MIB", "1")],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("larger than the 1.0 MiB read limit")
            && err.contains("claims[0]")
            && err.contains("STREAM_LITMUS_READ_LIMIT_MIB"),
        "{err}"
    );
}

#[test]
fn a_kept_record_holds_the_first_trials_and_the_witness_and_is_not_judged_again() {
    let mut run = fifo_run(300);
    let c = run.claims.remove(0);
    let mut j = c.judgement().unwrap().clone();
    j.witness = Some(250);
    let c = ClaimRecord {
        outcome: stream_litmus::Outcome::Ran {
            trials: c.trials().unwrap().clone(),
            judgement: j,
        },
        ..c
    };
    let kept = c.kept();
    let t = kept.trials().unwrap();
    assert_eq!(t.timelines.len(), 300, "every trial keeps its index");
    assert_eq!(t.left_out, 300 - KEPT_TRIALS - 1);
    assert_eq!(t.timelines[250], c.trials().unwrap().timelines[250]);
    assert!(t.timelines[KEPT_TRIALS].spans.is_empty());
    assert!(!kept.whole());
    assert_eq!(kept.rejudge(), kept, "stamps left out: judged as it was");
}
