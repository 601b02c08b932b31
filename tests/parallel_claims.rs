//! A user's own test file, as the README shows one: claims written with the builder, one
//! `#[test]` each, checked with `Lab::new().check(&claim)`, and nothing else: no `serial_test`,
//! no static lab, no lock of the file's own. `cargo test` runs these functions on several
//! threads at once; the library keeps each claim's trials alone on the GPU (the process's turn)
//! and shares one context and one calibration among the labs, so every verdict is the one a run
//! with one thread gives.
//!
//! The last test is the stress: the claim kinds that touch process-wide state (graph capture,
//! host functions, the legacy, per-thread and blocking streams, priorities, events, queries,
//! elapsed time, a claim in a child process) from eight threads at once, twenty rounds, each
//! round through a lab of its own. Before the turn, the same pattern crashed inside libcuda,
//! failed claims with another thread's capture errors, and decided a verdict wrongly.

use std::collections::BTreeMap;
use std::time::Duration;
use stream_litmus::report::terminal;
use stream_litmus::{catalogue, Claim, ClaimRecord, Expect, Lab, Source, StreamKind};

const SPIN: Duration = Duration::from_micros(50);

/// Runs the claim through a lab of its own, as the README does, and asserts its expectation.
fn check(claim: &Claim) -> ClaimRecord {
    let record = Lab::new().check(claim);
    println!("{}", terminal::claim_line(&record));
    assert!(
        record.as_expected(),
        "{} did not meet its expectation\n{}",
        claim.id,
        terminal::details(&record)
    );
    record
}

fn source() -> Source {
    Source::new("003_2d7c825d6571bec0.txt", "学习 6. GPU Pro Tip")
}

#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
fn per_thread_stream_runs_beside_a_blocking_stream() {
    let mut c = Claim::builder(
        "mine.per_thread_beside_blocking",
        "A kernel on the per-thread stream and one on a blocking stream overlap",
        source(),
    );
    let (pt, s1) = (
        c.stream(StreamKind::PerThread),
        c.stream(StreamKind::Blocking),
    );
    let a = c.spin(pt, "P", SPIN);
    let b = c.spin(s1, "B", SPIN);
    c.overlaps(a, b);
    check(&c.build(Expect::Holds));
}

#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
fn legacy_stream_waits_for_per_thread_work() {
    let mut c = Claim::builder(
        "mine.legacy_after_per_thread",
        "A legacy-stream kernel issued after a per-thread kernel starts after it ends",
        source(),
    );
    let (pt, null) = (
        c.stream(StreamKind::PerThread),
        c.stream(StreamKind::LegacyNull),
    );
    let p = c.spin(pt, "P", SPIN);
    let n = c.spin(null, "N", SPIN);
    c.precedes(p, n);
    check(&c.build(Expect::Holds));
}

#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
fn a_record_without_a_wait_orders_nothing() {
    let mut c = Claim::builder(
        "mine.record_without_wait",
        "Recording an event orders nothing by itself: a kernel on another stream still overlaps",
        source(),
    );
    let (s1, s2) = (
        c.stream(StreamKind::NonBlocking),
        c.stream(StreamKind::NonBlocking),
    );
    let e = c.event("E");
    let a = c.spin(s1, "A", SPIN);
    c.record(s1, e);
    let b = c.spin(s2, "B", SPIN);
    c.overlaps(a, b);
    check(&c.build(Expect::Holds));
}

#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
fn elapsed_time_covers_the_kernel() {
    let mut c = Claim::builder(
        "mine.elapsed_covers",
        "Events recorded around a kernel measure at least its run",
        source(),
    );
    let s = c.stream(StreamKind::NonBlocking);
    let (start, stop) = (c.event("start"), c.event("stop"));
    c.record(s, start);
    let k = c.spin(s, "K", SPIN);
    c.record(s, stop);
    let read = c.elapsed(start, stop);
    c.elapsed_covers(read, k);
    check(&c.build(Expect::Holds));
}

#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
fn a_misconception_is_violated() {
    let mut c = Claim::builder(
        "mine.null_blocks_non_blocking",
        "The legacy null stream blocks non-blocking streams too (a misconception)",
        source(),
    );
    let (null, s1) = (
        c.stream(StreamKind::LegacyNull),
        c.stream(StreamKind::NonBlocking),
    );
    let n = c.spin(null, "N", SPIN);
    let a = c.spin(s1, "A", SPIN);
    c.precedes(n, a);
    check(&c.build(Expect::Violated));
}

