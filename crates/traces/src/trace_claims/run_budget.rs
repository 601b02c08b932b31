//! What one `check` run judges in all, over every claim of its claim files.
//!
//! Each claim on traces has budgets of its own ([`MAX_TRIAL_OPS`] ops in its trials,
//! [`MAX_PAIRS`] pairs measured), but a claim file of 1 MiB holds thousands of claims, each of
//! which may come near them: the work of one run would be bounded only by the file's size times
//! a million. The run's claims draw on one more budget, [`MAX_RUN_WORK`]: the ops their trials
//! hold and the pairs their checks measure, summed over the claims in the order they come, each
//! claim charged before it is judged (the same counts the claim's own budgets are charged, so a
//! trial of the very ops of an earlier one costs no pairs again). A claim past it is not judged:
//! the run reports it Inconclusive, with the limit, and goes on to report the others.

use super::pairs::MAX_PAIRS;
use crate::trace::MAX_TRIAL_OPS;

/// The most ops in trials plus pairs measured one run judges in all: what one claim may take at
/// most (its trial ops and its pairs at their bounds), so that every claim that may be judged at
/// all is judged in a run of its own. A pair measured or an op in a trial each cost about 0.75 µs
/// in the debug test build on a 2-core machine (a claim of a million pairs 0.75 s of CPU, one of
/// 990 steps over 1,000 ops 0.77 s), so a run judges its claims in about a second.
pub const MAX_RUN_WORK: usize = MAX_TRIAL_OPS + MAX_PAIRS;

/// The variable that sets what one run judges in all, in place of [`MAX_RUN_WORK`]: a count of
/// ops in trials and pairs measured. Claims near their own budgets on a large trace need it (the
/// four claims of `examples/pytorch/pipeline.litmus` on the 202 MB trace of the docs measure
/// about 2.4 million in all), as do files of many claims judged in one run.
pub use crate::border::limits::RUN_WORK_ENV;

/// What one run judges in all to begin with, and whether the variable fixed it: the count
/// [`RUN_WORK_ENV`] gives, else [`MAX_RUN_WORK`] (grown by the traces read).
fn run_work() -> (usize, bool) {
    match crate::border::limits::positive_env(RUN_WORK_ENV).and_then(|n| usize::try_from(n).ok()) {
        Some(n) => (n, true),
        None => (MAX_RUN_WORK, false),
    }
}

/// Ops in trials and pairs a run may measure per GPU op of the traces it reads: twice what the
/// docs' pipeline benchmark asks of its four claims (2.4 million over 150,240 ops, 16 per op).
pub const WORK_PER_OP: usize = 32;

/// What is left of a run's [`MAX_RUN_WORK`], and whether a claim has gone past it.
#[derive(Debug, Clone)]
pub struct RunBudget {
    total: usize,
    left: usize,
    /// Whether the variable set the bound (it then stays as set).
    fixed: bool,
    /// GPU ops of the traces read so far ([`RunBudget::grow_for`]).
    read: usize,
    /// A claim needed more than was left: the claims after it are not judged either (each would
    /// cut its trials and count its pairs only to be turned away, thousands of times over).
    spent: bool,
}

impl Default for RunBudget {
    /// What the run judges in all, [`run_work`].
    fn default() -> RunBudget {
        let (total, fixed) = run_work();
        RunBudget {
            total,
            left: total,
            fixed,
            read: 0,
            spent: false,
        }
    }
}

impl RunBudget {
    /// No bound but each claim's own: for a claim judged alone (tests, the examples).
    pub fn unbounded() -> RunBudget {
        RunBudget {
            total: usize::MAX,
            left: usize::MAX,
            fixed: true,
            read: 0,
            spent: false,
        }
    }

    /// Grows what the run judges for a trace of `ops` GPU ops read in it, where no variable set
    /// the bound: [`WORK_PER_OP`] per op of the traces read, at least [`MAX_RUN_WORK`]. A bound
    /// per run refused real work: the four claims of the docs' pipeline benchmark (a 202 MB
    /// trace of 150,240 ops) measure about 2.4 million ops in trials and pairs, and the bound of
    /// 1.4 million judged two of them. What a larger trace asks grows with it; what a file of
    /// many claims asks of one trace is still bounded.
    pub fn grow_for(&mut self, ops: usize) {
        if self.fixed {
            return;
        }
        self.read = self.read.saturating_add(ops);
        let total = self.read.saturating_mul(WORK_PER_OP).max(self.total);
        self.left = self.left.saturating_add(total - self.total);
        self.total = total;
    }

    /// What is left: nothing once a claim has gone past it.
    pub(super) fn left(&self) -> usize {
        match self.spent {
            true => 0,
            false => self.left,
        }
    }

    /// What the run judges in all.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Whether a claim has gone past what the run judges.
    pub(super) fn spent(&self) -> bool {
        self.spent
    }

    /// Takes `n` from what is left; where less is left, takes nothing and marks the run spent.
    pub(super) fn take(&mut self, n: usize) -> bool {
        match self.left().checked_sub(n) {
            Some(rest) => {
                self.left = rest;
                true
            }
            None => {
                self.spent = true;
                false
            }
        }
    }

    /// A copy with `1/parts` of what is left: what a claim judged ahead of its turn may take
    /// ([`super::ahead`]), so that claims past the run's budget are turned away there after a
    /// share of it, not after all of it.
    pub(super) fn share(&self, parts: usize) -> RunBudget {
        RunBudget {
            left: self.left / parts.max(1),
            ..self.clone()
        }
    }

    /// Gives back `n` taken for a claim that is then not judged.
    pub(super) fn give_back(&mut self, n: usize) {
        self.left = self.left.saturating_add(n).min(self.total);
    }

    /// Marks the run spent: a claim needed more than was left, and no claim after it is judged.
    pub(super) fn end(&mut self) {
        self.spent = true;
    }

    /// Why a claim is not judged: `what` it needs, more than is left, or, where it is `None`,
    /// an earlier claim went past what the run judges.
    pub(super) fn past(&self, id: &str, what: Option<&str>) -> String {
        let used = self.total.saturating_sub(self.left);
        let why = match what {
            // Nothing judged before it: the claim alone is past the bound.
            Some(what) if used == 0 => format!("{what}, more than all"),
            Some(what) => format!("{what}, and the claims judged before it took {used} of"),
            None if used == 0 => "an earlier claim needed more than all".to_string(),
            None => format!(
                "an earlier claim needed more than was left, after the claims judged took {used} \
                 of"
            ),
        };
        format!(
            "{id}: not judged (Inconclusive): {why} the {} ops in trials and pairs measured \
             one `check` run judges in all (trace_claims::MAX_RUN_WORK; {RUN_WORK_ENV} sets it): \
             judge it in a run of its own (split the claim file, or pick claims with --filter), \
             raise the bound or narrow its selections and trials",
            self.total
        )
    }
}

/// A claim that was not judged, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unjudged {
    /// Its traces cannot be found: it names none, or names recordings that `--trace` cannot
    /// give. The message names the claim file.
    #[error("{0}")]
    NoTraces(String),
    /// Its traces could not be read, or it cannot be judged on them (a selection of nothing, a
    /// claim's own budget): an error.
    #[error(transparent)]
    Refused(crate::trace::TraceError),
    /// The run's [`MAX_RUN_WORK`] was spent before it: Inconclusive, for this run.
    #[error("{0}")]
    PastRunBudget(String),
}

impl From<crate::trace::TraceError> for Unjudged {
    fn from(e: crate::trace::TraceError) -> Unjudged {
        Unjudged::Refused(e)
    }
}
