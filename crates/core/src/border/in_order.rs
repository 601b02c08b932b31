//! Work handed round to threads and taken back in the order it was handed out.
//!
//! Reading a trace's events and re-judging a results file are a file's order of independent
//! pieces (a batch of events, a claim's timeline, a claim to judge) between two places that must
//! keep that order: the text is cut in order, and what is read is taken in order, so that every
//! number, the first error and every message stay what one thread made of them. [`InOrder`]
//! hands the pieces to its workers in turn (worker `k` gets pieces `k`, `k + n`, …), each worker
//! answering in the order it was asked, and takes the answers back in the same turn: no piece
//! numbers, no reordering buffer, and at most `per_worker` pieces a worker handed out and not
//! yet taken, so memory holds a bounded number of them whatever the file's length.
//!
//! Without workers (a machine of few cores, or threads refused), each piece is worked where it
//! is handed out: the answers are the same, in the same order.

use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};

/// The machine's cores less `busy`: what is left for workers.
pub fn spare_cores(busy: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_sub(busy)
}

/// A worker stopped before it answered (it panicked; the scope that started it passes the panic
/// on when it ends).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize,
)]
#[error("a worker thread stopped")]
pub struct WorkerGone;

/// Threads that work each piece handed out, answers taken back in the order handed out.
pub struct InOrder<'w, I, O> {
    to: Vec<SyncSender<I>>,
    from: Vec<Receiver<O>>,
    work: &'w (dyn Fn(I) -> O + Sync),
    per_worker: u64,
    sent: u64,
    taken: u64,
    /// The most weight handed out and not taken back (`u64::MAX`: none), and each piece's
    /// weight while it is out, oldest first.
    budget: u64,
    weights: std::collections::VecDeque<u64>,
    out: u64,
}

