//! The copy claims and scenarios, on the CPU, from runs recorded on real GPUs:
//! `catalogue-h100.json.gz` and `catalogue-h200.json.gz` (the whole catalogue, copy spans from
//! CUPTI) and `nocupti-h100.json.gz` (the copy, memory and race claims with CUPTI hidden through
//! `STREAM_LITMUS_CUPTI=off`, copy spans from events). Re-judging them is covered with the other
//! recordings in tests/cpu/analysis.rs; here: the witness evidence, and the scenario tables.

use crate::common;

use std::sync::OnceLock;
use stream_litmus::report::scenario;
use stream_litmus::{ClaimRecord, RunRecord, Warning, WitnessKind};

/// The recorded run `name`, loaded once per test binary (the catalogue's takes seconds to parse
/// in a debug build).
fn one(name: &str) -> &'static RunRecord {
    static RUNS: OnceLock<Vec<(String, RunRecord)>> = OnceLock::new();
    let runs = RUNS.get_or_init(|| {
        ["catalogue-h100", "catalogue-h200", "nocupti-h100"]
            .into_iter()
            .map(|n| (n.to_string(), common::recorded(n).pop().unwrap().1))
            .collect()
    });
    &runs
        .iter()
        .find(|(n, _)| n == name)
        .expect("a known fixture")
        .1
}

fn with_copies(run: &RunRecord) -> Vec<&ClaimRecord> {
    run.claims
        .iter()
        .filter(|c| c.claim.program.has_copies())
        .collect()
}

/// Every trial that moved data aligned its witness to `%globaltimer` through stamped kernels, and
/// every copy claim's evidence names its witness with the alignment error.
#[test]
fn recorded_copies_are_witnessed_and_aligned() {
    let cupti = "copy spans from CUPTI activity records, aligned within ±";
    for (file, kind, evidence) in [
        ("catalogue-h100", WitnessKind::Cupti, cupti),
        ("catalogue-h200", WitnessKind::Cupti, cupti),
        (
            "nocupti-h100",
            WitnessKind::Events,
            "copy spans from events around each copy (no CUPTI): weaker evidence",
        ),
    ] {
        let run = one(file);
        let claims = with_copies(run);
        assert!(claims.len() >= 10, "{file}: {} copy claims", claims.len());
        for rec in claims {
            let program = &rec.claim.program;
            for t in &rec.trials().unwrap().timelines {
                let sync = t
                    .witness
                    .expect("a witness sync in every trial with copies");
                assert_eq!(sync.kind, kind, "{file} {}", rec.claim.id);
                // the two markers around every trial, at least
                assert!(sync.anchors >= 2, "{file} {}", rec.claim.id);
                assert!(
                    sync.error_ns >= sync.disagreement_ns + kind.resolution_ns(),
                    "{file} {}",
                    rec.claim.id
                );
            }
            let text = rec.judgement().unwrap().evidence(program);
            assert!(text.contains(evidence), "{file} {}: {text}", rec.claim.id);
        }
    }
}

/// Without CUPTI, the run says why in a warning on every claim that copies; with it, none.
#[test]
fn a_run_without_cupti_warns_on_every_copy_claim() {
    let no_cupti = |rec: &ClaimRecord| {
        rec.trials()
            .unwrap()
            .warnings
            .iter()
            .any(|w| matches!(w, Warning::NoCupti { .. }))
    };
    assert!(with_copies(one("nocupti-h100")).into_iter().all(no_cupti));
    assert!(!with_copies(one("catalogue-h100")).into_iter().any(no_cupti));
}

/// The copy claims met their expectations with either witness, and the CUPTI run's alignment is
/// the tighter one, as the witness kinds' strengths claim.
#[test]
fn both_witnesses_agree_on_the_copy_verdicts() {
    let (cupti, events) = (one("catalogue-h100"), one("nocupti-h100"));
    let worst = |run: &RunRecord, id: &str| {
        let rec = run.claims.iter().find(|c| c.claim.id == id).unwrap();
        assert!(rec.as_expected(), "{id}");
        rec.trials()
            .unwrap()
            .timelines
            .iter()
            .filter_map(|t| t.witness.map(|w| w.error_ns))
            .max()
            .unwrap()
    };
    for rec in with_copies(events) {
        let id = &rec.claim.id;
        assert_eq!(
            cupti
                .claims
                .iter()
                .find(|c| &c.claim.id == id)
                .and_then(ClaimRecord::verdict),
            rec.verdict(),
            "{id}"
        );
        assert!(worst(cupti, id) < worst(events, id), "{id}");
    }
}

/// The scenario tables rebuild from the recorded run: every variant, stream count, regime and
/// removed dependency has its row, with figures that follow from the recorded stamps.
#[rstest::rstest]
fn the_scenario_tables_rebuild_from_a_recorded_run(
    #[values("catalogue-h100", "catalogue-h200")] file: &str,
) {
    let run = one(file);
    let tables = scenario::tables(&run.claims);
    assert_eq!(tables.len(), 3, "{tables:#?}");
    let [sleep, pipeline, prefetch] = [&tables[0], &tables[1], &tables[2]];
    for row in ["grid ", "one_block ", "(the seed: 5.000 ms on 1 stream"] {
        assert!(sleep.contains(row), "{row}\n{sleep}");
    }
    for streams in ["\n1 ", "\n2 ", "\n4 ", "\n8 "] {
        assert!(pipeline.contains(streams), "{streams:?}\n{pipeline}");
    }
    assert!(pipeline.contains("best: "), "{pipeline}");
    for row in [
        "slow_kernels ",
        "fast_kernels ",
        "16 → 8 MiB",
        "5. lod_weight_2",
    ] {
        assert!(prefetch.contains(row), "{row}\n{prefetch}");
    }
    // Without the scenario claims, there is nothing to tabulate.
    let no_scenarios: Vec<_> = run
        .claims
        .iter()
        .filter(|c| !c.claim.id.starts_with("scenario."))
        .cloned()
        .collect();
    assert!(scenario::tables(&no_scenarios).is_empty());
    // Rows are chosen by the claims' `table` field (filled in on load for files recorded
    // before it existed), not by their ids.
    assert!(run.claims.iter().any(|c| c.claim.table.is_some()));
    let mut untabled = run.claims.clone();
    for c in &mut untabled {
        c.claim.table = None;
    }
    assert!(scenario::tables(&untabled).is_empty());
}
