//! The claims on one trace judged ahead of their turn, on several threads, each outcome kept
//! only where judging it in turn would have given the same.
//!
//! A run judges its claims in order, each charged to what the run judges in all
//! ([`RunBudget`]): a claim judged later finds less left. Claims are independent otherwise, and
//! a claim that stays within what is left is judged the same whatever is left (its trials, its
//! pairs and its outcome do not depend on it). So the next claims on a trace (two at a time in `check`) are
//! judged at once, each against a copy of the run's budget as it stands (a wave at a time: a
//! file of thousands of claims each near the run's budget judges one wave beyond it, not every
//! claim), and [`Ahead::settle`]
//! takes a claim's judgement in its turn only where it fits what is left then, charging what
//! it used; anything else (an error, a claim past a bound, one that no longer fits) is judged
//! again in its turn, as before. Verdicts, messages and the run's budget are those of the
//! claims judged one after another; on the docs' pipeline benchmark the four claims' judging
//! takes the time of the longest.

use super::judgement::{judge_in_run, Reasons, TraceJudgement};
use super::run_budget::RunBudget;
use super::trace_claim::TraceClaim;
use crate::trace::Trace;

/// A claim judged ahead of its turn: its judgement and what it took of the run's budget.
pub struct Ahead {
    judged: Option<(TraceJudgement, usize)>,
    /// How long judging it took, on its thread.
    pub took: std::time::Duration,
}

impl Ahead {
    /// The judgement the claim gets in its turn, charged to `run`; `None` where it must be
    /// judged in turn (`judge_in_run`) for its outcome to be the run's.
    pub fn settle(self, run: &mut RunBudget) -> Option<TraceJudgement> {
        let (judgement, used) = self.judged?;
        // What is left is looked at before it is taken: a take that fails marks the run spent,
        // and the claim, judged in turn, must find it as it is.
        match !run.spent() && run.left() >= used && run.take(used) {
            true => Some(judgement),
            false => None,
        }
    }
}

/// Judges `claims` on `trace` on up to `threads` threads, each against a copy of `run`, keeping
/// `reasons`; one [`Ahead`] per claim, in order.
pub fn judge_ahead(
    claims: &[&TraceClaim],
    trace: &Trace,
    run: &RunBudget,
    threads: usize,
    reasons: Reasons,
) -> Vec<Ahead> {
    // The first claim is next in turn: it is judged against the budget as it stands. Each other
    // takes at most its share: a claim judged ahead that needs more is judged again in its turn
    // (where, after the claims before it, it may no longer fit at all), so that a file of
    // thousands of claims each near the run's budget spends half of it ahead, not all of it.
    let shares = claims.len();
    let one = |k: usize, claim: &TraceClaim| {
        let started = std::time::Instant::now();
        let mut mine = match k {
            0 => run.clone(),
            _ => run.share(shares),
        };
        let before = mine.left();
        let judged = judge_in_run(claim, trace, &mut mine, reasons).ok();
        Ahead {
            judged: judged.map(|j| (j, before - mine.left())),
            took: started.elapsed(),
        }
    };
    let threads = threads.clamp(1, claims.len().max(1));
    // Past the run's budget every claim is turned away at once: no thread for that.
    if threads == 1 || run.spent() {
        return claims.iter().enumerate().map(|(k, c)| one(k, c)).collect();
    }
    // Claim i on thread i mod `threads`: neighbours in a file are often alike in cost.
    let mut out: Vec<Option<Ahead>> = (0..claims.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let one = &one;
                scope.spawn(move || {
                    (claims.iter().enumerate().skip(t).step_by(threads))
                        .map(|(i, c)| (i, one(i, c)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            match h.join() {
                Ok(judged) => judged.into_iter().for_each(|(i, a)| out[i] = Some(a)),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
    (out.into_iter())
        .map(|a| {
            a.unwrap_or(Ahead {
                judged: None,
                took: std::time::Duration::ZERO,
            })
        })
        .collect()
}
