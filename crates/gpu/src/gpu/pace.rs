//! The host's pace: a second thread that times a fixed piece of CPU work over and over while a
//! trial is issued, and notes the stretches in which that work ran slow.
//!
//! Host-time checks (how long a graph launch took against the launches one by one) read the
//! issuing thread's clock across driver calls, so anything that slows the host's CPUs moves
//! them. On the H100 VMs of this workplace, about one trial in a hundred ran through a stretch
//! of milliseconds in which the whole VM computed about ten times slower: a fixed loop on the
//! issuing thread took 48 µs instead of 4.5 µs right after a graph launch that took 8 ms instead
//! of 1.4 ms, the same loop on this thread ran slow for the whole call, the issuing thread was in
//! user mode all along, and the OS had preempted nobody. Such a stretch turned
//! `graph.launch_cost.1000` Violated in 3 of 3 runs of 1,000 trials on one VM (3–5 trials each).
//! [`crate::gpu::clock::preemptions`] cannot see it: nothing was switched out in the guest. The
//! work a pace unit does is a register-only xorshift loop, which nothing of ours (no memory
//! traffic, no syscalls) can slow tenfold; a slow unit means the CPU itself was taken or slowed.
//!
//! The thread is parked except between [`Pace::arm`] and [`Pace::disarm`], which the executor
//! calls around the issue loop of programs whose checks compare amounts of host time
//! (`crate::judge::slowdown::watched`), so it costs a CPU core only there. What it saw goes into the timeline ([`crate::measured::timeline::HostSlow`]) and the verdict
//! rules decide what it means ([`crate::judge::disturbance`]), from recorded data like everything else.

use super::clock::now_ns;
use crate::measured::timeline::HostSlow;
use crate::measured::timeline::SLOW_FACTOR;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// Iterations of the xorshift loop in one unit: about 2 µs on the H100 VMs' Xeon cores, short
/// enough to place a slowdown within a few µs, long enough that reading the clock is noise.
const UNIT_ITERATIONS: u64 = 1_000;
/// Stretches kept per trial: a host that stays slow for a whole trial makes one long stretch,
/// so only a host that is slow again and again fills this; the last stretch then grows to cover
/// the rest, which keeps memory bounded and loses no slow time.
const MAX_STRETCHES: usize = 256;

/// The pace thread of one GPU's executor.
pub struct Pace {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Shared {
    armed: AtomicBool,
    stop: AtomicBool,
    /// The fastest unit seen, in ns: the pace of an undisturbed CPU.
    fastest_ns: AtomicU64,
    wake: Condvar,
    state: Mutex<Stretches>,
}

/// Slow stretches since the last arm, in absolute host ns ([`now_ns`]).
#[derive(Default)]
struct Stretches {
    done: Vec<HostSlow>,
    /// The stretch still going on: the last unit was slow.
    open: Option<HostSlow>,
}

impl Stretches {
    fn note(&mut self, start: u64, end: u64, stolen: u64) {
        let s = self.open.get_or_insert(HostSlow {
            begin_ns: start,
            end_ns: start,
            stolen_ns: 0,
        });
        s.end_ns = end;
        s.stolen_ns += stolen;
    }

