//! One claim at a time on the GPUs of a process: the process's turn.
//!
//! Two claims of one process that run at once share one context, and the driver gives them no
//! isolation from each other: a legacy-stream kernel of one serializes the streams of the other
//! (a wrong verdict that no neighbour check can see, since the "neighbour" is our own process),
//! a `cuCtxSynchronize` of one fails with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` while the other
//! captures a graph and invalidates that capture, and CUPTI's activity records (the copy
//! witness) are one process-wide stream that two trials would read each other's records from.
//! `cargo test` runs test functions on several threads, so a user's own test file does exactly
//! that unless the library keeps claims apart by itself.
//!
//! [`take`] gives the calling thread the process's turn, waiting while another thread holds it.
//! The lab holds it for a claim's trials (all rounds, second looks included) and the GPU for
//! its opening (calibration) and for every run; a thread may take it again while it holds it
//! (the lab's turn around the GPU's), so the layers need not know who took it first. The turn is
//! released when its [`Turn`] is dropped, on every path out, a panic's unwinding included, and a
//! panic never leaves it poisoned: the state it guards is two plain fields, updated in one step.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;

/// Who holds the turn, and how many times over.
struct State {
    holder: Option<ThreadId>,
    depth: usize,
    /// How many times a thread got the turn from nobody (not counting re-takes): the lab tells
    /// by it whether another thread had the turn since its last look at the GPU.
    granted: u64,
}

static STATE: Mutex<State> = Mutex::new(State {
    holder: None,
    depth: 0,
    granted: 0,
});
static FREED: Condvar = Condvar::new();

/// The state, whether or not a thread panicked while holding the mutex: it holds no invariant
/// that a panic could break between two statements (every change is one assignment pair made
/// without a call that could panic).
fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The process's turn on its GPUs, held until dropped. Not `Send`: it is released by the thread
/// that took it.
#[must_use = "the turn is released as soon as it is dropped"]
pub struct Turn {
    _not_send: std::marker::PhantomData<*const ()>,
}

/// Takes the process's turn, waiting while another thread holds it; at once if this thread
/// holds it already.
pub fn take() -> Turn {
    let me = std::thread::current().id();
    let mut s = state();
    loop {
        match s.holder {
            None => {
                s.holder = Some(me);
                s.depth = 1;
                s.granted += 1;
                break;
            }
            Some(h) if h == me => {
                s.depth += 1;
                break;
            }
            Some(_) => s = FREED.wait(s).unwrap_or_else(|e| e.into_inner()),
        }
    }
    Turn {
        _not_send: std::marker::PhantomData,
    }
}

/// Whether the calling thread holds the turn.
pub fn held_here() -> bool {
    state().holder == Some(std::thread::current().id())
}

/// How many times a thread has got the turn from nobody, since the process started.
pub fn granted() -> u64 {
    state().granted
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut s = state();
        s.depth = s.depth.saturating_sub(1);
        if s.depth == 0 {
            s.holder = None;
            drop(s);
            FREED.notify_all();
        }
    }
}
