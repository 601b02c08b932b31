//! The tally of one claim's trials: positive, negative, undecided and disturbed, written as
//! litmus tools write it ("Always 5/5", "Sometimes 3/5 +1?", "Never 0/5 +2!").
//!
//! It sits below both [`super::verdict`], which counts, and [`super::disturbance`], which says why
//! trials were set aside, so that neither imports the other for it.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How many trials were positive, negative and undecided.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub positive: usize,
    pub negative: usize,
    pub undecided: usize,
    /// Trials that something outside the program disturbed (see [`crate::judge::disturbance`]):
    /// counted apart, never as evidence.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub disturbed: usize,
    /// Trials that showed a disturbance and still count, among the positive and negative ones:
    /// their outcome rests on overlaps, which no neighbour makes
    /// (`judge::disturbance::overlap`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub overlapped: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl fmt::Display for Counts {
    /// "Always 5/5", "Sometimes 3/5", "Never 0/5": positive trials over decided trials, then
    /// "+1?" for undecided trials and "+2!" for disturbed ones.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let decided = self.positive + self.negative;
        let word = if decided == 0 {
            "Undecided"
        } else if self.negative == 0 {
            "Always"
        } else if self.positive == 0 {
            "Never"
        } else {
            "Sometimes"
        };
        let mut text = format!("{word} {}/{decided}", self.positive);
        if self.undecided > 0 {
            text.push_str(&format!(" +{}?", self.undecided));
        }
        if self.disturbed > 0 {
            text.push_str(&format!(" +{}!", self.disturbed));
        }
        f.pad(&text)
    }
}
