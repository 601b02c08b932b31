//! The terminal report: a header with the device, one line per claim, a footer with the time
//! spent, and, for claims that did not meet their expectation, the evidence and a text picture of
//! the witness trial.

use crate::calibration::Calibration;
use crate::program::{OpKind, Program};
use crate::record::{ClaimRecord, Outcome, RunRecord};
use crate::timeline::Timeline;
use std::fmt::Write;

/// "NVIDIA H100 …, driver 580.x (CUDA 13.0), 132 SMs, 1980 MHz (measured 1.98 cycles/ns), …"
pub fn header(cal: &Calibration, trials: usize) -> String {
    let d = &cal.device;
    let mut s = format!(
        "GPU    {} (sm_{}{}), {} SMs, {} MHz (measured {:.3} cycles/ns), driver {}\n",
        d.name,
        d.compute_capability.0,
        d.compute_capability.1,
        d.sm_count,
        d.clock_khz / 1000,
        cal.cycles_per_ns,
        d.driver(),
    );
    let _ = writeln!(
        s,
        "timer  step {} ns; launch jitter {:.2} µs; dependent gap {:.2} µs; {trials} trials per claim",
        cal.timer_step_ns,
        cal.launch_jitter_ns as f64 / 1e3,
        cal.dependent_gap_ns as f64 / 1e3,
    );
    if let Some((least, greatest)) = d.priority_range {
        let _ = writeln!(
            s,
            "prio   stream priorities {least} (least) to {greatest} (greatest)"
        );
    }
    let _ = writeln!(
        s,
        "cupti  {}{}",
        d.cupti.as_deref().unwrap_or("not found"),
        d.async_engines
            .map_or(String::new(), |n| format!("; async engines {n}"))
    );
    if !cal.environment.is_empty() {
        let _ = writeln!(s, "env    {}", cal.environment.join(" "));
    }
    s
}

/// `ok   fifo.blocking   Holds   Always 5/5   K1→K2 gap +1.20..+1.41 µs; …`
pub fn claim_line(rec: &ClaimRecord) -> String {
    let id = &rec.claim.id;
    match &rec.outcome {
        Outcome::Ran { judgement, .. } => {
            let mark = if rec.as_expected() { "ok  " } else { "FAIL" };
            let expected = if rec.as_expected() {
                String::new()
            } else {
                format!(" (expected {})", rec.claim.expect)
            };
            format!(
                "{mark} {id:<36} {:<12} {:<14} {}{expected}",
                judgement.verdict,
                judgement.counts,
                judgement.evidence(&rec.claim.program)
            )
        }
        Outcome::Failed { error } => format!("ERR  {id:<36} {error}"),
    }
}

/// The closing lines: how many claims met their expectation and where the time went.
pub fn footer(run: &RunRecord) -> String {
    let ok = run.claims.iter().filter(|c| c.as_expected()).count();
    let failed = run.claims.len() - ok;
    let t = &run.timing;
    format!(
        "{ok} as expected, {failed} not, of {} claims\n\
         time   wall {:.2} s = setup {:.2} s (context, NVRTC, calibration) + child processes \
         {:.2} s + the rest; GPU time of the catalogue {:.1} ms",
        run.claims.len(),
        t.wall_ns as f64 / 1e9,
        t.setup_ns as f64 / 1e9,
        t.child_ns as f64 / 1e9,
        t.gpu_ns as f64 / 1e6,
    )
}

/// Everything needed to understand one claim's result: statement, source, program, the deciding
/// measurement with its tolerances, and a picture of the witness trial.
pub fn details(rec: &ClaimRecord) -> String {
    let c = &rec.claim;
    let mut s = String::new();
    let _ = writeln!(s, "claim  {} — {}", c.id, c.statement);
    let _ = writeln!(s, "source {}", c.source);
    let _ = writeln!(s, "expect {}", c.expect);
    if let Some(why) = &c.rationale {
        let _ = writeln!(s, "why    {why}");
    }
    for var in &c.env {
        let _ = writeln!(s, "env    {var}");
    }
    s.push_str(&c.program.to_string());
    match &rec.outcome {
        Outcome::Failed { error } => {
            let _ = writeln!(s, "error  {error}");
        }
        Outcome::Ran { trials, judgement } => {
            let _ = writeln!(
                s,
                "result {} {} ({})",
                judgement.verdict, judgement.counts, judgement.tolerances
            );
            for w in &trials.warnings {
                let _ = writeln!(s, "warn   {w}");
            }
            if let Some(i) = judgement.witness {
                let _ = writeln!(s, "trial {} of {}:", i + 1, trials.timelines.len());
                for m in &judgement.trials[i].measurements {
                    let _ = writeln!(
                        s,
                        "  {:<7} {} — {}",
                        m.truth,
                        m.describe(&c.program),
                        m.reason
                    );
                }
                s.push_str(&picture(&c.program, &trials.timelines[i], 64));
            }
        }
    }
    s
}

/// One lane per stream, one row per stamped op or host function, `width` columns from the first
/// start to the last end; times relative to the first start. Host functions are drawn with `▒`,
/// placed with the trial's clock sync.
pub fn picture(program: &Program, timeline: &Timeline, width: usize) -> String {
    let origin = timeline.origin_ns() as i64;
    let span_ns = timeline.makespan_ns().max(1) as f64;
    let col = |t: i64| (((t - origin).max(0) as f64 / span_ns) * width as f64).round() as usize;
    let mut s = String::new();
    for op in &program.ops {
        let (stream, fill) = match op.kind {
            OpKind::Spin { stream, .. } => (stream, '█'),
            OpKind::HostFn { stream, .. } => (stream, '▒'),
            _ => continue,
        };
        let Some(iv) = timeline.interval(op.id) else {
            continue;
        };
        let lane = program
            .stream(stream)
            .map(|st| st.display_label())
            .unwrap_or_default();
        let (a, b) = (col(iv.start), col(iv.end).max(col(iv.start) + 1));
        let mut bar = String::with_capacity(width + 2);
        for x in 0..width.max(b) {
            bar.push(if x >= a && x < b { fill } else { '·' });
        }
        let _ = writeln!(
            s,
            "  {lane:<22} {:<6} {bar} {:>8.2}..{:.2} µs",
            op.label,
            (iv.start - origin) as f64 / 1e3,
            (iv.end - origin) as f64 / 1e3,
        );
    }
    s
}