impl<'w, I: Send + 'w, O: Send + 'w> InOrder<'w, I, O> {
    /// Starts `n` workers named `name` in `scope`, each holding at most `per_worker` pieces
    /// (at least one); they end when this is dropped. A worker the system refuses is left out.
    pub fn start<'s>(
        scope: &'s std::thread::Scope<'s, '_>,
        n: usize,
        name: &str,
        per_worker: usize,
        work: &'w (dyn Fn(I) -> O + Sync),
    ) -> InOrder<'w, I, O>
    where
        'w: 's,
    {
        let per_worker = per_worker.max(1);
        let (mut to, mut from) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for _ in 0..n {
            let (pieces, mine) = sync_channel::<I>(per_worker);
            let (done, answers) = channel::<O>();
            let spawned =
                std::thread::Builder::new()
                    .name(name.into())
                    .spawn_scoped(scope, move || {
                        for piece in mine {
                            if done.send(work(piece)).is_err() {
                                break;
                            }
                        }
                    });
            if spawned.is_ok() {
                to.push(pieces);
                from.push(answers);
            }
        }
        InOrder {
            to,
            from,
            work,
            per_worker: per_worker as u64,
            sent: 0,
            taken: 0,
            budget: u64::MAX,
            weights: std::collections::VecDeque::new(),
            out: 0,
        }
    }

    /// Holds the pieces out to `budget` of weight together ([`InOrder::send_weighed`]): a
    /// piece that would pass it waits until the ones before it are taken back, and one heavier
    /// than the budget goes out alone. Claims of a results file are as different as a few KB
    /// and half a GB of stamps: counting them alone would hold several of the largest at once.
    pub fn within(mut self, budget: u64) -> InOrder<'w, I, O> {
        self.budget = budget;
        self
    }

    /// How many workers started.
    pub fn workers(&self) -> usize {
        self.to.len()
    }

    /// Pieces handed out whose answers were not taken yet.
    pub fn waiting(&self) -> u64 {
        self.sent - self.taken
    }

    /// Hands `piece` on; where every worker holds as many as it may, first takes the oldest
    /// answer (to `take`). Without workers, `piece` is worked here and its answer taken at once.
    pub fn send<E: From<WorkerGone>>(
        &mut self,
        piece: I,
        take: &mut dyn FnMut(O) -> Result<(), E>,
    ) -> Result<(), E> {
        self.send_weighed(piece, 0, take)
    }

    /// [`InOrder::send`] for a piece of `weight` against the budget ([`InOrder::within`]).
    pub fn send_weighed<E: From<WorkerGone>>(
        &mut self,
        piece: I,
        weight: u64,
        take: &mut dyn FnMut(O) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.to.is_empty() {
            return take((self.work)(piece));
        }
        let workers = self.to.len() as u64;
        if self.waiting() >= self.per_worker * workers {
            self.take_next(take)?;
        }
        while self.waiting() > 0 && self.out.saturating_add(weight) > self.budget {
            self.take_next(take)?;
        }
        let worker = (self.sent % workers) as usize;
        match self.to[worker].send(piece) {
            Ok(()) => {
                self.sent += 1;
                self.weights.push_back(weight);
                self.out = self.out.saturating_add(weight);
                Ok(())
            }
            // The worker is gone (it panicked; the scope passes that on): worked here, after
            // the pieces before it.
            Err(std::sync::mpsc::SendError(piece)) => {
                self.finish(take)?;
                take((self.work)(piece))
            }
        }
    }

    /// Takes the oldest answer, where one is waiting; `Ok(false)` where none is.
    pub fn take_next<E: From<WorkerGone>>(
        &mut self,
        take: &mut dyn FnMut(O) -> Result<(), E>,
    ) -> Result<bool, E> {
        if self.waiting() == 0 {
            return Ok(false);
        }
        let worker = (self.taken % self.to.len() as u64) as usize;
        self.taken += 1;
        self.out -= self.weights.pop_front().unwrap_or(0);
        match self.from[worker].recv() {
            Ok(answer) => take(answer).map(|()| true),
            Err(_) => Err(WorkerGone.into()),
        }
    }

    /// Takes every answer still waiting, in order.
    pub fn finish<E: From<WorkerGone>>(
        &mut self,
        take: &mut dyn FnMut(O) -> Result<(), E>,
    ) -> Result<(), E> {
        while self.take_next(take)? {}
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    enum E {
        Gone,
        Mine(u64),
    }
    impl From<WorkerGone> for E {
        fn from(_: WorkerGone) -> E {
            E::Gone
        }
    }

    /// Squares of 0..n worked by `workers` threads, as taken.
    fn squares(workers: usize, per_worker: usize, n: u64) -> Vec<u64> {
        let work = |x: u64| {
            // Later pieces answer sooner, so that an order kept by luck would show.
            std::thread::sleep(std::time::Duration::from_micros((n - x) % 7 * 50));
            x * x
        };
        let mut got = Vec::new();
        std::thread::scope(|s| {
            let mut pool = InOrder::start(s, workers, "test-square", per_worker, &work);
            let mut take = |o| -> Result<(), E> {
                got.push(o);
                Ok(())
            };
            for x in 0..n {
                pool.send(x, &mut take).unwrap();
                assert!(pool.waiting() <= (per_worker.max(1) * workers) as u64);
            }
            pool.finish(&mut take).unwrap();
        });
        got
    }

    #[test]
    fn answers_come_back_in_the_order_handed_out_with_any_number_of_workers() {
        let want: Vec<u64> = (0..200).map(|x| x * x).collect();
        for workers in [0, 1, 3, 8] {
            for per_worker in [0, 1, 2, 5] {
                assert_eq!(
                    squares(workers, per_worker, 200),
                    want,
                    "{workers} {per_worker}"
                );
            }
        }
    }

    #[test]
    fn pieces_out_stay_within_the_budget_and_a_heavy_one_goes_alone() {
        let work = |w: u64| w;
        let weights = [3, 3, 3, 10, 1, 1, 4, 4, 0, 0, 5];
        std::thread::scope(|s| {
            let mut pool = InOrder::start(s, 4, "test-budget", 4, &work).within(6);
            let mut got = Vec::new();
            let mut take = |o: u64| -> Result<(), E> {
                got.push(o);
                Ok(())
            };
            for w in weights {
                pool.send_weighed(w, w, &mut take).unwrap();
                assert!(pool.out <= 6 || pool.waiting() == 1, "{} out", pool.out);
            }
            pool.finish(&mut take).unwrap();
            assert_eq!(pool.out, 0);
            assert_eq!(got, weights);
        });
    }

    #[test]
    fn the_first_error_in_order_stops_the_taking() {
        let work = |x: u64| x;
        std::thread::scope(|s| {
            let mut pool = InOrder::start(s, 4, "test-error", 2, &work);
            let mut seen = Vec::new();
            let mut take = |o: u64| match o {
                5 => Err(E::Mine(5)),
                o => {
                    seen.push(o);
                    Ok(())
                }
            };
            let mut err = None;
            for x in 0..100 {
                if let Err(e) = pool.send(x, &mut take) {
                    err = Some(e);
                    break;
                }
            }
            let err = err.unwrap_or_else(|| pool.finish(&mut take).unwrap_err());
            assert_eq!(err, E::Mine(5));
            assert_eq!(seen, [0, 1, 2, 3, 4]);
        });
    }

    #[test]
    fn a_worker_that_panics_is_an_error_in_order_and_its_panic_is_passed_on() {
        let outcome = std::panic::catch_unwind(|| {
            let work = |x: u64| {
                assert_ne!(x, 3, "a worker's panic");
                x
            };
            std::thread::scope(|s| {
                let mut pool = InOrder::start(s, 2, "test-panic", 1, &work);
                let mut seen = Vec::new();
                let mut take = |o: u64| -> Result<(), E> {
                    seen.push(o);
                    Ok(())
                };
                let mut r = Ok(());
                for x in 0..10 {
                    r = pool.send(x, &mut take);
                    if r.is_err() {
                        break;
                    }
                }
                let r = r.and_then(|()| pool.finish(&mut take));
                assert_eq!(r, Err(E::Gone));
                assert_eq!(seen, [0, 1, 2]);
            })
        });
        assert!(outcome.is_err(), "the scope passes the worker's panic on");
    }
}