    fn close(&mut self) {
        if let Some(s) = self.open.take() {
            let full = self.done.len() >= MAX_STRETCHES;
            match self.done.last_mut() {
                Some(last) if full => {
                    last.end_ns = s.end_ns;
                    last.stolen_ns += s.stolen_ns;
                }
                _ => self.done.push(s),
            }
        }
    }
}

/// One unit of CPU work; `seed` keeps the compiler from folding it.
fn unit(seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..std::hint::black_box(UNIT_ITERATIONS) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// Times one unit: (start, end) in [`now_ns`].
fn timed_unit() -> (u64, u64) {
    let start = now_ns();
    std::hint::black_box(unit(start));
    (start, now_ns())
}

impl Pace {
    /// Starts the (parked) thread, after timing a few units here to know the undisturbed pace.
    pub fn start() -> std::io::Result<Pace> {
        let fastest = (0..32)
            .map(|_| {
                let (s, e) = timed_unit();
                e - s
            })
            .min()
            .unwrap_or(1)
            .max(1);
        let shared = Arc::new(Shared {
            fastest_ns: AtomicU64::new(fastest),
            ..Shared::default()
        });
        let inner = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("stream-litmus-pace".into())
            .spawn(move || watch(&inner))?;
        Ok(Pace {
            shared,
            thread: Some(thread),
        })
    }

    /// Times one unit on the calling thread (the issuing thread): what its own core gave it,
    /// which the pace thread on another core cannot see.
    pub fn probe(&self) -> u64 {
        let (start, end) = timed_unit();
        end - start
    }

    /// The fastest unit seen so far, on either thread's core.
    pub fn fastest_ns(&self) -> u64 {
        self.shared.fastest_ns.load(Ordering::Relaxed)
    }

    /// Starts timing units, forgetting what the last arm saw.
    pub fn arm(&self) {
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        state.done.clear();
        state.open = None;
        self.shared.armed.store(true, Ordering::Release);
        self.shared.wake.notify_one();
    }

    /// Stops timing units: the slow stretches since [`Pace::arm`], in ns since `t0` (a stretch
    /// that began before `t0` is cut there).
    pub fn disarm(&self, t0: u64) -> Vec<HostSlow> {
        self.shared.armed.store(false, Ordering::Release);
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        state.close();
        since(state.done.drain(..), t0)
    }
}

/// Stretches in ns since `t0`: those that ended before it dropped, one that began before it cut,
/// keeping the share of its lost time that falls after `t0` (lost time is spread evenly over a
/// stretch, as `crate::judge::slowdown` charges it). Keeping all of it once charged the 100 launches of
/// `graph.launch_cost.100` (490 µs) with 896 µs lost, from a stretch that began during the
/// trial's clock alignment.
fn since(stretches: impl Iterator<Item = HostSlow>, t0: u64) -> Vec<HostSlow> {
    stretches
        .filter(|s| s.end_ns > t0)
        .map(|s| {
            let len = s.end_ns - s.begin_ns;
            let kept = s.end_ns - s.begin_ns.max(t0);
            HostSlow {
                begin_ns: s.begin_ns.saturating_sub(t0),
                end_ns: s.end_ns - t0,
                stolen_ns: (u128::from(s.stolen_ns) * u128::from(kept) / u128::from(len.max(1)))
                    as u64,
            }
        })
        .collect()
}

/// The thread: parked until armed, then units until disarmed.
fn watch(shared: &Shared) {
    loop {
        {
            let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            while !shared.armed.load(Ordering::Acquire) {
                if shared.stop.load(Ordering::Acquire) {
                    return;
                }
                state = shared.wake.wait(state).unwrap_or_else(|e| e.into_inner());
            }
        }
        while shared.armed.load(Ordering::Acquire) {
            let (start, end) = timed_unit();
            let took = end - start;
            let fastest = shared
                .fastest_ns
                .fetch_min(took, Ordering::Relaxed)
                .min(took);
            let slow = took > SLOW_FACTOR * fastest;
            let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            if slow {
                state.note(start, end, took - fastest);
            } else {
                state.close();
            }
        }
    }
}

impl Drop for Pace {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.armed.store(false, Ordering::Release);
        {
            let _state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.wake.notify_one();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stretches_merge_consecutive_slow_units_and_stay_bounded() {
        let mut s = Stretches::default();
        s.note(10, 20, 8);
        s.note(20, 35, 13);
        s.close();
        s.close();
        assert_eq!(
            s.done,
            vec![HostSlow {
                begin_ns: 10,
                end_ns: 35,
                stolen_ns: 21
            }]
        );
        for i in 0..2 * MAX_STRETCHES as u64 {
            s.note(100 + 10 * i, 105 + 10 * i, 3);
            s.close();
        }
        assert_eq!(s.done.len(), MAX_STRETCHES);
        let last = s.done.last().unwrap();
        assert_eq!(last.end_ns, 105 + 10 * (2 * MAX_STRETCHES as u64 - 1));
        let stolen: u64 = s.done.iter().map(|h| h.stolen_ns).sum();
        assert_eq!(stolen, 21 + 3 * 2 * MAX_STRETCHES as u64);
    }

    #[test]
    fn stretches_are_placed_after_t0() {
        let at = |b, e, stolen| HostSlow {
            begin_ns: b,
            end_ns: e,
            stolen_ns: stolen,
        };
        let placed = since([at(5, 9, 4), at(8, 14, 6), at(20, 30, 10)].into_iter(), 10);
        // The stretch cut at t0 keeps the lost time of its part after t0 (4 of its 6 ns).
        assert_eq!(placed, vec![at(0, 4, 4), at(10, 20, 10)]);
    }

    #[test]
    fn the_thread_arms_disarms_and_stops() {
        let pace = Pace::start().expect("a thread");
        for _ in 0..3 {
            let t0 = now_ns();
            pace.arm();
            std::thread::sleep(std::time::Duration::from_millis(2));
            let slow = pace.disarm(t0);
            assert!(slow.len() <= MAX_STRETCHES);
            assert!(slow.iter().all(|s| s.begin_ns <= s.end_ns));
        }
        drop(pace); // joins the parked thread: a hang here fails the test by timeout
    }
}
