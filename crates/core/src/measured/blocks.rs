//! Block stamps: what each block of a stamped kernel recorded ([`BlockStamp`]), and how the lab
//! holds a span's stamps ([`Blocks`]): packed, each number in as few bytes as it needs. How they
//! are written is `columns.rs`.
//!
//! Block stamps are nearly all the memory of a run of many trials. `scenario.sleep.grid` stamps
//! 32,768 blocks a trial; held as [`BlockStamp`]s (56 bytes each) its 1,000 trials took 1.8 GB.
//! Packed, each start a step from the block before, then the length, the cycles and the SM in
//! variable-length numbers, a block takes about 11 bytes, and one that paused 5 more (six in ten
//! of that claim's blocks): 16 on average, 29 % of a [`BlockStamp`], and 61 % of the fixed
//! 16-byte rows with 12-byte pauses held before. A span whose stamps cannot be packed (an end
//! before its start, read from a damaged file; steps beyond 63 bits) is held as
//! [`BlockStamp`]s, so nothing read is ever changed. Blocks are read in order ([`Blocks::iter`]);
//! nothing needs one block alone.
//!
//! The span's first start and last end are kept beside the blocks: every relation asks for
//! them, and they would otherwise cost a scan of every block each time. So is its longest
//! pause, which every judging of a trial asks for (a stall is a pause longer than a time slice):
//! unpacking `scenario.sleep.grid`'s 32,768 blocks to find it was a quarter of a millisecond a
//! trial, each time the trial was judged.

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
    /// The longest pause of any block (the last of the longest, in block order).
    longest_pause: Option<Pause>,
    held: Held,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum Held {
    #[default]
    Empty,
    Narrow(Narrow),
    Wide(Box<[BlockStamp]>),
}

/// The blocks packed in variable-length numbers (7 bits a byte, the high bit saying "more"),
/// block after block: the start as a signed step from the block before (the first from
/// `base_ns`, its own start), the length, the cycles, then the SM shifted left by one with the low bit saying
/// whether a pause follows (its `%globaltimer` as a signed step from the block's start, then its
/// length). A block of `scenario.sleep.grid` takes about 11 bytes, 5 more where it paused.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Narrow {
    len: usize,
    base_ns: u64,
    bytes: Box<[u8]>,
}

