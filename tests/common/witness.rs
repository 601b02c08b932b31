//! A witness clock for hand-made timelines: copies seen by CUPTI at a known offset and error.

use stream_litmus::{OpId, WitnessKind, WitnessSpan, WitnessSync};

/// Witness time w is GPU time w + 900 000, within ±200 ns (CUPTI: no resolution added).
pub const WITNESS_OFFSET: i64 = 900_000;
pub const WITNESS_ERROR: u64 = 200;
pub const SYNC: WitnessSync = sync(WITNESS_ERROR);

pub const fn sync(error_ns: u64) -> WitnessSync {
    WitnessSync {
        kind: WitnessKind::Cupti,
        offset_ns: WITNESS_OFFSET,
        error_ns,
        anchors: 4,
        disagreement_ns: error_ns,
    }
}

/// A copy witnessed from GPU time `start` to `end` (stored in the witness's clock).
pub fn witnessed(op: OpId, start: i64, end: i64) -> WitnessSpan {
    WitnessSpan {
        op,
        start_ns: start - WITNESS_OFFSET,
        end_ns: end - WITNESS_OFFSET,
    }
}

/// The op of a lone witnessed copy.
pub const COPY: OpId = OpId(0);
