//! When the lab replaces trials: the retry plan at its boundaries (`lab/collect.rs`).

use std::time::Duration;
use stream_litmus::{Counts, RetryPlan, BUDGET_FLOOR, MAX_TRIAL_FACTOR};

fn counts(positive: usize, negative: usize, undecided: usize, disturbed: usize) -> Counts {
    Counts {
        positive,
        negative,
        undecided,
        disturbed,
        overlapped: 0,
    }
}

const MS: Duration = Duration::from_millis(1);

/// A claim of 5 trials whose first batch took 200 ms.
const PLAN: RetryPlan = RetryPlan {
    wanted: 5,
    first: Duration::from_millis(200),
    batch: Duration::from_millis(200),
};

#[test]
fn a_decided_claim_stops() {
    assert_eq!(PLAN.next(&counts(5, 0, 0, 0), true, 5, MS), None);
    // One counterexample decides.
    assert_eq!(PLAN.next(&counts(2, 1, 0, 2), true, 5, MS), None);
}

#[test]
fn a_claim_with_some_evidence_replaces_what_it_lacks_within_twice_its_first_batch() {
    // `elapsed` counts from the first batch's start: 200 ms of it were that batch.
    assert_eq!(PLAN.next(&counts(3, 0, 0, 2), true, 5, 250 * MS), Some(2));
    assert_eq!(PLAN.next(&counts(3, 0, 0, 2), true, 5, 399 * MS), Some(2));
    assert_eq!(PLAN.next(&counts(3, 0, 0, 2), true, 5, 400 * MS), None);
    // Undecided for a reason of its own, nothing disturbed: the same full budget.
    assert_eq!(PLAN.next(&counts(0, 0, 5, 0), true, 5, 399 * MS), Some(5));
}

#[test]
fn a_claim_whose_trials_were_all_disturbed_probes_one_trial_at_a_time_on_a_smaller_budget() {
    // A quarter of the first batch's 200 ms for probes.
    assert_eq!(PLAN.next(&counts(0, 0, 0, 5), true, 5, 200 * MS), Some(1));
    assert_eq!(PLAN.next(&counts(0, 0, 0, 6), true, 6, 249 * MS), Some(1));
    assert_eq!(PLAN.next(&counts(0, 0, 0, 7), true, 7, 250 * MS), None);
    // An undecided trial among disturbed ones is no evidence either.
    assert_eq!(PLAN.next(&counts(0, 0, 1, 6), true, 7, 250 * MS), None);
    // The first trial that counts restores the full budget and batch.
    assert_eq!(PLAN.next(&counts(1, 0, 0, 6), true, 7, 250 * MS), Some(4));
    // Disturbed by the host alone (the issuing thread preempted, a slow CPU), which passes:
    // the full budget.
    assert_eq!(PLAN.next(&counts(0, 0, 0, 5), false, 5, 250 * MS), Some(5));
}

#[test]
fn a_short_claim_has_the_floor_and_no_claim_runs_past_the_trial_cap() {
    let short = RetryPlan {
        wanted: 5,
        first: Duration::from_millis(2),
        batch: Duration::from_millis(2),
    };
    assert_eq!(
        short.next(&counts(0, 0, 0, 5), true, 5, BUDGET_FLOOR - MS),
        Some(1)
    );
    assert_eq!(short.next(&counts(0, 0, 0, 5), true, 5, BUDGET_FLOOR), None);
    let cap = MAX_TRIAL_FACTOR * 5;
    assert_eq!(short.next(&counts(2, 0, 0, cap - 2), true, cap, MS), None);
    assert_eq!(
        short.next(&counts(2, 0, 0, cap - 3), true, cap - 1, MS),
        Some(1)
    );
}

#[test]
fn a_disturbed_scout_probes_on_a_quarter_of_a_whole_batch_and_a_probe_that_counts_gets_it_all() {
    // The scout alone took 40 ms: a batch of 5 would have taken 200 ms.
    let scouted = RetryPlan {
        wanted: 5,
        first: Duration::from_millis(40),
        batch: Duration::from_millis(200),
    };
    // Probes until 40 + 200 / 4 ms.
    assert_eq!(scouted.next(&counts(0, 0, 0, 2), true, 2, 89 * MS), Some(1));
    assert_eq!(scouted.next(&counts(0, 0, 0, 3), true, 3, 90 * MS), None);
    // A probe that counted: the rest of the batch, within twice a whole batch.
    assert_eq!(scouted.next(&counts(1, 0, 0, 2), true, 3, 90 * MS), Some(4));
    assert_eq!(
        scouted.next(&counts(2, 0, 0, 2), true, 7, 399 * MS),
        Some(3)
    );
    assert_eq!(scouted.next(&counts(2, 0, 0, 2), true, 7, 400 * MS), None);
}
