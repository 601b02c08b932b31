//! A shared GPU on the GPU: a neighbour process keeps every SM and both copy directions busy
//! (`stream-litmus hog`) while claims of every kind the disturbance rule protects run. No decided
//! verdict may be wrong, the neighbour must be seen through NVML, disturbed trials must have
//! been counted, and the claims whose trials fit between the neighbour's slices must be decided
//! (docs/design.md, "Disturbance").

use serial_test::serial;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use stream_litmus::{catalogue, Verdict};

/// The neighbour, stopped when the test ends however it ends.
struct Hog(Child);

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Claims of each kind a neighbour turned into false verdicts before the rule: overlaps,
/// dispatch order, copies beside kernels, the null stream, speed-ups, and races.
const CLAIMS: [&str; 7] = [
    "streams.non_blocking_pair",
    "priority.equal_waits_behind",
    "copy.overlaps_kernel.pinned.kernel_first",
    "null.seed002_non_blocking",
    "scenario.sleep.grid",
    "scenario.pipeline.2",
    "scenario.prefetch.fast_kernels.without_dep1",
];

#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn a_busy_neighbour_makes_no_wrong_verdict() {
    let lab = crate::common::lab();
    let mut hog = Hog(Command::new(env!("CARGO_BIN_EXE_stream-litmus"))
        .args(["hog", "--seconds", "60"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("the neighbour starts"));
    // Until the neighbour's first round of load has run: it says so (EOF if it failed).
    let mut line = String::new();
    let stdout = hog.0.stdout.take().expect("piped");
    BufReader::new(stdout).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "hog: busy", "the neighbour did not start");
    // NVML lists it from its context on; give it a moment if the list lags.
    let mut seen = false;
    for _ in 0..50 {
        let look = lab.look().expect("the GPU is open");
        if look.after.iter().any(|n| n.pid == hog.0.id()) {
            seen = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let claims: Vec<_> = catalogue::all(catalogue::DEFAULT_SPIN)
        .into_iter()
        .filter(|c| CLAIMS.contains(&c.id.as_str()))
        .collect();
    assert_eq!(claims.len(), CLAIMS.len());
    let records = lab.check_all(&claims, |r| {
        println!("{}", stream_litmus::report::terminal::claim_line(r))
    });
    drop(hog);
    assert!(seen, "NVML never listed the neighbour");
    let mut disturbed = 0;
    for r in &records {
        let j = r
            .judgement()
            .unwrap_or_else(|| panic!("{} failed: {r:?}", r.claim.id));
        disturbed += j.counts.disturbed;
        assert!(
            j.verdict == Verdict::Inconclusive || r.as_expected(),
            "{} decided {} wrongly beside a neighbour:\n{}",
            r.claim.id,
            j.verdict,
            stream_litmus::report::terminal::details(r)
        );
        let sharing = r.trials().and_then(|t| t.sharing.as_ref());
        assert!(
            sharing.is_some_and(|s| !s.neighbours().is_empty()),
            "{}: the neighbour is not in the record",
            r.claim.id
        );
    }
    assert!(
        disturbed > 0,
        "no trial was disturbed beside a busy neighbour"
    );
    // Truth is not silence: the two claims of short kernels only (an overlap of two streams, the
    // seed's non-blocking streams beside the legacy one) have trials of under 0.2 ms, which fit
    // between the neighbour's time slices, and a trial held back as a whole still decides an
    // overlap (docs/design.md, 24).
    let decided: Vec<&str> = records
        .iter()
        .filter(|r| {
            r.judgement()
                .is_some_and(|j| j.verdict != Verdict::Inconclusive)
        })
        .map(|r| r.claim.id.as_str())
        .collect();
    println!(
        "decided beside the neighbour: {} of {}: {decided:?}",
        decided.len(),
        records.len()
    );
    for id in ["streams.non_blocking_pair", "null.seed002_non_blocking"] {
        assert!(decided.contains(&id), "{id} undecided beside the neighbour");
    }
}
