//! The first child's claims, run while this process opens its GPU.
//!
//! A child process opens its own GPU (a context, CUPTI, the kernels): 75–100 ms on an H200, most
//! of what a catalogue's child claims cost, and this process opens its own the same way at the
//! start of a run. The two can open at once, but they cannot *measure* at once, and neither may
//! sit with an open context while the other measures more than it must: an idle context of
//! another process disturbed the host-function and priority claims' trials on an H200 (every
//! one of three catalogue runs retried some, docs/measurements.md).
//!
//! So, before a run opens the GPU ([`Lab::start_ahead`]), the first environment's child is
//! started: it opens its GPU and waits (`child.rs`, "Started ahead"). This process opens its
//! own, and between its kernels and its calibration (`Gpu::process_with`'s gate) tells the child
//! to go and waits for its claims, with NVML's looks before and after as for any child; then it
//! calibrates and runs its own claims. Each process measures while the other holds a context
//! doing nothing, as when the child ran last, and only the openings overlap. The claims' records
//! are made when the run reaches them ([`Lab::take_ahead`]), ahead of their place.
//!
//! Nothing is started where it could not be used: with `--exclusive` (which waits for the GPU
//! before every claim), once the GPU is open, or where the GPU takes one process's contexts at a
//! time (compute mode `EXCLUSIVE_PROCESS`, which docs/gpus.md suggests): the child's context
//! could take the GPU from the parent, and the whole run would fail where only the child's
//! claims fail at their turn. A child started and never told to go (the GPU
//! open already, or failing to open) is killed.

use super::child::{self, Job};
use super::{jobs_of, Answering, Lab};
use crate::border::error::Error;
use crate::gpu::{Gpu, Settle, Watch};
use crate::judge::claim::{Claim, EnvVar};
use crate::measured::sharing::Sharing;
use crate::program::Place;
use crate::record::Trials;
use std::collections::BTreeMap;

/// A child's results, one per job.
type Runs = Vec<Result<Trials, Error>>;

/// The first environment's child: started, then run.
pub(super) enum Ahead {
    /// Opening its GPU, or waiting for the go.
    Started {
        group: Group,
        jobs: Vec<Job>,
        child: Result<child::Started, Error>,
        /// The pool blocks this process's own claims ask for first (made while the child exits).
        blocks: Vec<(Place, usize)>,
    },
    /// Its claims ran, with what NVML saw around them.
    Ran {
        group: Group,
        results: Runs,
        sharing: Option<Sharing>,
    },
}

/// Which claims a child ran: their environment and ids, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Group {
    env: Vec<EnvVar>,
    ids: Vec<String>,
}

impl Group {
    fn of(claims: &[Claim], env: &[EnvVar], members: &[usize]) -> Group {
        Group {
            env: env.to_vec(),
            ids: members.iter().map(|&i| claims[i].id.clone()).collect(),
        }
    }
}

/// The claims that need a child, grouped by environment: one child per group.
pub(super) fn groups(claims: &[Claim]) -> BTreeMap<Vec<EnvVar>, Vec<usize>> {
    let mut groups: BTreeMap<Vec<EnvVar>, Vec<usize>> = BTreeMap::new();
    for (i, claim) in claims.iter().enumerate() {
        if claim.needs_child() {
            groups.entry(claim.env.clone()).or_default().push(i);
        }
    }
    groups
}

impl Lab {
    /// Starts the child of the first environment `claims` need, to run while this process
    /// opens its GPU ([`Lab::gpu`]); does nothing once the GPU is open, with `--exclusive`, or
    /// when no claim needs a child. A caller that runs `claims` next (`run`, `check`) calls it
    /// before opening the GPU.
    pub fn start_ahead(&self, claims: &[Claim]) {
        if Gpu::opened().is_some() || self.exclusive.is_some() || !crate::gpu::contexts_shared() {
            return;
        }
        let Some((env, members)) = groups(claims).into_iter().next() else {
            return;
        };
        let jobs = jobs_of(claims, &members);
        let child = self.start_child(&env, &jobs);
        *self.ahead.lock().unwrap_or_else(|e| e.into_inner()) = Some(Ahead::Started {
            group: Group::of(claims, &env, &members),
            jobs,
            child,
            blocks: first_blocks(claims),
        });
    }

