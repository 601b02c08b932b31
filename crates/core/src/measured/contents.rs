//! What a buffer held after a trial, and what kind of memory it was.
//!
//! Data experiments (the weight-prefetch model, racing writers) are judged by their output, not
//! only by their timeline: the executor reads marked buffers back after each trial and keeps a
//! summary, the most common values with their counts, which is small enough to store with every
//! trial and enough to show a race ("1.0 × 700 000, 2.0 × 348 576"). It also asks the driver what
//! memory every buffer is (`cuPointerGetAttribute`), to check what the notes say about it.

use crate::program::BufferId;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The most distinct values a summary keeps.
pub const KEPT_VALUES: usize = 8;

/// The memory type the driver reports for a buffer's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    /// `CU_MEMORYTYPE_DEVICE`.
    Device,
    /// `CU_MEMORYTYPE_HOST`: page-locked host memory the driver knows.
    Host,
    /// `CU_MEMORYTYPE_UNIFIED`.
    Unified,
    /// The driver does not know the address: ordinary pageable host memory.
    Unregistered,
}

impl MemoryKind {
    /// Every kind, in the order of [`MemoryKind::code`].
    const ALL: [MemoryKind; 4] = [
        MemoryKind::Unregistered,
        MemoryKind::Host,
        MemoryKind::Device,
        MemoryKind::Unified,
    ];

    /// A small number standing for the kind (1..=4), so a check can carry it as its measured
    /// value; 0, the value of an undecided measurement, stands for none.
    pub fn code(self) -> i64 {
        1 + Self::ALL.iter().position(|&k| k == self).unwrap_or(0) as i64
    }

    /// The kind a [`MemoryKind::code`] stands for.
    pub fn from_code(code: i64) -> Option<MemoryKind> {
        usize::try_from(code - 1)
            .ok()
            .and_then(|i| Self::ALL.get(i).copied())
    }

    /// "device", for evidence lines.
    pub fn short_name(self) -> &'static str {
        match self {
            MemoryKind::Device => "device",
            MemoryKind::Host => "page-locked host",
            MemoryKind::Unified => "unified",
            MemoryKind::Unregistered => "pageable host",
        }
    }
}

impl fmt::Display for MemoryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MemoryKind::Device => "device memory (CU_MEMORYTYPE_DEVICE)",
            MemoryKind::Host => "page-locked host memory (CU_MEMORYTYPE_HOST)",
            MemoryKind::Unified => "unified memory (CU_MEMORYTYPE_UNIFIED)",
            MemoryKind::Unregistered => "memory the driver does not know (pageable host memory)",
        })
    }
}

/// One value and how many elements held it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueCount {
    pub value: i64,
    pub count: u64,
}

/// A buffer after a trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contents {
    pub buffer: BufferId,
    pub memory: MemoryKind,
    /// Elements read back; 0 for a buffer not marked for reading back.
    #[serde(default)]
    pub elements: u64,
    /// The most common whole values, most common first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<ValueCount>,
    /// Elements not counted in `values`: rarer values and values that are not whole numbers.
    #[serde(default)]
    pub other: u64,
}

impl Contents {
    /// Summarizes `data`. Counted by runs of equal elements: a read-back buffer is millions of
    /// elements (2 Mi per trial in the prefetch claims) holding one value or a few long runs, and
    /// a map lookup per element cost tens of milliseconds per trial; per run it is one lookup.
    pub fn summarize(buffer: BufferId, memory: MemoryKind, data: &[f32]) -> Contents {
        let mut rest = data;
        let runs = std::iter::from_fn(|| {
            let &x = rest.first()?;
            let run = run_of(rest, x.to_bits());
            rest = &rest[run..];
            Some((x, run as u64))
        });
        Contents::of_runs(buffer, memory, data.len() as u64, runs)
    }

    /// The summary of `elements` elements that all hold `value`: what [`Contents::summarize`]
    /// gives for them, for a buffer the GPU found uniform without copying it back.
    pub fn uniform(buffer: BufferId, memory: MemoryKind, value: f32, elements: u64) -> Contents {
        let run = (elements > 0).then_some((value, elements));
        Contents::of_runs(buffer, memory, elements, run.into_iter())
    }

