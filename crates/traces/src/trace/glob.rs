//! Globs matched in time linear in the name.
//!
//! A glob is its literal runs between stars (`nccl*AllReduce*` is `nccl`, `AllReduce`, ``); `?`
//! stands for one character inside a run. The first run must begin the name, the last end it,
//! and the runs between are found one after another, each at its leftmost place: where a run can
//! match, its leftmost match leaves the most room for the rest, so no choice is ever undone.
//! Each run is found by shift-and (one bit per position of the run, advanced a character at a
//! time), so a name of n characters costs n × ⌈run length / 64⌉ word operations at most.

use super::names::{held, Name};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A glob over names: `*` matches any run of characters, `?` one character; everything else
/// itself. Matching is case-sensitive, as kernel names are.
///
/// Matched in time linear in the name (the `Glob` below): a backtracking glob costs pattern
/// length × name length, and a claim of a 500 KB pattern on a trace of 1 MB names hung for
/// minutes. A pattern is at most [`Pattern::MAX_BYTES`] long, and names are clipped when a
/// trace is read (`trace/names.rs`).
#[derive(Debug, Clone)]
pub struct Pattern {
    text: String,
    glob: Glob,
}

/// A name pattern longer than [`Pattern::MAX_BYTES`] (`bytes` long).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a name pattern of {bytes} bytes: at most {} are taken",
    Pattern::MAX_BYTES
)]
pub struct PatternError {
    pub bytes: usize,
}

impl Pattern {
    /// Longer patterns are refused: a name pattern is a fragment of a kernel's or a range's
    /// name, and the longest names in our traces (CUTLASS templates) are under 1 KB.
    pub const MAX_BYTES: usize = 4096;

    pub fn new(text: impl Into<String>) -> Result<Pattern, PatternError> {
        let text = text.into();
        if text.len() > Self::MAX_BYTES {
            return Err(PatternError { bytes: text.len() });
        }
        let glob = Glob::new(&text);
        Ok(Pattern { text, glob })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn matches(&self, name: &str) -> bool {
        self.glob.matches(name)
    }
}

/// A pattern's answers for the names of a trace, each distinct name asked once.
///
/// A trace holds each distinct name once (`names.rs`), so its address stands for it: a claim's
/// selection asked its pattern of every one of the 150,000 ops (and ranges) of the docs' 200 MB
/// benchmark, on each of its trials, which was a tenth of `check`'s time there, for a few hundred
/// distinct names. Each entry keeps its name, so no address is freed and reused while the memo
/// holds it; two equal names held apart are merely asked twice.
#[derive(Debug, Default)]
pub struct NameMemo {
    seen: HashMap<(usize, usize), (Name, bool)>,
}

impl NameMemo {
    /// `answer` for `name`, asked only the first time this memo sees the name.
    pub fn get(&mut self, name: &Name, answer: impl FnOnce() -> bool) -> bool {
        let key = held(name);
        if let Some(&(_, known)) = self.seen.get(&key) {
            return known;
        }
        let known = answer();
        self.seen.insert(key, (name.clone(), known));
        known
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.text == other.text
    }
}

impl Eq for Pattern {}

impl Serialize for Pattern {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.text.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Pattern, D::Error> {
        Pattern::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

#[derive(Debug, Clone)]
struct Glob {
    /// The runs between stars; one run when the glob has no star.
    runs: Vec<Run>,
}

#[derive(Debug, Clone)]
struct Run {
    chars: Vec<Option<char>>,
    /// For each character of the run, the positions that take it; `any` those that are `?`.
    masks: HashMap<char, Vec<u64>>,
    any: Vec<u64>,
}

impl Run {
    fn new(text: &str) -> Run {
        let chars: Vec<Option<char>> = text.chars().map(|c| (c != '?').then_some(c)).collect();
        let words = chars.len().div_ceil(64);
        let mut any = vec![0u64; words];
        let mut masks: HashMap<char, Vec<u64>> = HashMap::new();
        for (i, c) in chars.iter().enumerate() {
            if c.is_none() {
                any[i / 64] |= 1 << (i % 64);
            }
        }
        for (i, c) in chars.iter().enumerate() {
            if let Some(c) = c {
                masks.entry(*c).or_insert_with(|| any.clone())[i / 64] |= 1 << (i % 64);
            }
        }
        Run { chars, masks, any }
    }

