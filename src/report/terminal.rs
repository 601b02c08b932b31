//! The terminal report: a header with the device, one line per claim, a footer with the time
//! spent, and, for claims that did not meet their expectation, the evidence and a text picture of
//! the witness trial.

use super::placement::{
    count_of, describe, extent, origin, placed_ops, Lane, Mark, Source, Unplaced,
};
use super::thin::{thin, Drawn};
use crate::judge::verdict::{Judgement, Verdict};
use crate::measured::calibration::Calibration;
use crate::measured::sharing::Sharing;
use crate::measured::timeline::Timeline;
use crate::program::{OpKind, Program};
use crate::record::{ClaimRecord, Outcome, RunRecord};
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
    let id = super::shown::one_line(&rec.claim.id);
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
                super::shown::one_line(&judgement.evidence(&rec.claim.program))
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
        "{ok} as expected, {failed} not, of {} claims\n{}\n{}\n\
         time   wall {:.2} s = setup {:.2} s (context, CUPTI, kernels, calibration) + child \
         processes {:.2} s + the rest; GPU time of the catalogue {:.1} ms",
        run.claims.len(),
        decided_line(run),
        disturbed_line(run),
        t.wall_ns as f64 / 1e9,
        t.setup_ns as f64 / 1e9,
        t.child_ns as f64 / 1e9,
        t.gpu_ns as f64 / 1e6,
    )
}

/// "shared pid 1234 python3 (87 % SM, 714 MiB)", "shared no other process on the GPU (NVML)",
/// or why nobody can tell: the run header's word on neighbours.
pub fn sharing_line(s: &Sharing) -> String {
    match (s.describe(), &s.limit) {
        (Some(who), None) => format!("shared {who}: verdicts leave out disturbed trials"),
        (Some(who), Some(why)) => format!("shared {who} ({why})"),
        (None, None) => "shared no other process on the GPU (NVML)".into(),
        (None, Some(why)) => format!("shared unknown: {why}"),
    }
}

