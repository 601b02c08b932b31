//! The second look: claims that a neighbour left undecided, with no counterexample, run again
//! once every other claim has run, when a neighbour that comes and goes (another catalogue run
//! beside ours, with its long claims and its pauses) may have left the GPU. Their new trials are
//! appended to the first ones and the whole is judged again, with what NVML saw around both looks.
//!
//! Beside a neighbour that never lets go (a loop of matrix products), a second look is mostly
//! lost time; so claims with trials counted go first, and those with none begin with one trial
//! and stop after [`SCOUT_MISSES`] of them in a row found the GPU still shared.

use super::{collect, Lab};
use crate::border::error::Error;
use crate::gpu::turn;
use crate::judge::claim::Claim;
use crate::judge::verdict::Verdict;
use crate::measured::sharing::{Carry, Sharing};
use crate::record::{ClaimRecord, Outcome};
use std::time::Instant;

impl Lab {
    /// Runs the second looks of `later` (claim index and first record, as
    /// [`wants_second_look`] chose them) and hands every record, looked at again or not, to
    /// `finish`. `seen` is NVML's last look, `carry` the neighbours' share carried through the
    /// run.
    pub(super) fn second_looks(
        &self,
        claims: &[Claim],
        mut later: Vec<(usize, ClaimRecord)>,
        (mut seen, mut since): (Option<Sharing>, u64),
        carry: &mut Carry,
        finish: &mut dyn FnMut(usize, ClaimRecord),
    ) -> Result<(), Error> {
        // A GPU that `--exclusive` finds still shared stops the second looks; the claims keep
        // their first.
        let mut stopped = None;
        // Claims with trials counted first; those without stop once a neighbour disturbed the
        // first trial of [`SCOUT_MISSES`] of them in a row, since it has not left the GPU.
        let counted = |r: &ClaimRecord| {
            r.judgement()
                .map_or(0, |j| j.counts.positive + j.counts.negative)
        };
        later.sort_by_key(|(_, r)| counted(r) == 0);
        let mut misses = 0;
        // Each round looks at what the round before left; a claim goes round again only if the
        // look it just had counted trials and it still lacks some ([`wants_another_look`]).
        let mut pending = later;
        for round in 0..=MORE_LOOKS {
            let mut again = Vec::new();
            for (i, record) in pending {
                let scouting = counted(&record) == 0;
                if scouting && misses >= SCOUT_MISSES {
                    finish(i, record);
                    continue;
                }
                let before = counted(&record);
                let record = match stopped {
                    Some(_) => record,
                    None => {
                        let _turn = self.take_turn(&mut seen, since);
                        match self.wait_alone(seen.take()) {
                            Ok(now) => {
                                let (record, after) =
                                    self.look_again(&claims[i], record, now, carry);
                                seen = after;
                                since = turn::granted();
                                if scouting {
                                    misses = if counted(&record) == 0 { misses + 1 } else { 0 };
                                }
                                record
                            }
                            Err(e) => {
                                stopped = Some(e);
                                record
                            }
                        }
                    }
                };
                match round < MORE_LOOKS && wants_another_look(before, &record) {
                    true => again.push((i, record)),
                    false => finish(i, record),
                }
            }
            pending = again;
        }
        if let Some(e) = stopped {
            return Err(e);
        }
        Ok(())
    }

    /// The second look at a claim ([`wants_second_look`]): more trials appended to its first
    /// ones and the whole judged again, with what NVML saw around both looks. Returns the record
    /// and the look after.
    fn look_again(
        &self,
        claim: &Claim,
        mut record: ClaimRecord,
        seen: Option<Sharing>,
        carry: &mut Carry,
    ) -> (ClaimRecord, Option<Sharing>) {
        let Outcome::Ran { trials, .. } = &mut record.outcome else {
            return (record, seen);
        };
        // Under the caller's turn, like the first look.
        let more = self
            .gpu()
            .and_then(|gpu| collect::collect_more(gpu, &claim.program, &claim.checks, trials));
        let (mut sharing, after) = self.around(seen, carry);
        if let Some(s) = &mut sharing {
            carry.apply(s);
        }
        let judging = Instant::now();
        let again = match (more, record.outcome) {
            (Ok(()), Outcome::Ran { mut trials, .. }) => {
                trials.sharing = merged(trials.sharing.take(), sharing);
                ClaimRecord::judged(claim.clone(), trials)
            }
            (Err(e), _) => ClaimRecord::failed(claim.clone(), e),
            (Ok(()), Outcome::Failed { error }) => ClaimRecord::failed(claim.clone(), error),
        };
        self.spend(|s| &mut s.judging, judging);
        (again, after)
    }
}

/// How many claims without a trial counted have their second look disturbed from its first
/// trial on, in a row, before the others are left as they are. On an H100 beside a loop of bf16
/// matrix products, none of them came back decided (26 claims a run, about 1.2 s added to
/// 6.4 s); beside another catalogue run, second looks at such claims raised the claims decided
/// from 64.0 to 66.0 on average (5 runs each).
const SCOUT_MISSES: usize = 3;