/// Appends `v` as a variable-length number.
fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a signed `v` (zigzag: 0, -1, 1, -2, … as 0, 1, 2, 3, …).
fn put_signed(out: &mut Vec<u8>, v: i64) {
    put(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// The variable-length number at `*at`, which moves past it. Only bytes [`put`] wrote are read.
fn take(bytes: &[u8], at: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let b = bytes[*at];
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

fn take_signed(bytes: &[u8], at: &mut usize) -> i64 {
    let v = take(bytes, at);
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// `to - from` where it fits an `i64`.
fn step(from: u64, to: u64) -> Option<i64> {
    i64::try_from(i128::from(to) - i128::from(from)).ok()
}

/// `from + by` where it stays in the clock's range.
fn after(from: u64, by: i64) -> u64 {
    (i128::from(from) + i128::from(by)) as u64
}

impl Narrow {
    /// Appends `b`, which starts `previous`'s step away; `None` where it does not fit (an end
    /// before its start, a step beyond 63 bits), with `bytes` then left as they were.
    fn put(bytes: &mut Vec<u8>, previous: u64, b: &BlockStamp) -> Option<()> {
        let mark = bytes.len();
        let fits = (|| {
            put_signed(bytes, step(previous, b.start_ns)?);
            put(bytes, b.end_ns.checked_sub(b.start_ns)?);
            put(bytes, b.cycles);
            put(bytes, u64::from(b.sm) << 1 | u64::from(b.pause.is_some()));
            if let Some(p) = b.pause {
                put_signed(bytes, step(b.start_ns, p.at_ns)?);
                put(bytes, p.ns);
            }
            Some(())
        })();
        if fits.is_none() {
            bytes.truncate(mark);
        }
        fits
    }

    /// The block at byte `*at`, after the block that started at `previous`.
    fn get(&self, at: &mut usize, previous: u64) -> BlockStamp {
        let bytes = &self.bytes[..];
        let start_ns = after(previous, take_signed(bytes, at));
        let end_ns = start_ns + take(bytes, at);
        let cycles = take(bytes, at);
        let sm = take(bytes, at);
        let pause = (sm & 1 == 1).then(|| Pause {
            at_ns: after(start_ns, take_signed(bytes, at)),
            ns: take(bytes, at),
        });
        BlockStamp {
            start_ns,
            end_ns,
            sm: (sm >> 1) as u32,
            cycles,
            pause,
        }
    }
}

impl Blocks {
    pub fn len(&self) -> usize {
        match &self.held {
            Held::Empty => 0,
            Held::Narrow(n) => n.len,
            Held::Wide(w) => w.len(),
        }
    }

    /// The bytes the stamps take in memory, beside the span that holds them.
    pub fn held_bytes(&self) -> usize {
        match &self.held {
            Held::Empty => 0,
            Held::Narrow(n) => n.bytes.len(),
            Held::Wide(w) => std::mem::size_of_val(&w[..]),
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
            at: 0,
            previous: match &self.held {
                Held::Narrow(n) => n.base_ns,
                _ => 0,
            },
        }
    }

    /// The blocks that paused, with their pause.
    pub fn pauses(&self) -> impl Iterator<Item = Pause> + '_ {
        self.iter().filter_map(|b| b.pause)
    }

    /// The longest pause of any block, the last of them where several are as long (as
    /// `pauses().max_by_key(|p| p.ns)` gives it), without reading the blocks.
    pub fn longest_pause(&self) -> Option<Pause> {
        self.longest_pause
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
    /// Where the next packed block begins, and the start of the block before it.
    at: usize,
    previous: u64,
}

impl Iterator for Iter<'_> {
    type Item = BlockStamp;

    fn next(&mut self) -> Option<BlockStamp> {
        let b = match &self.blocks.held {
            Held::Empty => return None,
            Held::Wide(w) => *w.get(self.next)?,
            Held::Narrow(n) => {
                if self.next >= n.len {
                    return None;
                }
                let b = n.get(&mut self.at, self.previous);
                self.previous = b.start_ns;
                b
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

/// Builds [`Blocks`] one stamp at a time, packing each as it comes: the stamps of a file are
/// parsed straight into their packed form, and a million of them never sit in memory as
/// [`BlockStamp`]s (56 MB, and as much again while their list grew). A stamp that cannot be
/// packed turns every stamp, before and after, into [`BlockStamp`]s, as given.
#[derive(Default)]
pub struct Packer {
    len: usize,
    first_ns: u64,
    last_ns: u64,
    longest_pause: Option<Pause>,
    base_ns: u64,
    previous: u64,
    bytes: Vec<u8>,
    wide: Option<Vec<BlockStamp>>,
}

impl Packer {
    pub fn push(&mut self, b: BlockStamp) {
        if self.len == 0 {
            (self.first_ns, self.last_ns) = (b.start_ns, b.end_ns);
            (self.base_ns, self.previous) = (b.start_ns, b.start_ns);
        }
        self.first_ns = self.first_ns.min(b.start_ns);
        self.last_ns = self.last_ns.max(b.end_ns);
        if let Some(p) = b
            .pause
            .filter(|p| self.longest_pause.map_or(true, |l| p.ns >= l.ns))
        {
            self.longest_pause = Some(p);
        }
        self.len += 1;
        if let Some(wide) = &mut self.wide {
            wide.push(b);
        } else if Narrow::put(&mut self.bytes, self.previous, &b).is_some() {
            self.previous = b.start_ns;
        } else {
            let packed = Blocks {
                held: Held::Narrow(self.narrow(self.len - 1)),
                ..Blocks::default()
            };
            let mut wide: Vec<BlockStamp> = Vec::with_capacity(self.len);
            wide.extend(packed.iter());
            wide.push(b);
            self.wide = Some(wide);
        }
    }

    /// The first `len` blocks, packed.
    fn narrow(&mut self, len: usize) -> Narrow {
        Narrow {
            len,
            base_ns: self.base_ns,
            bytes: std::mem::take(&mut self.bytes).into_boxed_slice(),
        }
    }

    pub fn finish(mut self) -> Blocks {
        if self.len == 0 {
            return Blocks::default();
        }
        let held = match self.wide.take() {
            Some(wide) => Held::Wide(wide.into_boxed_slice()),
            None => Held::Narrow(self.narrow(self.len)),
        };
        Blocks {
            first_ns: self.first_ns,
            last_ns: self.last_ns,
            longest_pause: self.longest_pause,
            held,
        }
    }
}

impl From<Vec<BlockStamp>> for Blocks {
    fn from(blocks: Vec<BlockStamp>) -> Blocks {
        blocks.into_iter().collect()
    }
}

impl<const N: usize> From<[BlockStamp; N]> for Blocks {
    fn from(blocks: [BlockStamp; N]) -> Blocks {
        Blocks::from(blocks.to_vec())
    }
}

impl FromIterator<BlockStamp> for Blocks {
    fn from_iter<I: IntoIterator<Item = BlockStamp>>(iter: I) -> Blocks {
        let mut packer = Packer::default();
        iter.into_iter().for_each(|b| packer.push(b));
        packer.finish()
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
    fn what_fits_is_packed_and_what_does_not_is_held_as_given() {
        let small = Blocks::from(vec![
            stamp(1_000, 3_000, 5, 70, None),
            stamp(900, 2_000, 131, 60, Some(2_000)),
        ]);
        assert!(matches!(small.held, Held::Narrow(_)));
        assert_eq!((small.first_ns(), small.last_ns()), (900, 3_000));
        // An end before its start (a damaged file's) and steps beyond 63 bits keep their
        // stamps as given; a block of 5 s is packed like any other.
        for odd in [
            vec![stamp(10, 5, 0, 0, None)],
            vec![
                stamp(0, 1, 0, 0, None),
                stamp(u64::MAX - 1, u64::MAX, 0, 0, None),
            ],
        ] {
            let b = Blocks::from(odd.clone());
            assert!(matches!(b.held, Held::Wide(_)));
            assert_eq!(b.to_vec(), odd);
        }
        let long = vec![stamp(0, 5_000_000_000, u32::MAX, u64::MAX, Some(u64::MAX))];
        let b = Blocks::from(long.clone());
        assert!(matches!(b.held, Held::Narrow(_)));
        assert_eq!(b.to_vec(), long);
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
            prop_assert_eq!(blocks.longest_pause(), blocks.pauses().max_by_key(|p| p.ns));
        }

        /// Any numbers at all, packed or not, read back exactly.
        #[test]
        fn any_stamps_read_back_as_given(
            raw in prop::collection::vec(
                (any::<u64>(), any::<u64>(), any::<u32>(), any::<u64>(),
                 prop::option::of((any::<u64>(), any::<u64>()))),
                0..20),
        ) {
            let given: Vec<BlockStamp> = raw
                .into_iter()
                .map(|(start_ns, end_ns, sm, cycles, p)| BlockStamp {
                    start_ns,
                    end_ns,
                    sm,
                    cycles,
                    pause: p.map(|(at_ns, ns)| Pause { at_ns, ns }),
                })
                .collect();
            prop_assert_eq!(Blocks::from(given.clone()).to_vec(), given);
        }
    }
}
