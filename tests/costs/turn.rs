//! The process's turn on its GPUs (`stream_litmus::turn`), on the CPU: one holder at a time
//! across threads, a holder may take it again, and a panic while holding it neither keeps it
//! held nor poisons it. The lab holds it for each claim's trials; these tests hold it as the lab
//! does, from many threads at once, as `cargo test`'s threads would.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::Duration;
use stream_litmus::turn;

#[test]
fn no_two_threads_hold_the_turn_at_once() {
    const THREADS: usize = 8;
    const ROUNDS: usize = 50;
    let inside = AtomicUsize::new(0);
    let most = AtomicUsize::new(0);
    let entered = AtomicUsize::new(0);
    let start = Barrier::new(THREADS);
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                start.wait();
                for _ in 0..ROUNDS {
                    let _turn = turn::take();
                    assert!(turn::held_here());
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    entered.fetch_add(1, Ordering::SeqCst);
                    // Long enough for the others to be waiting at the door.
                    std::thread::sleep(Duration::from_micros(200));
                    inside.fetch_sub(1, Ordering::SeqCst);
                }
                assert!(!turn::held_here());
            });
        }
    });
    assert_eq!(entered.load(Ordering::SeqCst), THREADS * ROUNDS);
    assert_eq!(
        most.load(Ordering::SeqCst),
        1,
        "two threads held the turn at once"
    );
}

#[test]
fn a_holder_takes_the_turn_again_and_keeps_it_until_the_last_is_dropped() {
    let outer = turn::take();
    let granted = turn::granted();
    let inner = turn::take(); // would deadlock if the turn were not re-entrant
    assert_eq!(turn::granted(), granted, "a re-take is not a new grant");
    drop(inner);
    assert!(
        turn::held_here(),
        "dropping the inner turn released the outer"
    );
    // Another thread cannot get it while the outer is held.
    let got = std::thread::scope(|scope| {
        let other = scope.spawn(|| {
            let _t = turn::take();
            std::time::Instant::now()
        });
        std::thread::sleep(Duration::from_millis(50));
        let released = std::time::Instant::now();
        drop(outer);
        (other.join().unwrap(), released)
    });
    assert!(
        got.0 >= got.1,
        "the other thread got the turn before it was released"
    );
}

#[test]
fn a_panicking_claim_does_not_keep_or_poison_the_turn() {
    let panicked = std::thread::spawn(|| {
        let _turn = turn::take();
        panic!("a claim that panics while it holds the turn");
    })
    .join();
    assert!(panicked.is_err());
    // The turn is free again, and usable from any thread, this one included.
    let waited = std::thread::spawn(|| {
        let started = std::time::Instant::now();
        let _turn = turn::take();
        started.elapsed()
    })
    .join()
    .expect("the turn was left poisoned");
    assert!(waited < Duration::from_secs(5), "the turn was left held");
    let _turn = turn::take();
    assert!(turn::held_here());
}
