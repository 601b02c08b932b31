//! How a check names itself and its figures: the words of evidence lines and reasons.

use super::{buffer_label, Check};
use crate::program::{OpId, Program};

impl Check {
    /// What the measured value is, for evidence lines.
    pub fn quantity(&self) -> &'static str {
        match self {
            Check::Precedes { .. } => "gap",
            Check::Overlaps { .. } => "overlap",
            Check::Interleaves { .. } | Check::Behind { .. } => "lead",
            Check::Uninterrupted { .. } => "excess",
            Check::ElapsedCovers { .. } => "events beyond stamps",
            Check::ReturnsBefore { .. } => "returned before the end by",
            Check::ReturnsAfter { .. } => "returned after the end by",
            Check::Answers { .. } => "asked after the end by",
            Check::Separates { .. } => "overlap",
            Check::Reuses { .. } => "address offset",
            Check::LaunchCheaper { .. } => "host time saved",
            Check::Serializes { .. } => "overlap",
            Check::Blocks { .. } => "still in flight at the return",
            Check::Faster { .. } => "time saved",
            Check::Contents { .. } => "elements differing",
            Check::MemoryIs { .. } => "memory found",
        }
    }

    /// The words for measured values from `min` to `max`, and whether to show them negated, so
    /// that every figure reads in its own direction: a query asked 502 µs before the end is
    /// "asked before the end by 502 µs", never "asked after the end by −502 µs". Values on both
    /// sides of zero keep their signs, under words that name no side.
    pub fn quantity_for(&self, min: i64, max: i64) -> (&'static str, bool) {
        let sides = match self {
            Check::ReturnsBefore { .. } => {
                Some(("returned after the end by", "returned, against the end,"))
            }
            Check::ReturnsAfter { .. } => {
                Some(("returned before the end by", "returned, against the end,"))
            }
            Check::Answers { .. } => Some(("asked before the end by", "asked, against the end,")),
            Check::Precedes { .. } => Some(("overlap", "gap (+) or overlap (−)")),
            Check::Overlaps { .. } | Check::Separates { .. } | Check::Serializes { .. } => {
                Some(("gap", "overlap (+) or gap (−)"))
            }
            _ => None,
        };
        match sides {
            Some((opposite, _)) if max < 0 => (opposite, true),
            Some((_, neither)) if min < 0 && max > 0 => (neither, false),
            _ => (self.quantity(), false),
        }
    }

    /// "A→B" or "A∥B", with the program's labels.
    pub fn describe(&self, program: &Program) -> String {
        let two = |x: OpId, symbol: &str, y: OpId| {
            format!("{}{symbol}{}", program.label(x), program.label(y))
        };
        match *self {
            Check::Precedes { before, after } => two(before, "→", after),
            Check::Overlaps { a, b } => two(a, "∥", b),
            Check::Interleaves { low, high } => two(high, "⤼", low),
            Check::Behind { low, high } => two(low, "…", high),
            Check::Uninterrupted { op, by } => two(op, "▮", by),
            Check::ElapsedCovers { elapsed, span } => two(elapsed, "⊇", span),
            Check::ReturnsBefore { call, span } => two(call, "↩<", span),
            Check::ReturnsAfter { call, span } => two(call, "↩>", span),
            Check::Answers { query, span } => two(query, "?", span),
            Check::Separates {
                call,
                before,
                after,
            } => format!("{}|{}", two(before, "|", call), program.label(after)),
            Check::Reuses { first, second } => two(first, "=", second),
            Check::LaunchCheaper { graph, first, last } => {
                format!("{}..{}", two(graph, "<", first), program.label(last))
            }
            Check::Serializes { a, b } => two(a, "⊥", b),
            Check::Blocks { call, span } => two(call, "⊒", span),
            Check::Faster { slow, fast } => format!(
                "[{}..{}]<[{}..{}]",
                program.label(fast.0),
                program.label(fast.1),
                program.label(slow.0),
                program.label(slow.1)
            ),
            Check::Contents { buffer, value } => {
                format!("{}≡{value}", buffer_label(program, buffer))
            }
            Check::MemoryIs { buffer, place } => {
                format!("{}∈{place}", buffer_label(program, buffer))
            }
        }
    }
}
