//! Timelines recorded on real GPUs (tests/fixtures/*.json, written by `stream-litmus --json`),
//! re-judged here without a GPU: the same records, every expectation met, undecided trials with
//! their reasons, and orders that do not hinge on the timer step.

use crate::common;

use stream_litmus::{judge, Check, ClaimRecord, Tolerances, Truth, Verdict};

/// Every recorded GPU run re-judges, without a GPU, to exactly the record it wrote.
#[test]
fn recorded_gpu_runs_rejudge_to_the_same_records() {
    let all = [
        common::recorded("core-"),
        common::recorded("catalogue-"),
        common::recorded("short-spin-"),
        common::recorded("nocupti-"),
    ];
    for (file, run) in all.into_iter().flatten() {
        assert!(
            run.calibration.is_some(),
            "{} was recorded on a GPU",
            file.display()
        );
        for rec in &run.claims {
            let again: ClaimRecord = rec.rejudge();
            assert_eq!(
                again,
                *rec,
                "{} {}: re-judging changed the record",
                file.display(),
                rec.claim.id
            );
        }
    }
}

/// The recorded catalogue runs met every expectation on the GPU.
#[test]
fn recorded_catalogue_runs_meet_every_expectation() {
    for (file, run) in common::recorded("core-")
        .into_iter()
        .chain(common::recorded("catalogue-"))
        .chain(common::recorded("nocupti-"))
    {
        let device = &run.calibration.as_ref().unwrap().device.name;
        assert!(run.claims.len() >= 12, "{}", file.display());
        for rec in &run.claims {
            if recorded_with_a_short_k1(rec) {
                continue;
            }
            assert!(
                rec.as_expected(),
                "{} {} on {device}",
                file.display(),
                rec.claim.id
            );
        }
    }
}

/// Runs recorded before host functions were given their own start latency
/// ([`stream_litmus::HOST_FN_LATENCY_NS`], issue 23) ran `host.*` with a 50 µs K1: a host function
/// starting after it no longer proves a wait, so those two claims moved from Holds to
/// Inconclusive on purpose, and say why.
fn recorded_with_a_short_k1(rec: &ClaimRecord) -> bool {
    let moved =
        ["host.launch_host_func", "host.stream_add_callback"].contains(&rec.claim.id.as_str());
    let short = match rec.claim.program.ops.first().map(|o| &o.kind) {
        Some(stream_litmus::OpKind::Spin { duration_ns, .. }) => {
            *duration_ns < stream_litmus::HOST_FN_LATENCY_NS
        }
        _ => false,
    };
    if !(moved && short) {
        return false;
    }
    let j = rec.judgement().unwrap();
    assert_eq!(j.verdict, Verdict::Inconclusive, "{}", rec.claim.id);
    assert!(
        j.trials
            .iter()
            .flat_map(|t| &t.measurements)
            .any(|m| m.truth == Truth::Unknown && m.reason.contains("host-function latency")),
        "{}: the reason names the host function's latency",
        rec.claim.id
    );
    true
}

/// With spins too short, the recorded undecided trials say why and what to do, and an
/// inconclusive verdict always comes from undecided trials, never from a refuted one.
#[test]
fn recorded_short_spins_are_undecided_with_a_reason_not_passed() {
    for (file, run) in common::recorded("short-spin-") {
        let mut undecided = 0;
        for rec in &run.claims {
            let j = rec.judgement().unwrap();
            for trial in &j.trials {
                for m in trial
                    .measurements
                    .iter()
                    .filter(|m| m.truth == Truth::Unknown)
                {
                    undecided += 1;
                    assert!(m.reason.contains("lengthen the spins"), "{}", m.reason);
                }
            }
            if j.verdict == Verdict::Inconclusive {
                assert!(
                    j.counts.undecided > 0,
                    "{} {}",
                    file.display(),
                    rec.claim.id
                );
            }
        }
        assert!(undecided > 0, "{} has no undecided trial", file.display());
        let single = run
            .claims
            .iter()
            .find(|c| c.claim.id == "connections.one.single_stream");
        assert_eq!(
            single.and_then(ClaimRecord::verdict),
            Some(Verdict::Violated)
        );
    }
}

/// The recorded orders have margin: judged with a timer step of one nanosecond instead of the
/// measured one, no precedes-only claim that held stops holding.
#[test]
fn recorded_orders_do_not_hinge_on_the_timer_step() {
    for (_, run) in common::recorded("core-") {
        for rec in &run.claims {
            let (Some(trials), Some(j)) = (rec.trials(), rec.judgement()) else {
                continue;
            };
            let precedes_only = rec
                .claim
                .checks
                .iter()
                .all(|c| matches!(c, Check::Precedes { .. }));
            if !precedes_only || j.verdict != Verdict::Holds {
                continue;
            }
            let strict = Tolerances {
                timer_step_ns: 1,
                ..j.tolerances
            };
            let again = judge(
                &rec.claim.program,
                &rec.claim.checks,
                &trials.timelines,
                &strict,
                trials.wanted,
            );
            assert_eq!(
                again.verdict,
                Verdict::Holds,
                "{} hinges on the timer step",
                rec.claim.id
            );
        }
    }
}

/// The lab keeps the judgement that decided a claim had trials enough (judged with no neighbour
/// seen) and takes it for the record where no neighbour was busy (`ClaimRecord::judged_with`):
/// on every recorded run, idle and contended, that record is the one judging anew makes.
#[test]
fn the_judgement_kept_from_collecting_is_the_one_judging_anew_makes() {
    let mut taken = 0;
    for (file, run) in common::recorded_runs() {
        for rec in &run.claims {
            let Some(trials) = rec.trials() else { continue };
            let tol = trials.calibration.tolerances();
            let (alone, _) = stream_litmus_core::judge::verdict::judge_claim_in_run(
                &rec.claim.program,
                &rec.claim.checks,
                &trials.timelines,
                None,
                &tol,
                trials.wanted,
                None,
            );
            let busy = trials.sharing.as_ref().is_some_and(|s| s.busy());
            taken += usize::from(!busy);
            let kept = ClaimRecord::judged_with(rec.claim.clone(), trials.clone(), Some(alone));
            let anew = ClaimRecord::judged(rec.claim.clone(), trials.clone());
            assert_eq!(
                kept,
                anew,
                "{} {}: the kept judgement differs",
                file.display(),
                rec.claim.id
            );
        }
    }
    assert!(taken > 500, "only {taken} records took the kept judgement");
}