    /// The gate of this process's GPU opening: runs the child started ahead, if any, between
    /// looks through `watch`, and leaves it exiting: the opening makes pool blocks meanwhile and
    /// then waits for it ([`Settle`]), and its results are kept when it has exited.
    pub(super) fn run_ahead(&self, watch: &mut Watch) -> Option<Box<dyn Settle + '_>> {
        let started = self.ahead.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(Ahead::Started {
            group,
            jobs,
            child,
            blocks,
        }) = started
        else {
            return None;
        };
        // NVML's first look takes what its opening thread made (`Watch::opening`).
        let looking = std::time::Instant::now();
        let before = watch.look();
        self.spend(|s| &mut s.looks, looking);
        let answering = child.map(|c| self.answer_child(c, &jobs));
        let looking = std::time::Instant::now();
        let after = watch.look();
        self.spend(|s| &mut s.looks, looking);
        let sharing = Some(Sharing {
            before: before.neighbours,
            after: after.neighbours,
            limit: after.limit,
        });
        match answering {
            Ok(answering) => Some(Box::new(Exiting {
                lab: self,
                group,
                jobs: jobs.len(),
                answering,
                sharing,
                blocks,
            })),
            Err(e) => {
                let results = jobs.iter().map(|_| Err(e.clone())).collect();
                self.ran_ahead(group, results, sharing);
                None
            }
        }
    }

    /// Keeps what the child run ahead gave, for [`Lab::take_ahead`].
    fn ran_ahead(&self, group: Group, results: Runs, sharing: Option<Sharing>) {
        *self.ahead.lock().unwrap_or_else(|e| e.into_inner()) = Some(Ahead::Ran {
            group,
            results,
            sharing,
        });
    }

    /// After opening the GPU: a child started ahead that was not run (the GPU was open already,
    /// or failed to open) is killed now, before any claim runs beside its context.
    pub(super) fn drop_unrun(&self) {
        let mut ahead = self.ahead.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*ahead, Some(Ahead::Started { .. })) {
            *ahead = None;
        }
    }

    /// The results and sharing of the child run ahead, if it ran exactly the claims of `env`
    /// at `members`; taken, so they are used once.
    pub(super) fn take_ahead(
        &self,
        claims: &[Claim],
        env: &[EnvVar],
        members: &[usize],
    ) -> Option<(Runs, Option<Sharing>)> {
        let mut ahead = self.ahead.lock().unwrap_or_else(|e| e.into_inner());
        match ahead.take() {
            Some(Ahead::Ran {
                group,
                results,
                sharing,
            }) if group == Group::of(claims, env, members) => Some((results, sharing)),
            other => {
                *ahead = other;
                None
            }
        }
    }
}

/// The child run ahead, answered and exiting.
struct Exiting<'a> {
    lab: &'a Lab,
    group: Group,
    jobs: usize,
    answering: Answering,
    sharing: Option<Sharing>,
    blocks: Vec<(Place, usize)>,
}

impl Settle for Exiting<'_> {
    fn blocks(&self) -> Vec<(Place, usize)> {
        self.blocks.clone()
    }

    fn ended(&mut self) -> bool {
        self.answering.answered.exited()
    }

    fn finish(self: Box<Self>) {
        let Exiting {
            lab,
            group,
            jobs,
            answering,
            sharing,
            ..
        } = *self;
        let results = match lab.settle_child(answering) {
            Ok(results) => results,
            Err(e) => (0..jobs).map(|_| Err(e.clone())).collect(),
        };
        lab.ran_ahead(group, results, sharing);
    }
}

