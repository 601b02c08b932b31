//! The timing lines (issue 16) on the CPU: a recorded run without claim timings prints none, and
//! one with them names the slowest claims and sums every family; old files still load.

use crate::common;

use stream_litmus::report::timing_text::{bench, summary, total};
use stream_litmus::timing::ClaimTiming;
use stream_litmus::RunRecord;

fn core_run() -> RunRecord {
    RunRecord::load(&common::fixture("core-h100.json")).expect("the fixture loads")
}

#[test]
fn a_run_recorded_before_claim_timings_prints_no_timing_lines() {
    let run = core_run();
    assert!(run
        .claims
        .iter()
        .all(|c| c.trials().is_none_or(|t| t.timing.is_none())));
    assert_eq!(summary(&run, 5), "");
    assert_eq!(total(&run), ClaimTiming::default());
}

#[test]
fn timings_give_the_slowest_claims_and_a_row_per_family() {
    let mut run = core_run();
    let mut walls = Vec::new();
    for (i, c) in run.claims.iter_mut().enumerate() {
        if let stream_litmus::Outcome::Ran { trials, .. } = &mut c.outcome {
            let wall = 1_000_000 * (i as u64 + 1);
            trials.timing = Some(ClaimTiming {
                wall_ns: wall,
                gpu_ns: wall / 4,
                setup_ns: wall / 2,
                batches: 1,
                ..ClaimTiming::default()
            });
            walls.push((wall, c.claim.id.clone()));
        }
    }
    run.timing.wall_ns = 10_000_000_000;
    walls.sort();
    let text = summary(&run, 5);
    let slowest = &walls.last().unwrap().1;
    assert!(text.contains(slowest.as_str()), "{text}");
    assert!(!text.contains(&format!("  {} ", walls[0].1)), "{text}");
    assert_eq!(text.lines().count(), 3 + 5.min(walls.len()), "{text}");

    let table = bench(&run);
    let sum: u64 = walls.iter().map(|w| w.0).sum();
    let all = table.lines().find(|l| l.contains("all claims")).unwrap();
    assert!(
        all.contains(&format!("{:.1} ms", sum as f64 / 1e6)),
        "{table}"
    );
    for (_, id) in &walls {
        let family = stream_litmus::timing::family(id);
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(&format!("bench  {family} "))),
            "{family}"
        );
    }
    // The timings survive a save and a load.
    let path =
        std::env::temp_dir().join(format!("stream-litmus-timing-{}.json", std::process::id()));
    run.save(&path).unwrap();
    let back = RunRecord::load(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(total(&back), total(&run));
}