/// "decided 68 of 75 claims (91 %); Inconclusive: scenario 4, host 2, graph 1; retries 96
/// trials beyond the 375 asked for (+26 %), 0.31 s paused before them": what a shared GPU cost
/// the run (issue 25), by claim family (the id's first part).
pub fn decided_line(run: &RunRecord) -> String {
    let mut families: std::collections::BTreeMap<&str, usize> = Default::default();
    let (mut decided, mut asked, mut extra, mut paused) = (0usize, 0usize, 0usize, 0u64);
    let (mut short_claims, mut short) = (0usize, 0usize);
    for c in &run.claims {
        if let crate::record::Outcome::Ran { trials, judgement } = &c.outcome {
            asked += trials.wanted;
            let ran = trials.timelines.len();
            extra += ran.saturating_sub(trials.wanted);
            if ran < trials.wanted {
                short_claims += 1;
                short += trials.wanted - ran;
            }
            paused += trials.timing.map_or(0, |t| t.paused_ns);
            if judgement.verdict == Verdict::Inconclusive {
                let family = c.claim.id.split('.').next().unwrap_or_default();
                *families.entry(family).or_default() += 1;
            } else {
                decided += 1;
            }
        }
    }
    let total = run.claims.len();
    let mut by_family: Vec<(&str, usize)> = families.into_iter().collect();
    by_family.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let inconclusive = if by_family.is_empty() {
        String::new()
    } else {
        format!(
            "; Inconclusive: {}",
            by_family
                .iter()
                .map(|(f, n)| format!("{f} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    // Claims that a neighbour disturbed from their first trial on stop short of the trials asked
    // for (`lab::collect::collect_trials`' scout).
    let gave_up = match short_claims {
        0 => String::new(),
        n => format!(
            "; {n} claim{} stopped early, a neighbour having disturbed their first trial ({short} \
             trials not run)",
            if n == 1 { "" } else { "s" }
        ),
    };
    format!(
        "decided {decided} of {total} claims ({:.0} %){inconclusive}; retries {extra} trials beyond \
         the {asked} asked for (+{:.0} %), {:.2} s paused before them{gave_up}",
        100.0 * decided as f64 / total.max(1) as f64,
        100.0 * extra as f64 / asked.max(1) as f64,
        paused as f64 / 1e9
    )
}

/// "disturbed 12 of 410 trials (others on the GPU), in 5 claims; 2 claims Inconclusive for it":
/// the run's count of trials that carried no evidence because of something outside them.
pub fn disturbed_line(run: &RunRecord) -> String {
    let judged: Vec<&Judgement> = run.claims.iter().filter_map(|c| c.judgement()).collect();
    let trials: usize = judged.iter().map(|j| j.trials.len()).sum();
    let disturbed: usize = judged.iter().map(|j| j.counts.disturbed).sum();
    let claims = judged.iter().filter(|j| j.counts.disturbed > 0).count();
    let undecided = judged
        .iter()
        .filter(|j| j.verdict == Verdict::Inconclusive && j.counts.disturbed > 0)
        .count();
    let overlapped: usize = judged.iter().map(|j| j.counts.overlapped).sum();
    let counted = match overlapped {
        0 => String::new(),
        n => format!(" ({n} more disturbed but counted by their overlaps alone)"),
    };
    format!(
        "disturbed {disturbed} of {trials} trials, in {claims} claims{counted}; {undecided} \
         claims Inconclusive with disturbed trials"
    )
}

/// Everything needed to understand one claim's result: statement, source, program, the deciding
/// measurement with its tolerances, and a picture of the witness trial.
pub fn details(rec: &ClaimRecord) -> String {
    let c = &rec.claim;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "claim  {} — {}",
        super::shown::one_line(&c.id),
        super::shown::one_line(&c.statement)
    );
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

/// Rows per lane beyond which the picture thins a lane into runs.
pub const PICTURE_PER_LANE: usize = 24;
/// Op labels are cut to this many characters (the row's op id names the op in full).
const LABEL_W: usize = 18;

/// One row per op, grouped by lane (streams, then the host), `width` columns from the first
/// start to the last end of anything placed; times relative to the first stamped start. Every
/// op is placed by [`placed_ops`], as in the SVG and the trace: kernels and vector adds `█`,
/// copies `▓`, host functions `▒`, host-side calls `░`, an enqueued op (record, wait, async
/// allocation or free) `│` where its call put it in its stream, a graph launch `═` over what its
/// graph ran. Each row ends with the op's kind, the source that placed it and its op id; an op
/// with no place says why. Lanes with more than [`PICTURE_PER_LANE`] ops are thinned into runs
/// (`[ops 0–999]`).
pub fn picture(program: &Program, timeline: &Timeline, width: usize) -> String {
    let placed = placed_ops(program, timeline);
    let lanes = thin(program, &placed, false, PICTURE_PER_LANE);
    let zero = origin(&placed);
    let (first, last) = extent(&placed, false).unwrap_or((zero, zero));
    let scale = Scale {
        first,
        zero,
        span_ns: last.saturating_sub(first).max(1) as f64,
        width: width.max(1),
    };
    let mut rows: Vec<(String, String, String, String)> = Vec::new();
    for (lane, drawn) in &lanes {
        let lane_name = match lane {
            Lane::Host => "host".to_string(),
            Lane::Stream(s) => program
                .stream(*s)
                .map_or_else(|| format!("s{}", s.0), |s| s.display_label()),
        };
        for d in drawn {
            let (label, fill, at, tail) = row(program, *lane, d);
            let (bar, text) = scale.bar(fill, at);
            rows.push((lane_name.clone(), label, bar, format!("{text}; {tail}")));
        }
    }
    let label_w = rows
        .iter()
        .map(|r| r.1.chars().count())
        .max()
        .unwrap_or(0)
        .min(LABEL_W);
    let mut s = String::new();
    for (lane, mut label, bar, text) in rows {
        if label.chars().count() > LABEL_W {
            label = label.chars().take(LABEL_W - 1).chain(['…']).collect();
        }
        let _ = writeln!(s, "  {lane:<22} {label:<label_w$} {bar} {text}");
    }
    s
}

/// Where a row's op (or run of ops) is, and the source that placed it; why not, if it is not.
type At = Result<(Mark, &'static str), Unplaced>;

/// A row of the picture before its bar: the op's label, its fill, where it is and the tail.
fn row(program: &Program, lane: Lane, d: &Drawn) -> (String, char, At, String) {
    match d {
        Drawn::One { placed: p, .. } => {
            let kind = program.op(p.op).map(|o| &o.kind);
            let tail = format!("{} [op {}]", describe(program, p.op), p.op.0);
            let at = p.at.map(|m| (m, m.source.name()));
            (program.label(p.op), fill(kind, lane), at, tail)
        }
        Drawn::Run(r) => {
            let at = match (r.start, r.end) {
                (Some(start), Some(end)) => Ok((
                    Mark {
                        start,
                        end,
                        slack_ns: r.slack_ns,
                        source: r.source.unwrap_or(Source::Stamps),
                        instant: false,
                    },
                    r.source.map_or("mixed sources", Source::name),
                )),
                _ => Err(Unplaced::NoneOfRun),
            };
            let kind = program.op(r.first).map(|o| &o.kind);
            let tail = format!(
                "{}, thinned [ops {}–{}]",
                count_of(r.kind, r.count),
                r.first.0,
                r.last.0
            );
            let label = format!("{}..{}", program.label(r.first), program.label(r.last));
            (label, fill(kind, lane), at, tail)
        }
    }
}

/// Times onto the picture's columns: `width` of them from `first` over `span_ns`, µs from `zero`.
struct Scale {
    first: i64,
    zero: i64,
    span_ns: f64,
    width: usize,
}

impl Scale {
    fn col(&self, t: i64) -> usize {
        let c = (t.saturating_sub(self.first) as f64 / self.span_ns * self.width as f64).round();
        (c.max(0.0) as usize).min(self.width)
    }

    fn us(&self, t: i64) -> f64 {
        t.saturating_sub(self.zero) as f64 / 1e3
    }

    /// A row's bar, filled with `fill` where it is, and its times in words.
    fn bar(&self, fill: char, at: At) -> (String, String) {
        let width = self.width;
        let mut bar: Vec<char> = vec!['·'; width];
        let text = match at {
            Ok((m, source)) if m.instant => {
                bar[self.col(m.start).min(width - 1)] = '│';
                format!("at {:.2} µs, {source}", self.us(m.start))
            }
            Ok((m, source)) => {
                let (a, b) = (
                    self.col(m.start),
                    self.col(m.end).max(self.col(m.start) + 1),
                );
                for c in bar.iter_mut().take(b.min(width)).skip(a.min(width - 1)) {
                    *c = fill;
                }
                format!(
                    "{:.2}..{:.2} µs, {source}",
                    self.us(m.start),
                    self.us(m.end)
                )
            }
            Err(why) => format!("? not placed: {why}"),
        };
        (bar.into_iter().collect(), text)
    }
}

/// The fill of a bar by the op's kind and lane.
fn fill(kind: Option<&OpKind>, lane: Lane) -> char {
    match kind {
        Some(OpKind::Spin { .. } | OpKind::Add { .. }) => '█',
        Some(OpKind::Copy { .. }) => '▓',
        Some(OpKind::HostFn { .. }) => '▒',
        Some(OpKind::GraphLaunch { .. }) => '═',
        _ if lane == Lane::Host => '░',
        _ => '│',
    }
}