/// The pinned and pageable pool blocks (place and bytes) that the claims run in this process
/// ask for, in the order they first need them: of each place and size, as many as the claim
/// that needs most of them at once (its buffers, and the pinned staging block of each device
/// buffer it reads back). Pinning and faulting in host memory is what a claim's setup spends
/// most on (`pinned.rs`, `pageable.rs`); device blocks are quick to make and left out.
fn first_blocks(claims: &[Claim]) -> Vec<(Place, usize)> {
    let mut most: Vec<((Place, usize), usize)> = Vec::new();
    for claim in claims.iter().filter(|c| !c.needs_child()) {
        let mut wants: Vec<((Place, usize), usize)> = Vec::new();
        for b in claim.program.buffers.iter().filter(|b| b.device == 0) {
            let (own, staging) = crate::gpu::pool_keys(b);
            let host = Some(own).filter(|(place, _)| *place != Place::Device);
            for key in host.into_iter().chain(staging) {
                match wants.iter_mut().find(|(k, _)| *k == key) {
                    Some(w) => w.1 += 1,
                    None => wants.push((key, 1)),
                }
            }
        }
        for (key, n) in wants {
            match most.iter_mut().find(|(k, _)| *k == key) {
                Some(m) => m.1 = m.1.max(n),
                None => most.push((key, n)),
            }
        }
    }
    (most.into_iter())
        .flat_map(|(key, n)| std::iter::repeat(key).take(n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::claim::Source;
    use crate::judge::verdict::Expect;

    fn claim(id: &str, connections: Option<&str>) -> Claim {
        let mut b = Claim::builder(id, "a claim", Source::new("test", "ahead"));
        b.env("AHEAD_TEST_UNSET_VARIABLE", connections);
        b.build(Expect::Holds)
    }

    /// The blocks made ahead are the host blocks the claims run here take from the pool, in the
    /// order of first need, as many of each as one claim takes at once; none for a claim run in
    /// a child, none for device memory.
    #[test]
    fn the_blocks_made_ahead_are_what_the_claims_here_take_first() {
        use crate::program::{Place, StreamKind};
        let claim_of = |id: &str, buffers: &[(Place, u64, bool)], child: Option<&str>| {
            let mut c = Claim::builder(id, "a claim", Source::new("test", "ahead"));
            let s = c.stream(StreamKind::NonBlocking);
            let mut last = None;
            for (i, &(place, bytes, back)) in buffers.iter().enumerate() {
                let b = c.buffer(format!("b{i}"), place, bytes, 1);
                if back {
                    c.read_back(b);
                }
                if let Some(src) = last {
                    c.copy(s, format!("C{i}"), src, b);
                }
                last = Some(b);
            }
            c.env("AHEAD_TEST_UNSET_VARIABLE", child);
            c.build(Expect::Holds)
        };
        let claims = [
            claim_of(
                "a",
                &[(Place::Pinned, 64, false), (Place::Device, 64, true)],
                None,
            ),
            claim_of(
                "b",
                &[
                    (Place::Pinned, 64, false),
                    (Place::Pinned, 64, false),
                    (Place::Pageable, 32, false),
                ],
                None,
            ),
            claim_of("c", &[(Place::Pageable, 128, false)], Some("1")),
        ];
        assert_eq!(
            first_blocks(&claims),
            [
                (Place::Pinned, 64),
                (Place::Pinned, 64),
                (Place::Pageable, 32)
            ],
            "a's pinned buffer and staging block, b's second pinned buffer and pageable one; \
             c runs in a child"
        );
    }

    /// Results run ahead go to exactly the claims they were run for, once: another environment
    /// or another list of claims leaves them, a match takes them.
    #[test]
    fn results_run_ahead_go_only_to_their_own_claims() {
        let claims = [
            claim("a", Some("1")),
            claim("b", Some("2")),
            claim("c", Some("1")),
        ];
        let groups = groups(&claims);
        let one = vec![EnvVar {
            name: "AHEAD_TEST_UNSET_VARIABLE".into(),
            value: Some("1".into()),
        }];
        assert_eq!(groups.get(&one), Some(&vec![0, 2]));
        let lab = Lab::new();
        *lab.ahead.lock().unwrap() = Some(Ahead::Ran {
            group: Group::of(&claims, &one, &[0, 2]),
            results: vec![Err(Error::NoDriver), Err(Error::NoDriver)],
            sharing: None,
        });
        let two = groups.keys().find(|e| **e != one).unwrap();
        assert!(lab.take_ahead(&claims, two, &[1]).is_none());
        assert!(
            lab.take_ahead(&claims, &one, &[0]).is_none(),
            "not all of them"
        );
        let (results, _) = lab.take_ahead(&claims, &one, &[0, 2]).unwrap();
        assert_eq!(results.len(), 2);
        assert!(
            lab.take_ahead(&claims, &one, &[0, 2]).is_none(),
            "taken once"
        );
    }

    /// A run makes the records of the claims run ahead from what they gave, and starts no child
    /// for them: each record here carries the error stored for it, where a child started now
    /// would have failed another way (no GPU, or no binary).
    #[test]
    fn a_run_takes_the_claims_run_ahead_from_their_results() {
        let claims = [claim("a", Some("1")), claim("c", Some("1"))];
        let env = groups(&claims).into_keys().next().unwrap();
        let stored = |id: &str| Error::Child {
            env: "ahead".into(),
            detail: format!("stored for {id}"),
        };
        let lab = Lab::new();
        *lab.ahead.lock().unwrap() = Some(Ahead::Ran {
            group: Group::of(&claims, &env, &[0, 1]),
            results: vec![Err(stored("a")), Err(stored("c"))],
            sharing: None,
        });
        let mut records = Vec::new();
        lab.try_check_all(&claims, |_| {}, &mut records).unwrap();
        let errors: Vec<String> = records
            .iter()
            .map(|r| match &r.outcome {
                crate::record::Outcome::Failed { error } => error.to_string(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(errors, [stored("a").to_string(), stored("c").to_string()]);
        assert!(lab.ahead.lock().unwrap().is_none(), "used once");
    }
}
