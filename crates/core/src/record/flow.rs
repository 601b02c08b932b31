//! How much cut text may wait between the two threads that read a results file.
//!
//! The cutter ([`super::reader`]) copies each timeline out of the stream while the caller's
//! thread parses the one before; without a bound, a cutter faster than the parser would fill
//! memory with text waiting to be parsed. Text is charged here as it is copied and released
//! once parsed: past [`IN_FLIGHT_BYTES`] the cutter waits, unless nothing else is in flight
//! (a single timeline larger than the budget is bounded by the read limit alone, as before).

use std::sync::{Condvar, Mutex, PoisonError};

/// The text that may be cut and not yet parsed: room for the largest timelines of our own runs
/// (a few MB; 21 MB for a trial of a million stamps) to be parsed while the next is cut.
pub const IN_FLIGHT_BYTES: u64 = 64 << 20;

/// What a piece costs beside its text (its place in the channel, its allocation): charged with
/// it, so that a file of many tiny timelines (a few hundred KB of gzip holding millions of
/// `{"spans":[],"host_calls":[]}`) cannot queue them without bound (560 MB when only the text
/// was counted).
pub const PIECE_BYTES: u64 = 128;

/// Bytes in flight between the cutter and the parser, and whether the parser has stopped.
#[derive(Default)]
pub(super) struct Flow {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    held: u64,
    stopped: bool,
}

impl Flow {
    /// Charges `n` more bytes held by `mine` (bytes of the charger's own, already charged, that
    /// are part of the total), waiting while others' text fills the budget. An error once the
    /// parser has stopped: the cutter then ends.
    pub(super) fn charge(&self, n: u64, mine: u64) -> Result<(), super::RecordError> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while !s.stopped && s.held > mine && s.held.saturating_add(n) > IN_FLIGHT_BYTES {
            s = self.changed.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        if s.stopped {
            return Err(super::RecordError::Stopped);
        }
        s.held = s.held.saturating_add(n);
        Ok(())
    }

    /// Releases `n` bytes, parsed and dropped.
    pub(super) fn release(&self, n: u64) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.held = s.held.saturating_sub(n);
        self.changed.notify_all();
    }

    /// Whether the parser has stopped: the cutter then ends.
    pub(super) fn stopped(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stopped
    }

    /// The parser stopped: the cutter's next charge fails instead of waiting.
    fn stop(&self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.stopped = true;
        self.changed.notify_all();
    }

    /// Stops the flow when dropped, on every way out of the parser's thread, a panic included
    /// (a cutter left waiting for room would keep the reading from ever ending).
    pub(super) fn stop_on_drop(&self) -> StopOnDrop<'_> {
        StopOnDrop(self)
    }
}

/// Stops its [`Flow`] when dropped.
pub(super) struct StopOnDrop<'a>(&'a Flow);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cutter_waits_for_room_and_ends_when_the_parser_stops() {
        let flow = Flow::default();
        // Alone, any size passes.
        flow.charge(IN_FLIGHT_BYTES * 2, 0).unwrap();
        flow.release(IN_FLIGHT_BYTES * 2);
        flow.charge(IN_FLIGHT_BYTES - 10, 0).unwrap();
        // Its own bytes do not hold the charger back.
        flow.charge(100, IN_FLIGHT_BYTES - 10).unwrap();
        std::thread::scope(|s| {
            let waiting = s.spawn(|| flow.charge(100, 0));
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(!waiting.is_finished(), "waits while the budget is full");
            flow.release(IN_FLIGHT_BYTES + 90);
            waiting.join().unwrap().unwrap();
        });
        flow.release(100);
        flow.charge(IN_FLIGHT_BYTES, 0).unwrap();
        std::thread::scope(|s| {
            let waiting = s.spawn(|| flow.charge(200, 0));
            drop(flow.stop_on_drop());
            assert!(waiting.join().unwrap().is_err());
        });
    }
}
