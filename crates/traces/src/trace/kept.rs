//! What one trace file may hold in memory once read, counted as it is read.
//!
//! A trace's text is bounded by the read limit, but what is kept of it is not its text: a
//! compact event of 100 bytes becomes an op of about 200 once read and joined to its call, so a
//! 15 MB gzip of five million ops took 2.2 GB, and one of 19.9 million ended in an allocation
//! abort at 1.75 GB. Each record kept (a GPU op, a CUDA call, a range) counts the bytes it is held
//! in, an op both its raw and its joined form (both live while a file is joined), and past
//! [`budget`] the file is refused with the limit and the variable that raises it, before the
//! memory is taken. Vectors grow by doubling, so the memory held is at most about twice this.

use super::error::EventError;
use super::events::{GpuOp, HostRange, RawCall};
use crate::border::limits::{read_limit, MAX_READ_BYTES};

/// The most GPU ops, calls and ranges kept from one file at the default read limit, whatever
/// their size: a 2 GiB trace holds about ten million events, a third of them kept.
pub const MAX_KEPT: usize = 20_000_000;

/// The most records kept from one file under the read limit in force: [`MAX_KEPT`], and as many
/// more as the limit is raised past its default (the docs' benchmark at 100×, 19 GiB, keeps 50
/// million); at most 2^31, so that the model's node numbers (two per act) fit in 32 bits. Its
/// edge offsets are 32 bits too (two or more edges an act): the byte budget, an eighth of the
/// read limit for some 150 bytes a record, keeps far below that unless the limit is raised to
/// a terabyte.
pub fn max_kept() -> usize {
    kept_under(read_limit())
}

fn kept_under(read_limit: u64) -> usize {
    let scaled = u128::from(read_limit) * MAX_KEPT as u128 / u128::from(MAX_READ_BYTES);
    (scaled.clamp(MAX_KEPT as u128, 1 << 31)) as usize
}

/// The bytes the records kept from one file may take: an eighth of the read limit (256 MiB by
/// default, about a million ops with their calls; the 202 MB trace of the docs keeps about a
/// fifth of that). A quarter let a trace of five million ops hold 289 MB before it was refused,
/// past the 256 MiB that every refusal must stay under.
pub fn budget() -> u64 {
    read_limit() / 8
}

/// The kind of a record kept, for its size.
#[derive(Debug, Clone, Copy)]
pub(super) enum Record {
    /// A GPU op: its raw form of `raw` bytes, then its joined [`GpuOp`].
    Op {
        raw: usize,
    },
    Call,
    Range,
    /// A sync, an event record or a stream (`syncs.rs`): counted at the size of its joined form.
    Sync,
}

impl Record {
    fn bytes(self) -> u64 {
        let b = match self {
            Record::Op { raw } => raw + std::mem::size_of::<GpuOp>(),
            Record::Call => std::mem::size_of::<RawCall>(),
            Record::Range => std::mem::size_of::<HostRange>(),
            Record::Sync => std::mem::size_of::<super::syncs::SyncCall>(),
        };
        b as u64
    }
}

/// The records kept so far from one file.
pub(super) struct Kept {
    records: usize,
    most: usize,
    bytes: u64,
    budget: u64,
}

impl Default for Kept {
    fn default() -> Kept {
        Kept {
            records: 0,
            most: max_kept(),
            bytes: 0,
            budget: budget(),
        }
    }
}

impl Kept {
    /// Counts one more record, read after `events` events; an error past [`max_kept`] records
    /// or the [`budget`].
    pub(super) fn keep(&mut self, r: Record, events: u64) -> Result<(), EventError> {
        if self.records >= self.most {
            return Err(EventError::TooManyRecords(self.most));
        }
        self.records += 1;
        self.bytes += r.bytes();
        if self.bytes > self.budget {
            return Err(EventError::RecordsTooLarge {
                budget: self.budget,
                records: self.records,
                events,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_records_kept_grow_with_a_raised_read_limit_only() {
        assert_eq!(kept_under(MAX_READ_BYTES), MAX_KEPT);
        assert_eq!(kept_under(1 << 20), MAX_KEPT);
        assert_eq!(kept_under(10 * MAX_READ_BYTES), 10 * MAX_KEPT);
        // The 100x benchmark (19.4 GiB) under three times its size: its 50 million records fit.
        assert!(kept_under((3 * 19_899) << 20) > 50_000_000);
        assert_eq!(kept_under(u64::MAX), 1 << 31);
    }
}