#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
fn a_claim_under_one_connection_runs_in_its_own_process() {
    // The stream-litmus binary beside this test binary serves the child: no setting needed.
    let claim = catalogue::all(catalogue::DEFAULT_SPIN)
        .into_iter()
        .find(|c| c.id == "connections.one.false_dependency")
        .expect("in the catalogue");
    assert!(claim.needs_child());
    check(&claim);
}

/// The catalogue's claims of every kind that touches process-wide state.
const STRESSED: [&str; 14] = [
    "graph.keeps_captured_order",
    "host.launch_host_func",
    "host.stream_add_callback",
    "null.barrier",
    "null.non_blocking_exempt",
    "per_thread.independent_of_blocking",
    "per_thread.syncs_with_legacy",
    "priority.high_jumps_ahead",
    "event.wait_orders",
    "event.elapsed_time",
    "host.queries_until_done",
    "host.syncs_return_after_work",
    "streams.non_blocking_pair",
    "connections.one.single_stream",
];
const THREADS: usize = 8;
const ROUNDS: usize = 20;

/// When a claim's trials ran on the GPU: its earliest stamp to its latest, `%globaltimer` ns.
fn gpu_window(record: &ClaimRecord) -> Option<(u64, u64)> {
    let trials = record.trials()?;
    let stamps = trials
        .timelines
        .iter()
        .flat_map(|t| &t.spans)
        .flat_map(|s| &s.blocks);
    let begin = stamps.clone().map(|b| b.start_ns).min()?;
    let end = stamps.map(|b| b.end_ns).max()?;
    Some((begin, end))
}

#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
fn eight_threads_twenty_rounds_each_claim_alone() {
    let claims: Vec<Claim> = catalogue::all(catalogue::DEFAULT_SPIN)
        .into_iter()
        .filter(|c| STRESSED.contains(&c.id.as_str()))
        .collect();
    assert_eq!(
        claims.len(),
        STRESSED.len(),
        "a stressed claim left the catalogue"
    );
    let started = std::time::Instant::now();
    let records: Vec<(usize, ClaimRecord)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let claims = &claims;
                scope.spawn(move || {
                    let mut mine = Vec::new();
                    for round in 0..ROUNDS {
                        let lab = Lab::new();
                        // Each thread starts the round at another claim, so that every kind
                        // meets every other in the threads beside it.
                        for k in 0..claims.len() {
                            let claim = &claims[(t + round + k) % claims.len()];
                            mine.push((t, lab.check(claim)));
                        }
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a worker thread panicked"))
            .collect()
    });
    let wall = started.elapsed();
    let mut tally: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut wrong = Vec::new();
    for (_, r) in &records {
        let entry = tally.entry(r.claim.id.as_str()).or_default();
        entry.1 += 1;
        if r.as_expected() {
            entry.0 += 1;
        } else {
            wrong.push(format!(
                "{}\n{}",
                terminal::claim_line(r),
                terminal::details(r)
            ));
        }
    }
    for (id, (ok, n)) in &tally {
        println!("{id}: as expected {ok}/{n}");
    }
    println!(
        "{} claims from {THREADS} threads in {:.2} s",
        records.len(),
        wall.as_secs_f64()
    );
    assert_eq!(records.len(), THREADS * ROUNDS * claims.len());
    assert!(
        wrong.is_empty(),
        "{} of {} claims were not as expected:\n{}",
        wrong.len(),
        records.len(),
        wrong.join("\n\n")
    );
    // One claim at a time: no two claims' GPU windows (first stamp to last, over all their
    // trials) intersect, whichever threads ran them. Claims in a child process are stamped on
    // the same `%globaltimer`.
    let mut windows: Vec<(u64, u64, &str)> = records
        .iter()
        .filter_map(|(_, r)| gpu_window(r).map(|(b, e)| (b, e, r.claim.id.as_str())))
        .collect();
    windows.sort();
    for pair in windows.windows(2) {
        assert!(
            pair[0].1 <= pair[1].0,
            "{} ran on the GPU until {} ns, after {} began at {} ns: two claims at once",
            pair[0].2,
            pair[0].1,
            pair[1].2,
            pair[1].0
        );
    }
}
