//! [`Marks`]: which trials of a claim were disturbed, and why, as [`super::marks()`] finds them;
//! how the verdict counts them and what the evidence says of them.

use crate::judge::relation::Check;
use crate::measured::timeline::Timeline;

/// Which trials of a claim were disturbed, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marks {
    /// Per trial: why it carries no evidence, or `None`.
    pub trials: Vec<Option<String>>,
    /// The longest stall of each trial that had one, in ns.
    pub(super) stalls: Vec<u64>,
    /// How long something else held back each trial set aside for what a hold loses (its
    /// release let ops go together), in ns.
    pub(super) held: Vec<u64>,
    /// Trials set aside because the OS preempted the issuing thread.
    pub(super) preempted: usize,
    /// Trials set aside because the host's CPU ran slow: inside the calls a check compares (the
    /// pace thread), or around the trial (the issuing thread's own units).
    pub(super) slowed: usize,
    /// Trials set aside because a launch call the comparison needed may have waited for the GPU
    /// that a neighbour held ([`launch`]).
    pub(super) waited: usize,
    /// Whether a launch-cost claim's own kernels stalled or were held back: the neighbour they
    /// show decides nothing there by itself ([`launch`]), but the run shows it.
    pub(super) launch_saw_neighbour: bool,
    /// Trials set aside because a copy or memset ran below its pace ([`copy_pace`](super::copy_pace)).
    pub(super) paced: usize,
    /// Trials set aside because a makespan they compare would have turned with the phase it went
    /// against at its best in the claim's trials ([`makespan`]).
    pub(super) turned: usize,
    /// Trials without a clock sync set aside in a run that shows a neighbour elsewhere
    /// ([`Marks::mark_unsynced`]).
    pub(super) unsynced: usize,
    /// Trials that showed a disturbance and still count, by their overlaps ([`overlap`]).
    pub overlapped: usize,
    /// The neighbours, when another process may have used the GPU during the claim.
    pub(super) shared: Option<String>,
}

impl Marks {
    /// "2 of 7 trials disturbed, not counted: unexplained stalls of 270.12–331.40 µs; the GPU
    /// was shared with pid 1234 python3 (87 % SM)", or `None` when nothing was disturbed and
    /// nobody else was busy on the GPU.
    pub fn summary(&self, counts: &crate::judge::counts::Counts) -> Option<String> {
        let total = self.trials.len();
        let mut parts = Vec::new();
        if counts.disturbed > 0 {
            parts.push(format!(
                "{} of {total} trials disturbed, not counted",
                counts.disturbed
            ));
        }
        if let (Some(lo), Some(hi)) = (self.stalls.iter().min(), self.stalls.iter().max()) {
            parts.push(format!(
                "unexplained stalls of {:.2}–{:.2} µs in {} trials",
                *lo as f64 / 1e3,
                *hi as f64 / 1e3,
                self.stalls.len()
            ));
        }
        if let (Some(lo), Some(hi)) = (self.held.iter().min(), self.held.iter().max()) {
            parts.push(format!(
                "held back by something else for {:.2}–{:.2} µs in {} trials",
                *lo as f64 / 1e3,
                *hi as f64 / 1e3,
                self.held.len()
            ));
        }
        if self.preempted > 0 {
            parts.push(format!(
                "the issuing thread was preempted in {} trials",
                self.preempted
            ));
        }
        if self.slowed > 0 {
            parts.push(format!("the host's CPU ran slow in {} trials", self.slowed));
        }
        if self.waited > 0 {
            parts.push(format!(
                "a launch call the comparison needed took longer than the stall threshold, \
                 beside another process on the GPU, in {} trials",
                self.waited
            ));
        }
        if self.paced > 0 {
            parts.push(format!(
                "copies ran below their pace in {} trials (the copy engines or the bus were \
                 shared)",
                self.paced
            ));
        }
        if self.turned > 0 {
            parts.push(format!(
                "a phase ran slower than its best in the claim's trials, by more than the \
                 outcome's margin, in {} trials",
                self.turned
            ));
        }
        if self.unsynced > 0 {
            parts.push(format!(
                "{} trials without a clock sync in a run that shows a neighbour",
                self.unsynced
            ));
        }
        if self.overlapped > 0 {
            parts.push(format!(
                "{} trials that a neighbour disturbed counted by their overlaps alone (a \
                 neighbour delays our work; it cannot make two of our ops run together that the \
                 GPU keeps apart)",
                self.overlapped
            ));
        }
        if let Some(who) = &self.shared {
            parts.push(format!("the GPU was shared with {who}"));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// Whether the claim's trials show a neighbour: a stall, a copy below its pace, or a busy
    /// process seen by NVML. (A preempted or slow host is no neighbour on the GPU.)
    pub fn shows_neighbour(&self) -> bool {
        !self.stalls.is_empty()
            || !self.held.is_empty()
            || self.paced > 0
            || self.launch_saw_neighbour
            || self.shared.is_some()
    }

    /// Files recorded before every trial was clock-synced: a trial that a neighbour held back as a
    /// whole and released at once looks on time to the offset taken from its own starts, and its
    /// ops all became ready together, whatever their issue times say. Beside other catalogue runs,
    /// `priority.equal_waits_behind` was decided "Violated, Sometimes 3/5" that way in 3 of 8
    /// such files (1056 of 1056 blocks of the first kernel started after the second's first
    /// block). So where the run shows a neighbour elsewhere (`elsewhere` says how), the trials
    /// without a clock sync of a claim whose checks read readiness carry no evidence.
    pub fn mark_unsynced(&mut self, checks: &[Check], timelines: &[Timeline], elsewhere: &str) {
        if !checks.iter().any(Check::reads_readiness) {
            return;
        }
        for (mark, t) in self.trials.iter_mut().zip(timelines) {
            if t.clock.is_none() && mark.is_none() {
                self.unsynced += 1;
                *mark = Some(format!(
                    "disturbed: the trial has no clock sync, so its stamps cannot show a \
                     neighbour holding it back as a whole, and {elsewhere}"
                ));
            }
        }
    }
}
