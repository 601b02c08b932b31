//! Claim files on the CPU: every catalogue claim printed in the format reads back to an equal
//! claim, at several spins; the printed text of a claim is stable; errors point at the culprit.

use rstest::rstest;
use std::time::Duration;
use stream_litmus::catalogue::{self, DEFAULT_SPIN};
use stream_litmus::litmus;

#[rstest]
#[case::default_spin(DEFAULT_SPIN)]
#[case::one_us(Duration::from_micros(1))]
#[case::seven_us(Duration::from_micros(7))]
#[case::odd_ns(Duration::from_nanos(12_345))]
#[case::two_ms(Duration::from_millis(2))]
fn every_catalogue_claim_round_trips(#[case] spin: Duration) {
    let claims = catalogue::all(spin);
    for claim in &claims {
        let text = litmus::print_claim(claim);
        let back = litmus::parse("printed.litmus", &text).unwrap_or_else(|e| {
            panic!(
                "{} does not parse back:\n{e}\n--- text ---\n{text}",
                claim.id
            )
        });
        assert_eq!(back.len(), 1);
        assert_eq!(
            &back[0], claim,
            "{} changed through the format:\n{text}",
            claim.id
        );
        assert_eq!(
            serde_json::to_value(&back[0]).unwrap(),
            serde_json::to_value(claim).unwrap()
        );
    }
    // All claims in one file read back in order.
    let text = litmus::print_claims(&claims);
    assert_eq!(litmus::parse("all.litmus", &text).unwrap(), claims);
}

#[test]
fn a_claim_prints_as_it_reads() {
    let claim = catalogue::event_wait_orders(DEFAULT_SPIN);
    let text = litmus::print_claim(&claim);
    assert!(
        text.starts_with("claim event.wait_orders\nstatement \""),
        "{text}"
    );
    for line in [
        "stream s1, s2 = non-blocking",
        "event E",
        "A: spin 50us on s1",
        "record E on s1",
        "wait E on s2",
        "B: spin 50us on s2",
        "check precedes(A, B)",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "no line `{line}` in:\n{text}"
        );
    }
}
