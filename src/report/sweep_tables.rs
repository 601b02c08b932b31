//! The sweep tables: launch offsets, and hardware queues measured against the model.

use crate::judge::relation::micros;
use crate::lab::parameter_sweeps::{summary, OffsetRow, QueueRow};
use std::fmt::Write;

pub fn offsets_table(rows: &[OffsetRow]) -> String {
    let mut s = String::from(
        "launch offsets (seed 000, 7.4): n kernels on n streams, launched back to back; start of \
         each kernel minus the first one's\n",
    );
    let _ = writeln!(
        s,
        "  {:>7}  {:>11} {:>11} {:>11}   {:>26}",
        "streams", "min", "median", "max", "host time between launches"
    );
    for r in rows {
        let (lo, mid, hi) = summary(&r.offsets_ns).unwrap_or((0, 0, 0));
        let gap = summary(&r.launch_gaps_ns).map(|g| g.1).unwrap_or(0);
        let _ = writeln!(
            s,
            "  {:>7}  {:>11} {:>11} {:>11}   {:>26}",
            r.streams,
            micros(lo),
            micros(mid),
            micros(hi),
            format!("median {}", micros(gap))
        );
    }
    s
}

/// "—" for none, "9" or "9–16" for runs of consecutive streams, joined by commas.
fn list(v: &[usize]) -> String {
    if v.is_empty() {
        return "—".into();
    }
    let mut parts = Vec::new();
    let mut start = v[0];
    for (i, &x) in v.iter().enumerate() {
        let next = v.get(i + 1);
        if next != Some(&(x + 1)) {
            parts.push(if start == x {
                x.to_string()
            } else {
                format!("{start}–{x}")
            });
            if let Some(&n) = next {
                start = n;
            }
        }
    }
    parts.join(",")
}

/// Side-by-side rows for two connection settings, and the smallest k with a false dependency.
pub fn queues_table(settings: &[(String, Vec<QueueRow>)]) -> String {
    let mut s = String::from(
        "hardware queues: k streams × 2 kernels issued depth-first; streams whose first kernel was \
         held back until A1 ended (measured / predicted by the model's queue refinement)\n",
    );
    let _ = write!(s, "  {:>3}", "k");
    for (name, _) in settings {
        let _ = write!(s, "  {:<34}", name);
    }
    s.push('\n');
    let k_max = settings.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
    for i in 0..k_max {
        let _ = write!(s, "  {:>3}", i + 1);
        for (_, rows) in settings {
            let cell = rows
                .get(i)
                .map(|r| {
                    let extra = if r.undecided > 0 {
                        format!(" ({}?)", r.undecided)
                    } else {
                        String::new()
                    };
                    format!("{} / {}{extra}", list(&r.held_back), list(&r.predicted))
                })
                .unwrap_or_default();
            let _ = write!(s, "  {cell:<34}");
        }
        s.push('\n');
    }
    for (name, rows) in settings {
        let first = |pick: fn(&QueueRow) -> &Vec<usize>| {
            rows.iter()
                .find(|r| !pick(r).is_empty())
                .map(|r| r.streams.to_string())
                .unwrap_or_else(|| format!("none up to {}", rows.len()))
        };
        let _ = writeln!(
            s,
            "  {name}: smallest k with a false dependency: measured {}, model {}",
            first(|r| &r.held_back),
            first(|r| &r.predicted)
        );
    }
    s
}
