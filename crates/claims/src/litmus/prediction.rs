//! What the happens-before model says of a claim, without a GPU: for each check, whether the
//! documented rules (and the hardware-queue refinement for the claim's connection count)
//! guarantee it, forbid it, or leave it open, and so whether running it can teach anything
//! beyond the documentation.

use crate::judge::claim::Claim;
use crate::judge::relation::Check;
use crate::judge::verdict::Expect;
use crate::model::{HappensBefore, Refinement};
use std::fmt;

/// The model's answer to one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The rules guarantee it: the check must hold on every trial.
    Guaranteed,
    /// The rules make it impossible: the check must fail.
    Forbidden,
    /// The rules allow both: only the GPU can say (an overlap is never promised, an order not
    /// made by a stream, event, the null stream or a host wait is never guaranteed).
    Open,
    /// Not a happens-before question (timing, dispatch order, host calls, data).
    NotAsked,
    /// The program has more ops than the model is asked about ([`MAX_MODEL_OPS`]).
    TooLarge,
}

/// The most ops a program may have for `predict` to build its happens-before relation (which
/// takes memory quadratic in the ops): the catalogue's largest has about 2 000.
pub const MAX_MODEL_OPS: usize = 8192;

impl Answer {
    fn of(model: &HappensBefore, check: &Check) -> Answer {
        let (a, b, is_order) = match *check {
            Check::Precedes { before, after } => (before, after, true),
            Check::Overlaps { a, b } => (a, b, false),
            _ => return Answer::NotAsked,
        };
        match (model.must_precede(a, b), model.must_precede(b, a), is_order) {
            (true, _, true) => Answer::Guaranteed,
            (_, true, true) | (true, _, false) | (_, true, false) => Answer::Forbidden,
            _ => Answer::Open,
        }
    }

    /// What the answer means for this check, in words.
    pub fn describe(self, check: &Check) -> &'static str {
        match (self, check) {
            (Answer::Guaranteed, _) => "must precede: guaranteed by the rules",
            (Answer::Forbidden, Check::Precedes { .. }) => "the other op must precede: the rules forbid this order",
            (Answer::Forbidden, _) => "one must precede the other: the rules forbid an overlap",
            (Answer::Open, Check::Precedes { .. }) => "may overlap or not: the rules do not make this order, the model cannot decide it for this program; the GPU must",
            (Answer::Open, _) => "may overlap: allowed but never promised, the model cannot decide it for this program; the GPU must",
            (Answer::NotAsked, _) => "not a happens-before question: the model does not answer it",
            (Answer::TooLarge, _) => "the program has too many ops for the model to answer",
        }
    }
}

/// The model's view of one claim.
#[derive(Debug, Clone)]
pub struct Prediction {
    pub claim: Claim,
    /// The hardware queues the claim runs under (`CUDA_DEVICE_MAX_CONNECTIONS`, 8 by default).
    pub queues: usize,
    /// Per check and observation: whether it is an observation, the answer of the documented
    /// rules, and the answer with the hardware queues.
    pub checks: Vec<(Check, bool, Answer, Answer)>,
}

/// The model's answers for every check and observation of `claim`.
pub fn predict(claim: &Claim) -> Prediction {
    let connections = claim
        .env
        .iter()
        .find(|v| v.name == "CUDA_DEVICE_MAX_CONNECTIONS")
        .and_then(|v| v.value.as_deref());
    // A claim file's value is checked when it is parsed; a builder's may be anything: then the
    // queued answers are the documented ones (0 queues), and nothing is guessed.
    let refinement = Refinement::for_connections(connections).unwrap_or(Refinement::Documented);
    let queues = match refinement {
        Refinement::Queues(n) => n,
        Refinement::Documented => 0,
    };
    let all = claim.checks.iter().map(|c| (c, false));
    let observed = claim.observations.iter().map(|c| (c, true));
    let checks = if claim.program.ops.len() > MAX_MODEL_OPS {
        let too_large = Answer::TooLarge;
        all.chain(observed)
            .map(|(c, obs)| (*c, obs, too_large, too_large))
            .collect()
    } else {
        let documented = HappensBefore::of(&claim.program);
        let queued = HappensBefore::with(&claim.program, refinement);
        all.chain(observed)
            .map(|(c, obs)| (*c, obs, Answer::of(&documented, c), Answer::of(&queued, c)))
            .collect()
    };
    Prediction {
        claim: claim.clone(),
        queues,
        checks,
    }
}

impl Prediction {
    /// The verdict the documented rules imply: `Some` when every check is guaranteed (Holds) or
    /// one is forbidden (Violated); `None` when some check is left to the GPU.
    pub fn documented_verdict(&self) -> Option<Expect> {
        verdict(self.checks.iter().filter(|c| !c.1).map(|c| c.2))
    }

    /// The verdict with the hardware queues of the claim's environment.
    pub fn queued_verdict(&self) -> Option<Expect> {
        verdict(self.checks.iter().filter(|c| !c.1).map(|c| c.3))
    }

    /// Checks (not observations) the model cannot decide from this program.
    pub fn undecided(&self) -> usize {
        self.checks
            .iter()
            .filter(|c| !c.1 && !matches!(c.3, Answer::Guaranteed | Answer::Forbidden))
            .count()
    }
}

fn verdict(answers: impl Iterator<Item = Answer>) -> Option<Expect> {
    let answers: Vec<Answer> = answers.collect();
    if answers.contains(&Answer::Forbidden) {
        Some(Expect::Violated)
    } else if !answers.is_empty() && answers.iter().all(|a| *a == Answer::Guaranteed) {
        Some(Expect::Holds)
    } else {
        None
    }
}

fn verdict_text(v: Option<Expect>) -> String {
    v.map_or("undecided".to_string(), |v| v.to_string())
}

impl fmt::Display for Prediction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.claim;
        // Words from a claim file, each kept to its line.
        let line = |t: &str| crate::border::shown::one_line(t).into_owned();
        writeln!(f, "claim  {} — {}", line(&c.id), line(&c.statement))?;
        writeln!(f, "source {}", line(&c.source.to_string()))?;
        if !c.env.is_empty() {
            // What the child process that runs it is given: shown before anything runs.
            let env: Vec<String> = c.env.iter().map(ToString::to_string).collect();
            writeln!(f, "env    {} (in a child process)", env.join(", "))?;
        }
        let (doc, queued) = (self.documented_verdict(), self.queued_verdict());
        write!(
            f,
            "expect {}; model: {} by the documented rules",
            c.expect,
            verdict_text(doc)
        )?;
        writeln!(
            f,
            ", {} with {} hardware queue(s)",
            verdict_text(queued),
            self.queues
        )?;
        for (check, observe, documented, with_queues) in &self.checks {
            let word = if *observe { "observe" } else { "check" };
            let text = format!("{word} {}", super::print::check_text(check, &c.program));
            writeln!(f, "  {text:<30} {}", documented.describe(check))?;
            if with_queues != documented {
                let queues = format!("with {} queue(s):", self.queues);
                writeln!(f, "  {queues:>30} {}", with_queues.describe(check))?;
            }
        }
        let open = self.undecided();
        match queued {
            Some(v) if v != c.expect => writeln!(
                f,
                "  ✗ the claim expects {} but the model says {v}",
                c.expect
            ),
            Some(_) => writeln!(f, "  ✓ the model agrees with the expectation"),
            None => writeln!(
                f,
                "  ? {open} check(s) the model cannot decide from this program: the GPU decides"
            ),
        }
    }
}
