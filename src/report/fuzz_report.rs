//! The fuzz report: throughput, soundness (with each shrunk violation's program and timeline),
//! and the precision table.

use super::terminal::picture;
use crate::fuzz::FuzzReport;
use std::fmt::Write;

pub fn fuzz_report(r: &FuzzReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fuzz   {} random programs (seed {}, spins {:.0} µs) in {:.2} s: {:.0} programs/s, {} run \
         with shrinking ({} of them shrinking) and {} regression programs first; {:.0} % of the \
         time in the executor",
        r.cases,
        r.seed,
        r.spin_ns as f64 / 1e3,
        r.elapsed_ns as f64 / 1e9,
        r.programs_per_second(),
        r.programs_run,
        r.shrink_runs,
        r.regressions,
        100.0 * r.exec_ns as f64 / r.elapsed_ns.max(1) as f64,
    );
    let _ = writeln!(
        s,
        "sound  {} must-precede pairs of kernels checked: {} violation(s){}",
        r.must_pairs,
        r.violations.len(),
        if r.errors > 0 {
            format!(
                "; {} program(s) failed to run: {}",
                r.errors,
                r.first_error
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            )
        } else {
            String::new()
        }
    );
    for (i, v) in r.violations.iter().enumerate() {
        let _ = writeln!(
            s,
            "\nviolation {}: {} — {} (shrunk from {} to {} ops in {} runs)",
            i + 1,
            v.measurement.describe(&v.program),
            v.measurement.reason,
            v.original.ops.len(),
            v.program.ops.len(),
            v.shrink_runs
        );
        s.push_str(&v.program.to_string());
        s.push_str(&picture(&v.program, &v.timeline, 64));
    }
    let _ = writeln!(
        s,
        "\nprecision: may-overlap pairs of kernels, judged like an Overlaps check (overlapped / \
         serialized although ready / issued too late to tell)"
    );
    let _ = writeln!(
        s,
        "  {:<30} {:>10} {:>10} {:>10} {:>8}",
        "stream kinds", "overlapped", "serialized", "undecided", "rate"
    );
    for (kind, t) in &r.precision {
        let rate = t
            .rate()
            .map(|x| format!("{:.1}%", 100.0 * x))
            .unwrap_or_else(|| "—".into());
        let _ = writeln!(
            s,
            "  {kind:<30} {:>10} {:>10} {:>10} {rate:>8}",
            t.overlapped, t.serialized, t.undecided
        );
    }
    s
}
