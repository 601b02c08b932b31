//! What held a program back: the model of stream semantics applied to a trace.
//!
//! Tools that read traces report overlap percentages and gaps; none knows which waits the
//! program asked for. Here each step of a trace (`ProfilerStep#N`, a named range, or the whole
//! trace) is read with the program behind it (`trace/behind.rs`: its streams, ops, event records
//! and waits, syncs and environment, as far as the trace records them) and the one model of
//! stream semantics the lab's own programs are judged by (`model/`):
//! - **the model's must-precede pairs** the step states (`checked.rs`): each GPU op against the
//!   ops the model orders right before it (stream order, chains of event waits across any
//!   number of streams, the legacy default stream, graph launches), each host sync against the
//!   ops it covers; checked against the spans. A violation is a finding (a trace bug, a model
//!   gap or a driver behaviour no note describes) and is shown first.
//! - **every wait** (`waits.rs`): an op that was ready (its launch call, plus the launch latency,
//!   jitter and clock error the trace shows) before the op it started after had ended, with its
//!   cause (`trace/causes.rs`): **asked for** where the model orders it (the chain named),
//!   **implied** where only the legacy default stream's barrier does, else **not asked for**
//!   with the cause the trace supports (shared hardware queues, a module load, room on the GPU,
//!   or nothing the trace shows), and the time lost, summed per cause and per stream.
//! - **surprises**: a pageable copy that overlapped compute, which many expect to serialize.
//!
//! `litmus/explained.rs` turns what was found into claim files, so that it is judged again on
//! the next trace. Nothing here needs a GPU.
//!
//! **May import:** `trace` (trials, causes, the program behind), `model` (its rules),
//! `measured` (tolerances), `program` (op ids), `border`. Inside, from the ground up: `checked`,
//! `waits`, `text`.

mod checked;
mod text;
mod waits;

pub use checked::{RuleKind, Violation};
pub use text::{lane_name, text, text_each, Class, Listing};
pub use waits::{Lane, Surprise, Wait, Waits};

use crate::trace::{Pattern, Trace, TraceError, TrialSpec};

/// What one step of a trace shows.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: String,
    /// The must-precede pairs checked, in all and by rule, and those the spans broke.
    pub pairs: usize,
    pub by_rule: Vec<(RuleKind, usize)>,
    pub violations: Vec<Violation>,
    /// Every op that waited though it was ready, asked for or not; in an explanation for the
    /// terminal ([`explain_for_terminal`]), only those of the classes it lists (not asked for,
    /// implied), the rest counted in `counted` and the explanation's `tally`.
    pub waits: Waits,
    /// How many waits of each class the step had, kept or not.
    pub counted: Counted,
    pub surprises: Vec<Surprise>,
}

/// A step's waits counted by class, with the time those not asked for lost (summed in 128
/// bits, as every sum of waits).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counted {
    pub not_asked: usize,
    pub implied: usize,
    /// For room and asked for.
    pub others: usize,
    pub not_asked_lost_ns: i128,
}

/// The waits of every step summed by cause and lane: (time lost, count).
pub type Tally = std::collections::HashMap<(crate::trace::CauseKind, Lane), (i128, usize)>;

/// A pair of GPU lanes (file, process, device, stream) over the steps: in how many both had ops,
/// in how many an op of one overlapped an op of the other, and in how many (not meeting) one
/// waited for the other though ready. Counted as the steps are explained, not kept per step: a
/// trace of 6,200 steps over 64 lanes once kept 12 million pairs (1.1 GB).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LanePair {
    pub present: usize,
    pub met: usize,
    pub waited: usize,
}

/// The explanation of a trace, step by step.
#[derive(Debug, Clone)]
pub struct Explanation {
    /// How steps were cut: "each ProfilerStep#*", "the whole trace".
    pub cut: String,
    pub steps: Vec<Step>,
    /// Each pair of lanes of one GPU, over the steps.
    pub lanes: std::collections::BTreeMap<(Lane, Lane), LanePair>,
    /// What the trace could not state, said once (processes on several devices have no device
    /// syncs checked).
    pub notes: Vec<String>,
    /// The waits of every step, summed as the text says them.
    pub tally: Tally,
    /// Whether each step kept every wait ([`explain`]), or only those the terminal lists.
    pub every_wait: bool,
}

/// The steps `trial` names (a range pattern), else each `ProfilerStep#*` where the trace has
/// them, else the whole trace.
pub fn steps_of(trace: &Trace, trial: Option<&str>) -> Result<TrialSpec, TraceError> {
    if let Some(p) = trial {
        return Ok(TrialSpec::Each(Pattern::new(p)?));
    }
    let steps = Pattern::new("ProfilerStep#*")?;
    let any = (trace.files.iter()).any(|f| f.ranges.iter().any(|r| steps.matches(&r.name)));
    Ok(match any {
        true => TrialSpec::Each(steps),
        false => TrialSpec::Whole,
    })
}

/// Explains every step `spec` cuts the trace into, every wait of every step kept (for
/// `--json`, `--out` and `--claims`).
pub fn explain(trace: &Trace, spec: &TrialSpec) -> Result<Explanation, TraceError> {
    explain_keeping(trace, spec, true)
}

