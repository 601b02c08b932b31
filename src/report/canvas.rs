//! The canvas a timeline is drawn on: its sizes and colours, text made safe for SVG, and the
//! mapping from `%globaltimer` time and lanes to x and y. Shared by the picture (`svg.rs`) and the
//! marks drawn on it (`svg_marks.rs`), below both.

use super::placement::Lane;
use crate::measured::timeline::Timeline;
use crate::program::{OpId, Program, StreamKind};

pub(super) const WIDTH: f64 = 1100.0;
pub(super) const LABEL: f64 = 190.0;
pub(super) const RIGHT: f64 = 24.0;
pub(super) const AXIS: f64 = 34.0;
pub(super) const LANE: f64 = 30.0;
pub(super) const BAR: f64 = 20.0;
/// Marks per lane beyond which a lane is thinned into runs.
pub const PER_LANE: usize = 48;
pub(super) const FONT: &str =
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";
/// Host calls that issued stream ops, and host-side ops.
pub const CALL: &str = "#8c8c8c";
pub(super) const HOST_OP: &str = "#4d5360";
pub(super) const EVENT: &str = "#6a3d9a";
pub(super) const INSTANT: &str = "#1f5f66";

/// Bar colour per stream kind.
pub fn colour(kind: StreamKind) -> &'static str {
    match kind {
        StreamKind::LegacyNull => "#d1495b",
        StreamKind::PerThread => "#edae49",
        StreamKind::Blocking => "#3b75af",
        StreamKind::NonBlocking => "#3f9b5b",
    }
}

/// Escapes text for XML content and attributes: markup characters as entities, and control
/// characters, which XML 1.0 forbids even as references, as visible text ([`super::shown`]).
pub fn esc(text: &str) -> String {
    super::shown::shown(text)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The HTML anchor of a claim: `claim-` and its id, one-to-one, so that two claims never share
/// one (`x.a-b` and `x.a_b` once both became `claim-x-a-b`). Letters, digits, `.` and `_` stand
/// for themselves; any other character is written `-HEX-`, its code point.
pub fn anchor(id: &str) -> String {
    let mut a = String::from("claim-");
    for c in id.chars() {
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            a.push(c);
        } else {
            a.push_str(&format!("-{:x}-", u32::from(c)));
        }
    }
    a
}

/// The drawing context of one timeline: its lanes and its time scale.
pub(super) struct Canvas<'a> {
    pub(super) program: &'a Program,
    pub(super) timeline: &'a Timeline,
    /// (lane, label, stream kind for the swatch).
    pub(super) rows: Vec<(Lane, String, Option<StreamKind>)>,
    pub(super) origin: i64,
    pub(super) lo: i64,
    pub(super) span_ns: f64,
}

impl Canvas<'_> {
    /// The x of a `%globaltimer` time.
    pub(super) fn x(&self, t: i64) -> f64 {
        LABEL
            + t.saturating_sub(self.origin).saturating_sub(self.lo) as f64 / self.span_ns
                * (WIDTH - LABEL - RIGHT)
    }

    /// µs since the picture's zero.
    pub(super) fn us(&self, t: i64) -> f64 {
        t.saturating_sub(self.origin) as f64 / 1e3
    }

    pub(super) fn row(&self, lane: Lane) -> Option<usize> {
        self.rows.iter().position(|(l, ..)| *l == lane)
    }

    pub(super) fn lane_y(&self, row: usize) -> f64 {
        AXIS + row as f64 * LANE
    }

    pub(super) fn lane_name(&self, lane: Lane) -> String {
        match lane {
            Lane::Host => "the host".into(),
            Lane::Stream(s) => self
                .program
                .stream(s)
                .map_or_else(|| format!("s{}", s.0), |s| s.label.clone()),
        }
    }

    pub(super) fn fill(&self, lane: Lane) -> &'static str {
        match lane {
            Lane::Stream(s) => self.program.stream(s).map_or(CALL, |s| colour(s.kind)),
            Lane::Host => HOST_OP,
        }
    }

    pub(super) fn label(&self, op: OpId) -> String {
        self.program.label(op)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn anchors_are_one_to_one() {
        let ids = ["x.a.b", "x.a-b", "x.a_b", "x.a-2d-b", "x a", "x\na", "ä"];
        let anchors: std::collections::HashSet<String> =
            ids.iter().map(|i| super::anchor(i)).collect();
        assert_eq!(anchors.len(), ids.len(), "{anchors:?}");
        assert_eq!(super::anchor("fifo.legacy_null"), "claim-fifo.legacy_null");
        assert_eq!(super::anchor("x.a-b"), "claim-x.a-2d-b");
        assert!(anchors.iter().all(|a| !a.contains(['\n', ' ', '"', '<'])));
    }
}