    fn len(&self) -> usize {
        self.chars.len()
    }

    /// Whether the run matches `text` exactly.
    fn fits(&self, text: &[char]) -> bool {
        text.len() == self.len()
            && (self.chars.iter().zip(text)).all(|(p, c)| p.map_or(true, |p| p == *c))
    }

    /// The end of the leftmost match of the run in `text`.
    fn find(&self, text: &[char]) -> Option<usize> {
        let m = self.len();
        if m == 0 {
            return Some(0);
        }
        let (last_word, last_bit) = ((m - 1) / 64, (m - 1) % 64);
        let mut state = vec![0u64; self.any.len()];
        for (i, c) in text.iter().enumerate() {
            let mask = self.masks.get(c).unwrap_or(&self.any);
            let mut carry = 1u64;
            for (word, bits) in state.iter_mut().zip(mask) {
                let next = *word >> 63;
                *word = ((*word << 1) | carry) & bits;
                carry = next;
            }
            if state[last_word] >> last_bit & 1 == 1 {
                return Some(i + 1);
            }
        }
        None
    }
}

impl Glob {
    fn new(pattern: &str) -> Glob {
        Glob {
            runs: pattern.split('*').map(Run::new).collect(),
        }
    }

    fn matches(&self, name: &str) -> bool {
        let text: Vec<char> = name.chars().collect();
        let (first, rest) = self
            .runs
            .split_first()
            .expect("split gives one run at least");
        let Some((last, middle)) = rest.split_last() else {
            return first.fits(&text);
        };
        if text.len() < first.len() + last.len()
            || !first.fits(&text[..first.len()])
            || !last.fits(&text[text.len() - last.len()..])
        {
            return false;
        }
        let mut free = &text[first.len()..text.len() - last.len()];
        for run in middle {
            match run.find(free) {
                Some(end) => free = &free[end..],
                None => return false,
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::{Glob, Name, NameMemo};
    use proptest::prelude::*;

    /// The memo asks once per name held, and gives each name its own answer.
    #[test]
    fn a_memo_asks_once_per_name_held() {
        let (a, b) = (Name::from("ab"), Name::from("b"));
        let held_apart = Name::from("ab");
        let mut memo = NameMemo::default();
        let mut asked = 0;
        let mut ask = |memo: &mut NameMemo, n: &Name| {
            memo.get(n, || {
                asked += 1;
                n.starts_with('a')
            })
        };
        assert!(ask(&mut memo, &a));
        assert!(!ask(&mut memo, &b));
        assert!(ask(&mut memo, &a.clone()));
        assert!(ask(&mut memo, &held_apart));
        assert_eq!(
            asked, 3,
            "a clone shares its name's answer; an equal name held apart is asked"
        );
    }

    /// The glob as a plain backtracking search over characters: slow, obviously right.
    fn reference(p: &[char], t: &[char]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some(('*', rest)) => (0..=t.len()).any(|i| reference(rest, &t[i..])),
            Some((c, rest)) => {
                !t.is_empty() && (*c == '?' || *c == t[0]) && reference(rest, &t[1..])
            }
        }
    }

    proptest! {
        #[test]
        fn globs_match_as_the_backtracking_search_does(
            p in "[ab?*é]{0,8}",
            t in "[abé]{0,12}",
        ) {
            let (pc, tc): (Vec<char>, Vec<char>) = (p.chars().collect(), t.chars().collect());
            prop_assert_eq!(Glob::new(&p).matches(&t), reference(&pc, &tc), "{} on {}", p, t);
        }

        #[test]
        fn long_runs_cross_word_edges(n in 60usize..140, cut in 0usize..140) {
            let run: String = (0..n).map(|i| if i % 7 == 3 { '?' } else { 'a' }).collect();
            let text = format!("{}{}b", "a".repeat(cut), "a".repeat(n));
            let (inside, after) = (format!("*{}*", run), format!("*{}b?*", run));
            prop_assert!(Glob::new(&inside).matches(&text));
            prop_assert!(!Glob::new(&after).matches(&text));
        }
    }
}
