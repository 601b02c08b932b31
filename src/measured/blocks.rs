//! Block stamps: what each block of a stamped kernel recorded ([`BlockStamp`]), and how the lab
//! holds a span's stamps ([`Blocks`]): in 32-bit numbers, counted from the span's first start. How they are written is `columns.rs`.
//!
//! Block stamps are nearly all the memory of a run of many trials. `scenario.sleep.grid` stamps
//! 32,768 blocks a trial; held as [`BlockStamp`]s (56 bytes each) its 1,000 trials took 1.8 GB,
//! and the catalogue at 1,000 trials peaked at 2.9 GB on an H100 (the claims the results writer
//! had not yet written stay in memory beside the one running). Counted from the span's first
//! start, a block's start, length and cycles fit 32 bits (4.29 s, 4.29 G cycles) and its SM 16,
//! so a block takes 16 bytes: 29 % of a [`BlockStamp`]. A span whose stamps do not fit (a block longer than
//! 4.29 s, an end before its start, read from a damaged file) is held as [`BlockStamp`]s, as
//! before, so nothing read is ever changed.
//!
//! The span's first start and last end are kept beside the blocks: every relation asks for
//! them, and they would otherwise cost a scan of every block each time.

use serde::{Deserialize, Serialize};

/// One block's stamps. Times are `%globaltimer` nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockStamp {
    pub start_ns: u64,
    pub end_ns: u64,
    pub sm: u32,
    pub cycles: u64,
    /// The longest the block went without reading `%globaltimer` while it spun, where that was
    /// at least [`Pause::RECORDED_NS`]: a running block stops only when it is switched out (see
    /// [`crate::judge::disturbance`]). Absent in files recorded before the spin measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<Pause>,
}

/// The shortest pause of a running block that counts as a switch-out. On an idle H100, blocks of
/// grids larger than the GPU (4096 blocks of 256 threads) pause for 49.3 µs, again and again
/// (six in ten blocks of `scenario.sleep.grid`), with nobody else on the GPU; blocks of
/// smaller grids never pause for 1 µs. A neighbour's time slice switched our blocks out for
/// 1.5–2.4 ms. Four times the idle pause sits far from both.
pub const PAUSE_FLOOR_NS: u64 = 200_000;

/// A stretch in which a running block did not read the clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pause {
    /// `%globaltimer` when the block stopped reading it.
    pub at_ns: u64,
    pub ns: u64,
}

impl Pause {
    /// Shorter pauses are not kept: a spin reads the clock every few tens of ns, and the stall
    /// threshold ([`crate::judge::disturbance::STALL_FLOOR_NS`]) is far above this.
    pub const RECORDED_NS: u64 = 1_000;
}

/// The block stamps of one span. Built from [`BlockStamp`]s (`collect`, `From<Vec<_>>`) and read
/// back as them ([`Blocks::iter`]), in the order given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Blocks {
    /// The earliest block start (0 when there is no block).
    first_ns: u64,
    /// The latest block end (0 when there is no block).
    last_ns: u64,
    held: Held,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum Held {
    #[default]
    Empty,
    Narrow(Narrow),
    Wide(Box<[BlockStamp]>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Narrow {
    rows: Box<[Row]>,
    /// The blocks that paused, by index, in ascending order: six in ten blocks of a grid larger
    /// than the GPU pause, so these are 12 bytes too.
    pauses: Box<[NarrowPause]>,
}

/// One block, 16 bytes: one allocation per span, so a span of one block costs no more than a
/// [`BlockStamp`] would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    /// From `first_ns`.
    start: u32,
    length: u32,
    cycles: u32,
    sm: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NarrowPause {
    block: u32,
    /// From `first_ns`: pauses happen while a block runs, after the span's first start.
    at: u32,
    ns: u32,
}

impl NarrowPause {
    fn pause(self, first_ns: u64) -> Pause {
        Pause {
            at_ns: first_ns + u64::from(self.at),
            ns: u64::from(self.ns),
        }
    }
}

impl Narrow {
    fn of(blocks: &[BlockStamp], first_ns: u64) -> Option<Narrow> {
        u32::try_from(blocks.len()).ok()?;
        let mut pauses = Vec::new();
        let mut rows = Vec::with_capacity(blocks.len());
        for (i, b) in blocks.iter().enumerate() {
            rows.push(Row {
                start: u32::try_from(b.start_ns - first_ns).ok()?,
                length: u32::try_from(b.end_ns.checked_sub(b.start_ns)?).ok()?,
                cycles: u32::try_from(b.cycles).ok()?,
                sm: u16::try_from(b.sm).ok()?,
            });
            if let Some(p) = b.pause {
                pauses.push(NarrowPause {
                    block: i as u32,
                    at: u32::try_from(p.at_ns.checked_sub(first_ns)?).ok()?,
                    ns: u32::try_from(p.ns).ok()?,
                });
            }
        }
        Some(Narrow {
            rows: rows.into_boxed_slice(),
            pauses: pauses.into_boxed_slice(),
        })
    }

    fn get(&self, i: usize, first_ns: u64, pause: Option<Pause>) -> BlockStamp {
        let row = self.rows[i];
        let start_ns = first_ns + u64::from(row.start);
        BlockStamp {
            start_ns,
            end_ns: start_ns + u64::from(row.length),
            sm: u32::from(row.sm),
            cycles: u64::from(row.cycles),
            pause,
        }
    }
}

impl Blocks {
    pub fn len(&self) -> usize {
        match &self.held {
            Held::Empty => 0,
            Held::Narrow(n) => n.rows.len(),
            Held::Wide(w) => w.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The earliest block start; 0 without blocks.
    pub fn first_ns(&self) -> u64 {
        self.first_ns
    }

    /// The latest block end; 0 without blocks.
    pub fn last_ns(&self) -> u64 {
        self.last_ns
    }

    /// Every block's stamps, in the order they were given.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            blocks: self,
            next: 0,
            pause: 0,
        }
    }

    /// The blocks that paused, with their pause.
    pub fn pauses(&self) -> impl Iterator<Item = Pause> + '_ {
        let (narrow, wide) = match &self.held {
            Held::Narrow(n) => (&n.pauses[..], &[][..]),
            Held::Wide(w) => (&[][..], &w[..]),
            Held::Empty => (&[][..], &[][..]),
        };
        let first_ns = self.first_ns;
        narrow
            .iter()
            .map(move |p| p.pause(first_ns))
            .chain(wide.iter().filter_map(|b| b.pause))
    }

    pub fn to_vec(&self) -> Vec<BlockStamp> {
        self.iter().collect()
    }

    /// Changes the stamps through a list of them (hand-made timelines in tests).
    pub fn edit(&mut self, change: impl FnOnce(&mut Vec<BlockStamp>)) {
        let mut blocks = self.to_vec();
        change(&mut blocks);
        *self = Blocks::from(blocks);
    }
}

/// The stamps of [`Blocks`], one block after another.
#[derive(Clone)]
pub struct Iter<'a> {
    blocks: &'a Blocks,
    next: usize,
    /// The next of the narrow columns' pauses.
    pause: usize,
}

