//! Where a run's time went, as text: the split between the GPU's work and the lab's own, the
//! slowest claims, and (`run --bench`) a table per claim family to compare one change with the
//! next (issue 16). Reads [`ClaimTiming`]s only; a record written before they existed prints
//! nothing.

use crate::measured::timing::{family, ClaimTiming};
use crate::record::{ClaimRecord, RunRecord, RunTiming};
use std::collections::BTreeMap;
use std::fmt::Write as _;

fn ms(ns: u64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

fn timed(run: &RunRecord) -> impl Iterator<Item = (&ClaimRecord, &ClaimTiming)> {
    run.claims
        .iter()
        .filter_map(|c| Some((c, c.trials()?.timing.as_ref()?)))
}

/// The phases of `t`, largest first: "setup 4.1 ms, teardown 2.0 ms, …" (at most `n`).
fn phases(t: &ClaimTiming, n: usize) -> String {
    let phases = t.phases();
    listed(&phases[..n.min(phases.len())])
}

/// Every claim's timing summed.
pub fn total(run: &RunRecord) -> ClaimTiming {
    let mut sum = ClaimTiming::default();
    for (_, t) in timed(run) {
        sum.absorb(t);
    }
    sum
}

/// The split of the run's wall time and the `n` slowest claims with theirs; empty when the
/// record has no claim timings.
pub fn summary(run: &RunRecord, n: usize) -> String {
    let mut claims: Vec<_> = timed(run).collect();
    if claims.is_empty() {
        return String::new();
    }
    let sum = total(run);
    let t = &run.timing;
    let between = t
        .wall_ns
        .saturating_sub(t.setup_ns)
        .saturating_sub(sum.wall_ns);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "split  wall {} = setup {} + claims {} (GPU {} + lab {}) + between claims {} ({})",
        ms(t.wall_ns),
        ms(t.setup_ns),
        ms(sum.wall_ns),
        ms(sum.gpu_ns),
        ms(sum.overhead_ns()),
        ms(between),
        between_parts(t, between),
    );
    let setups = [("setup", &t.setup_split), ("child setups", &t.child_setup)];
    for (name, split) in setups {
        let parts = split.parts();
        if !parts.is_empty() {
            let _ = writeln!(s, "{name:<6} {}", listed(&parts));
        }
    }
    let _ = writeln!(
        s,
        "lab    {}; buffers {} reused, {} allocated; target wall ≤ 2 × (GPU + setup) = {}",
        phases(&sum, 12),
        sum.buffers_reused,
        sum.buffers_allocated,
        ms(sum.gpu_ns.saturating_add(t.setup_ns).saturating_mul(2)),
    );
    claims.sort_by_key(|c| std::cmp::Reverse(c.1.wall_ns));
    let _ = writeln!(s, "slowest claims (wall = GPU + lab: its largest phases)");
    for (c, t) in claims.into_iter().take(n) {
        let _ = writeln!(
            s,
            "  {:<44} {:>9} = GPU {:>8} + lab {:>8}: {}",
            super::shown::one_line(&c.claim.id),
            ms(t.wall_ns),
            ms(t.gpu_ns),
            ms(t.overhead_ns()),
            phases(t, 3),
        );
    }
    s
}

/// The executor's time over many runs (`fuzz`): the timed regions, then the lab's phases.
pub fn executor_line(t: &ClaimTiming) -> String {
    format!(
        "{} in the executor: GPU (timed regions) {}, {}",
        ms(t.wall_ns),
        ms(t.gpu_ns),
        phases(t, 12)
    )
}

/// What happened between claims: NVML looks and final judging where the record says (newer
/// records), the rest (output, bookkeeping) named as such.
fn between_parts(t: &RunTiming, between: u64) -> String {
    if t.looks_ns == 0 && t.judging_ns == 0 {
        return "final judging, output, GPU observations".into();
    }
    let rest = between.saturating_sub(t.looks_ns.saturating_add(t.judging_ns));
    listed(&[
        ("NVML looks", t.looks_ns),
        ("final judging", t.judging_ns),
        ("output and the rest", rest),
    ])
}

/// "name 1.2 ms, name 0.3 ms".
fn listed(parts: &[(&str, u64)]) -> String {
    parts
        .iter()
        .map(|(name, ns)| format!("{name} {}", ms(*ns)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Per claim family (the id's first segment): claims, wall, GPU, lab overhead and its largest
/// phases, then the whole run; the table `run --bench` prints.
pub fn bench(run: &RunRecord) -> String {
    let mut families: BTreeMap<&str, (usize, ClaimTiming)> = BTreeMap::new();
    for (c, t) in timed(run) {
        let f = families.entry(family(&c.claim.id)).or_default();
        f.0 += 1;
        f.1.absorb(t);
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "bench  {:<12} {:>6} {:>11} {:>11} {:>11} {:>7}  largest lab phases",
        "family", "claims", "wall", "GPU", "lab", "lab/GPU"
    );
    let row = |s: &mut String, name: &str, n: usize, t: &ClaimTiming| {
        let ratio = t.overhead_ns() as f64 / t.gpu_ns.max(1) as f64;
        let _ = writeln!(
            s,
            "bench  {:<12} {:>6} {:>11} {:>11} {:>11} {:>6.1}×  {}",
            super::shown::one_line(name),
            n,
            ms(t.wall_ns),
            ms(t.gpu_ns),
            ms(t.overhead_ns()),
            ratio,
            phases(t, 3),
        );
    };
    for (name, (n, t)) in &families {
        row(&mut s, name, *n, t);
    }
    let n = families.values().map(|f| f.0).sum();
    row(&mut s, "all claims", n, &total(run));
    let t = &run.timing;
    let _ = writeln!(
        s,
        "bench  run: wall {}, setup {}, GPU {}; wall ÷ (GPU + setup) = {:.2} (target ≤ 2)",
        ms(t.wall_ns),
        ms(t.setup_ns),
        ms(t.gpu_ns),
        t.wall_ns as f64 / t.gpu_ns.saturating_add(t.setup_ns).max(1) as f64,
    );
    s
}
