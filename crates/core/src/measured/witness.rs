//! The second witness: spans of ops no kernel can stamp (copies), seen by CUPTI or by events.
//!
//! A copy runs on a copy engine, so no `%globaltimer` stamp can mark it. Its span comes from a
//! witness with a clock of its own:
//! - **CUPTI** activity records (kernels, memcpys, memsets) carry start and end times in CUPTI's
//!   clock, taken by the GPU itself.
//! - **Events** recorded just before and just after the copy in its stream, read with
//!   `cuEventElapsedTime` from a reference event. An event completes when the stream reaches it,
//!   so the pair brackets the copy together with anything the copy waited for: an outer bound,
//!   weaker evidence than CUPTI's.
//!
//! Either clock is put on the `%globaltimer` axis the same way: through *anchors*, stamped
//! kernels the witness also saw (every stamped kernel of the trial under CUPTI, plus a marker
//! kernel before and after the trial). Each anchor gives two offsets, one from its starts and one
//! from its ends; the witness offset is the median of them all, and the largest disagreement of
//! any anchor with it, plus the witness's own resolution, is the alignment error that widens every
//! comparison a witnessed span enters. The cross-check of every stamped kernel against its CUPTI
//! record is that same disagreement, reported per trial.

use crate::program::OpId;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Which witness saw a trial's copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WitnessKind {
    /// CUPTI activity records: the device's own start and end of each copy.
    Cupti,
    /// Timed events recorded around each copy: an outer bound of it.
    Events,
}

impl WitnessKind {
    /// The witness clock's own resolution, added to the alignment error: CUPTI times are
    /// nanoseconds of the GPU's timer; `cuEventElapsedTime` has "a resolution of around 0.5
    /// microseconds" (CUDA documentation).
    pub fn resolution_ns(self) -> u64 {
        match self {
            WitnessKind::Cupti => 0,
            WitnessKind::Events => 500,
        }
    }

    /// What the evidence of a witnessed span is worth, for evidence lines.
    pub fn strength(self) -> &'static str {
        match self {
            WitnessKind::Cupti => "copy spans from CUPTI activity records",
            WitnessKind::Events => {
                "copy spans from events around each copy (no CUPTI): weaker evidence, an outer \
                 bound that also holds whatever the copy waited for in its stream"
            }
        }
    }
}

impl fmt::Display for WitnessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WitnessKind::Cupti => "CUPTI",
            WitnessKind::Events => "events",
        })
    }
}

/// A span in the witness's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WitnessSpan {
    pub op: OpId,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// A stamped kernel the witness also saw: its stamped span and the witness's span of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    pub stamped: (i64, i64),
    pub witnessed: (i64, i64),
}

/// How the witness clock maps to `%globaltimer`: `gpu = witness + offset_ns`, within
/// `±error_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WitnessSync {
    pub kind: WitnessKind,
    pub offset_ns: i64,
    /// The largest disagreement of an anchor with the offset, plus the witness's resolution.
    pub error_ns: u64,
    /// How many stamped kernels were cross-checked.
    pub anchors: u32,
    /// The largest disagreement between a stamped kernel and the witness's span of it, in ns.
    pub disagreement_ns: u64,
}

impl WitnessSync {
    /// Aligns with `anchors`; `None` without any.
    pub fn align(kind: WitnessKind, anchors: &[Anchor]) -> Option<WitnessSync> {
        let mut offsets: Vec<i64> = anchors
            .iter()
            .flat_map(|a| [a.stamped.0 - a.witnessed.0, a.stamped.1 - a.witnessed.1])
            .collect();
        if offsets.is_empty() {
            return None;
        }
        offsets.sort_unstable();
        let offset = offsets[offsets.len() / 2];
        let disagreement = offsets
            .iter()
            .map(|o| (o - offset).unsigned_abs())
            .max()
            .unwrap_or(0);
        Some(WitnessSync {
            kind,
            offset_ns: offset,
            error_ns: disagreement + kind.resolution_ns(),
            anchors: anchors.len() as u32,
            disagreement_ns: disagreement,
        })
    }

    /// "CUPTI aligned within ±1.20 µs (12 kernels cross-checked, largest disagreement 1.20 µs)".
    pub fn describe(&self) -> String {
        format!(
            "{} aligned to %globaltimer within ±{:.2} µs ({} stamped kernel{} cross-checked, \
             largest disagreement {:.2} µs)",
            self.kind,
            self.error_ns as f64 / 1e3,
            self.anchors,
            if self.anchors == 1 { "" } else { "s" },
            self.disagreement_ns as f64 / 1e3
        )
    }
}