impl Iterator for Iter<'_> {
    type Item = BlockStamp;

    fn next(&mut self) -> Option<BlockStamp> {
        let i = self.next;
        let b = match &self.blocks.held {
            Held::Empty => return None,
            Held::Wide(w) => *w.get(i)?,
            Held::Narrow(n) => {
                if i >= n.rows.len() {
                    return None;
                }
                let pause = match n.pauses.get(self.pause) {
                    Some(p) if p.block as usize == i => {
                        self.pause += 1;
                        Some(p.pause(self.blocks.first_ns))
                    }
                    _ => None,
                };
                n.get(i, self.blocks.first_ns, pause)
            }
        };
        self.next += 1;
        Some(b)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.blocks.len() - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Blocks {
    type Item = BlockStamp;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl From<Vec<BlockStamp>> for Blocks {
    fn from(blocks: Vec<BlockStamp>) -> Blocks {
        if blocks.is_empty() {
            return Blocks::default();
        }
        let first_ns = blocks.iter().map(|b| b.start_ns).min().unwrap_or(0);
        let last_ns = blocks.iter().map(|b| b.end_ns).max().unwrap_or(0);
        let held = match Narrow::of(&blocks, first_ns) {
            Some(n) => Held::Narrow(n),
            None => Held::Wide(blocks.into_boxed_slice()),
        };
        Blocks {
            first_ns,
            last_ns,
            held,
        }
    }
}

impl<const N: usize> From<[BlockStamp; N]> for Blocks {
    fn from(blocks: [BlockStamp; N]) -> Blocks {
        Blocks::from(blocks.to_vec())
    }
}

impl FromIterator<BlockStamp> for Blocks {
    fn from_iter<I: IntoIterator<Item = BlockStamp>>(iter: I) -> Blocks {
        Blocks::from(iter.into_iter().collect::<Vec<_>>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn stamp(start_ns: u64, end_ns: u64, sm: u32, cycles: u64, pause: Option<u64>) -> BlockStamp {
        BlockStamp {
            start_ns,
            end_ns,
            sm,
            cycles,
            pause: pause.map(|ns| Pause {
                at_ns: start_ns + 1,
                ns,
            }),
        }
    }

    #[test]
    fn what_fits_is_held_in_columns_and_what_does_not_as_given() {
        let small = Blocks::from(vec![
            stamp(1_000, 3_000, 5, 70, None),
            stamp(900, 2_000, 131, 60, Some(2_000)),
        ]);
        assert!(matches!(small.held, Held::Narrow(_)));
        assert_eq!((small.first_ns(), small.last_ns()), (900, 3_000));
        // An end before its start (a damaged file's) and a block of 5 s keep their stamps.
        for odd in [
            stamp(10, 5, 0, 0, None),
            stamp(0, 5_000_000_000, 0, 0, None),
        ] {
            let b = Blocks::from(vec![odd]);
            assert!(matches!(b.held, Held::Wide(_)));
            assert_eq!(b.to_vec(), [odd]);
        }
        assert_eq!(Blocks::from(vec![]).iter().count(), 0);
    }

    proptest! {
        /// Whatever is given is read back exactly, in order, with its pauses.
        #[test]
        fn blocks_read_back_as_given(
            raw in prop::collection::vec(
                (0u64..6_000_000_000, 0u64..5_000_000_000, 0u32..70_000, 0u64..5_000_000_000,
                 prop::option::of(1_000u64..1_000_000)),
                0..40),
            base in 0u64..u64::MAX / 2,
        ) {
            let given: Vec<BlockStamp> = raw
                .into_iter()
                .map(|(s, l, sm, c, p)| stamp(base + s, base + s + l, sm, c, p))
                .collect();
            let blocks = Blocks::from(given.clone());
            prop_assert_eq!(blocks.to_vec(), given.clone());
            prop_assert_eq!(blocks.len(), given.len());
            prop_assert_eq!(blocks.first_ns(), given.iter().map(|b| b.start_ns).min().unwrap_or(0));
            prop_assert_eq!(blocks.last_ns(), given.iter().map(|b| b.end_ns).max().unwrap_or(0));
            let pauses: Vec<Pause> = given.iter().filter_map(|b| b.pause).collect();
            prop_assert_eq!(blocks.pauses().collect::<Vec<_>>(), pauses);
        }
    }
}