/// [`explain()`] for the terminal's summary alone ([`text()`] with [`Listing::Summary`]; every
/// other output, and `Listing::All`, needs [`explain()`]'s every wait): each step keeps only
/// the waits of the classes it lists (not asked for, implied), the rest counted and summed. A
/// trace's waits are about one per op, most of them asked for (an op queued in its stream):
/// kept, they were a fifth of what `explain` took on the docs' benchmark (issue 51).
pub fn explain_for_terminal(trace: &Trace, spec: &TrialSpec) -> Result<Explanation, TraceError> {
    explain_keeping(trace, spec, false)
}

fn explain_keeping(
    trace: &Trace,
    spec: &TrialSpec,
    every: bool,
) -> Result<Explanation, TraceError> {
    // Cut at once, built one at a time: a step's trial is 35 times its cut.
    let cuts = trace.cuts(spec, &|_| true)?;
    if cuts.is_empty() {
        return Err(TraceError::Trials(match spec {
            TrialSpec::Each(p) | TrialSpec::EachKernel(p) => format!(
                "no range matches `{}`: name one of the trace's ranges with --trial",
                crate::trace::clip(p.text())
            ),
            TrialSpec::Whole => "the trace holds no GPU op".into(),
        }));
    }
    let tol = &trace.tolerances;
    let mut notes = program_notes(trace);
    let mut checker = checked::Checker::default();
    let mut texts = waits::Texts::default();
    let mut tally = Tally::new();
    let mut lanes: std::collections::BTreeMap<(Lane, Lane), LanePair> = Default::default();
    let steps: Vec<Step> = (cuts.iter())
        .map(|(_, cut)| {
            let t = &trace.build(cut);
            let (by_rule, violations) = checker.check(trace, t, tol);
            // Every wait counted and summed as it is found; kept where the outputs need it.
            let mut waited: std::collections::HashSet<(Lane, Lane)> = Default::default();
            let mut counted = Counted::default();
            let waits = waits::find(t, tol, &mut texts, &mut |kind, lane, by_lane, lost| {
                waited.insert((lane, by_lane));
                let sum = tally.entry((kind, lane)).or_default();
                sum.0 += i128::from(lost);
                sum.1 += 1;
                let class = Class::of(kind);
                match class {
                    Class::NotAsked => {
                        counted.not_asked += 1;
                        counted.not_asked_lost_ns += i128::from(lost);
                    }
                    Class::Implied => counted.implied += 1,
                    Class::Room | Class::Asked => counted.others += 1,
                }
                every || matches!(class, Class::NotAsked | Class::Implied)
            });
            for (a, b, met) in waits::lanes_met(t, tol) {
                let pair = lanes.entry((a, b)).or_default();
                pair.present += 1;
                pair.met += usize::from(met);
                let one_waited = waited.contains(&(a, b)) || waited.contains(&(b, a));
                pair.waited += usize::from(one_waited && !met);
            }
            Step {
                name: t.name.clone(),
                pairs: by_rule.iter().map(|r| r.1).sum(),
                by_rule,
                violations,
                waits,
                counted,
                surprises: waits::surprises(trace, t, tol),
            }
        })
        .collect();
    let cut = match spec {
        TrialSpec::Each(p) => format!("each \"{}\"", crate::trace::clip(p.text())),
        TrialSpec::EachKernel(p) => format!("each kernel \"{}\"", crate::trace::clip(p.text())),
        TrialSpec::Whole => "the whole trace".into(),
    };
    if checker.spent {
        notes.push(format!(
            "the steps' windows overlap: past {} recorded syncs looked at, the rest were not \
             checked (explain one range that occurs once per step with --trial)",
            checked::MAX_SYNC_VISITS
        ));
    }
    Ok(Explanation {
        cut,
        steps,
        lanes,
        notes,
        tally,
        every_wait: every,
    })
}

/// What the trace does not record of the programs behind it, said once per file and process
/// (at most a few processes each, the rest counted).
fn program_notes(trace: &Trace) -> Vec<String> {
    const SAID: usize = 3;
    let mut notes = Vec::new();
    for (f, behind) in trace.behind.iter().enumerate() {
        let who = trace.files[f].who();
        let told: Vec<_> = behind
            .processes
            .iter()
            .filter(|p| !p.notes.is_empty())
            .collect();
        for p in told.iter().take(SAID) {
            notes.push(format!("{who}, process {}: {}", p.pid, p.notes.join("; ")));
        }
        if told.len() > SAID {
            notes.push(format!(
                "{who}: {} more processes with what their trace does not record",
                told.len() - SAID
            ));
        }
    }
    notes
}

/// The pairs of every step summed by rule, as "stream order 120, device syncs 4, event waits 9"
/// (rules with no pair left out; the two every trace states always shown).
pub fn rules_summed(e: &Explanation) -> String {
    let mut sums: Vec<(RuleKind, usize)> = Vec::new();
    for (rule, n) in e.steps.iter().flat_map(|s| s.by_rule.iter()) {
        match sums.iter_mut().find(|(r, _)| r == rule) {
            Some((_, m)) => *m += n,
            None => sums.push((*rule, *n)),
        }
    }
    let always = [RuleKind::StreamOrder, RuleKind::DeviceSync];
    (sums.iter())
        .filter(|(r, n)| *n > 0 || always.contains(r))
        .map(|(r, n)| format!("{} {n}", r.word()))
        .collect::<Vec<_>>()
        .join(", ")
}