    /// The summary of `elements` elements given as runs of one value each.
    fn of_runs(
        buffer: BufferId,
        memory: MemoryKind,
        elements: u64,
        runs: impl Iterator<Item = (f32, u64)>,
    ) -> Contents {
        let mut counts: std::collections::HashMap<i64, u64> = std::collections::HashMap::new();
        let mut other = 0u64;
        for (x, run) in runs {
            if x.fract() == 0.0 && x.abs() < 1e15 {
                *counts.entry(x as i64).or_default() += run;
            } else {
                other += run;
            }
        }
        let mut values: Vec<ValueCount> = counts
            .into_iter()
            .map(|(value, count)| ValueCount { value, count })
            .collect();
        values.sort_by(|a, b| b.count.cmp(&a.count).then(a.value.cmp(&b.value)));
        other += values
            .iter()
            .skip(KEPT_VALUES)
            .map(|v| v.count)
            .sum::<u64>();
        values.truncate(KEPT_VALUES);
        Contents {
            buffer,
            memory,
            elements,
            values,
            other,
        }
    }

    /// Whether every element is `value`.
    pub fn all(&self, value: i64) -> bool {
        self.elements > 0 && self.values.len() == 1 && self.values[0].value == value
    }

    /// Elements that are not `value`.
    pub fn differing(&self, value: i64) -> u64 {
        let same = self
            .values
            .iter()
            .find(|v| v.value == value)
            .map_or(0, |v| v.count);
        self.elements - same
    }

    /// "3 × 1048576" or "1 × 700000, 2 × 348576 (+12 other)".
    pub fn describe(&self) -> String {
        let mut s = self
            .values
            .iter()
            .map(|v| format!("{} × {}", v.value, v.count))
            .collect::<Vec<_>>()
            .join(", ");
        if self.other > 0 {
            s += &format!(" (+{} other)", self.other);
        }
        if s.is_empty() {
            s = "nothing read back".into();
        }
        s
    }
}

/// How many elements at the start of `data` have the bits `bits`: 64 at a time while whole
/// chunks match (a loop the compiler vectorizes, three times faster on a 1 Mi-element run), then
/// one by one.
fn run_of(data: &[f32], bits: u32) -> usize {
    let mut n = 0;
    for chunk in data.chunks(64) {
        if chunk.iter().fold(0u32, |acc, y| acc | (y.to_bits() ^ bits)) != 0 {
            return n + chunk.iter().take_while(|y| y.to_bits() == bits).count();
        }
        n += chunk.len();
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer found uniform on the GPU is summarized as if its elements had been read.
    #[test]
    fn uniform_is_what_summarizing_the_elements_gives() {
        for value in [
            0.0f32,
            -0.0,
            1.0,
            3.0,
            -7.0,
            0.5,
            f32::NAN,
            f32::INFINITY,
            1e16,
        ] {
            for n in [0usize, 1, 63, 64, 65, 1000] {
                let data = vec![value; n];
                assert_eq!(
                    Contents::uniform(BufferId(2), MemoryKind::Device, value, n as u64),
                    Contents::summarize(BufferId(2), MemoryKind::Device, &data),
                    "{value} × {n}"
                );
            }
        }
    }

    /// Counting by runs gives what counting element by element gives.
    #[test]
    fn runs_are_counted_like_single_elements() {
        let mut data = vec![2.0f32; 1000];
        data.extend([1.0, 1.0, -0.0, 0.0, 0.5, f32::NAN, f32::NAN, 1.0, 3.0]);
        data.extend(vec![1.0f32; 10]);
        data.extend(vec![4.0f32; 129]); // runs across the 64-element chunks
        data.extend(vec![5.0f32; 64]);
        let c = Contents::summarize(BufferId(0), MemoryKind::Device, &data);
        assert_eq!(c.elements, data.len() as u64);
        let count = |v: i64| c.values.iter().find(|x| x.value == v).map(|x| x.count);
        assert_eq!(count(2), Some(1000));
        assert_eq!(count(1), Some(13));
        assert_eq!(count(0), Some(2), "-0.0 and 0.0 are both 0");
        assert_eq!((count(4), count(5)), (Some(129), Some(64)));
        let kept: u64 = c.values.iter().map(|v| v.count).sum();
        assert_eq!(kept + c.other, data.len() as u64);
        assert_eq!(
            c.values[0],
            ValueCount {
                value: 2,
                count: 1000
            }
        );
    }
}