/// How many more looks a claim may get after its second, each after every other claim's look
/// of the round before. Beside another catalogue run on an H100, the claims a second look left
/// undecided were mostly long scenario claims a few trials short ("Always 4/4" with 19 trials
/// disturbed), whose neighbour had come back during their look: a later look meets it elsewhere
/// in its loop.
const MORE_LOOKS: usize = 2;

/// Whether a claim looked at again goes round once more: still undecided, with no
/// counterexample, and its last look counted trials (it had `before` counted before it). A look
/// that counted nothing met a neighbour that had not left the GPU, and another is likely lost
/// time.
fn wants_another_look(before: usize, record: &ClaimRecord) -> bool {
    wants_second_look(record)
        && record
            .judgement()
            .is_some_and(|j| j.counts.positive + j.counts.negative > before)
}

/// Whether a claim gets a second look at the end of the run ([`collect::collect_more`]): it
/// ended undecided, with no counterexample and some trials disturbed. A neighbour that comes and
/// goes (another catalogue run beside ours: its long claims and its pauses) may have left the GPU
/// by then. A claim with no trial counted begins its second look with one trial and stops there if
/// that one is disturbed too, so a neighbour that never lets go (a loop of matrix products) costs
/// one trial per such claim.
pub(super) fn wants_second_look(record: &ClaimRecord) -> bool {
    record.judgement().is_some_and(|j| {
        j.verdict == Verdict::Inconclusive && j.counts.negative == 0 && j.counts.disturbed > 0
    })
}

/// What NVML saw around both looks at a claim: every neighbour seen before either and after
/// either.
fn merged(first: Option<Sharing>, second: Option<Sharing>) -> Option<Sharing> {
    match (first, second) {
        (Some(mut a), Some(b)) => {
            a.before.extend(b.before);
            a.after.extend(b.after);
            a.limit = a.limit.or(b.limit);
            Some(a)
        }
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::{merged, wants_another_look, wants_second_look};
    use crate::measured::sharing::Sharing;
    use crate::record::RunRecord;
    use std::path::Path;

    fn run(name: &str) -> RunRecord {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        RunRecord::load(&dir.join(name)).expect("fixture")
    }

    #[test]
    fn only_claims_left_undecided_by_disturbance_without_a_counterexample_get_a_second_look() {
        // Beside a catalogue loop on an H100: some claims undecided with positive trials in hand,
        // some with none counted.
        let loop_run = run("contended-loop-h100.json.gz").rejudged();
        let looked: Vec<_> = (loop_run.claims.iter())
            .filter(|c| wants_second_look(c))
            .map(|c| c.judgement().unwrap())
            .collect();
        assert!(looked.iter().any(|j| j.counts.positive > 0));
        assert!(looked.iter().any(|j| j.counts.positive == 0));
        for j in &looked {
            assert_eq!(j.verdict, crate::judge::verdict::Verdict::Inconclusive);
            assert!(j.counts.negative == 0 && j.counts.disturbed > 0);
        }
        // Undecided for a reason of its own (no trial disturbed), or with a counterexample: none.
        for c in loop_run.claims.iter().filter(|c| !wants_second_look(c)) {
            let j = c.judgement().unwrap();
            assert!(
                j.verdict != crate::judge::verdict::Verdict::Inconclusive
                    || j.counts.negative > 0
                    || j.counts.disturbed == 0
            );
        }
        // Alone, every claim decided: none.
        let idle = run("catalogue-h100.json.gz").rejudged();
        assert!(!idle.claims.iter().any(wants_second_look));
    }

    #[test]
    fn only_a_look_that_counted_trials_earns_another() {
        // `host.stream_add_callback` beside a catalogue loop: "Always 3/3" with 11 trials
        // disturbed, after its looks.
        let loop_run = run("contended-loop-overlaps-h100.json.gz").rejudged();
        let near = (loop_run.claims.iter())
            .find(|c| c.claim.id == "host.stream_add_callback")
            .expect("the claim");
        let j = near.judgement().unwrap();
        assert_eq!(
            (j.counts.positive, j.verdict),
            (3, crate::judge::verdict::Verdict::Inconclusive)
        );
        assert!(wants_another_look(2, near), "its look counted a trial");
        assert!(!wants_another_look(3, near), "its look counted none");
        // Decided claims, and those with a counterexample, go no further.
        for c in loop_run.claims.iter().filter(|c| !wants_second_look(c)) {
            assert!(!wants_another_look(0, c), "{}", c.claim.id);
        }
    }

    #[test]
    fn both_looks_neighbours_are_kept() {
        let a = Sharing {
            before: Vec::new(),
            after: Vec::new(),
            limit: Some("no NVML".into()),
        };
        let both = merged(Some(a.clone()), Some(Sharing::default())).unwrap();
        assert_eq!(both.limit.as_deref(), Some("no NVML"));
        assert_eq!(merged(None, Some(a.clone())), Some(a.clone()));
        assert_eq!(merged(Some(a.clone()), None), Some(a));
        assert_eq!(merged(None, None), None);
    }
}
