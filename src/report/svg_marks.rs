//! The marks of the SVG timeline ([`super::svg`]): one op's bar or instant with its hover title,
//! a thinned run, the event record → wait arrows. Each title names the op (label and id), its
//! kind, its interval and the source that placed it, as [`super::placement`] found them.

use super::canvas::{esc, Canvas, BAR, CALL, EVENT, HOST_OP, INSTANT, LABEL, LANE, PER_LANE};
use super::placement::{count_of, describe, Lane, Mark, PlacedOp, Source};
use super::thin::{mark, Role, Run};
use crate::program::{OpId, OpKind};
use std::fmt::Write;

/// "a → b µs (d µs)", or "at a µs" for an instant.
fn times(c: &Canvas, m: &Mark) -> String {
    if m.instant {
        format!("enqueued at {:.3} µs", c.us(m.start))
    } else {
        format!(
            "{:.3} → {:.3} µs ({:.3} µs)",
            c.us(m.start),
            c.us(m.end),
            m.duration_ns() as f64 / 1e3
        )
    }
}

/// One lane being drawn.
pub(super) struct Row {
    pub index: usize,
    pub lane: Lane,
    /// The x of every mark's start on the lane, sorted: a label goes right of its bar only up to
    /// the next mark.
    pub starts: Vec<f64>,
    /// Unplaced ops drawn so far (their `?` marks stand side by side).
    pub unplaced: usize,
}

/// One op's mark (or its call's) with its title.
pub(super) fn one(s: &mut String, c: &Canvas, row: &mut Row, p: &PlacedOp, role: Role) {
    let m = match mark(p, role) {
        Ok(m) => m,
        Err(why) => return unplaced(s, c, row, p, why),
    };
    let y = c.lane_y(row.index);
    let label = c.label(p.op);
    let (xa, xb) = (c.x(m.start), c.x(m.end).max(c.x(m.start) + 1.5));
    let source = m.source.describe(m.slack_ns);
    if role == Role::Call {
        let _ = write!(
            s,
            r##"<g><title>host call issuing {} (op {}): {}, {source}</title><rect x="{xa:.1}" y="{}" width="{:.1}" height="{}" rx="2" fill="{CALL}"/></g>"##,
            esc(&label),
            p.op.0,
            times(c, &m),
            y + (LANE - BAR) / 2.0 + 4.0,
            xb - xa,
            BAR - 8.0
        );
        return;
    }
    let _ = write!(
        s,
        "<g><title>{} (op {}): {} on {}, {}, {source}{}</title>",
        esc(&label),
        p.op.0,
        esc(&describe(c.program, p.op)),
        esc(&c.lane_name(p.lane)),
        times(c, &m),
        esc(&title_extra(c, p, &m))
    );
    shape(s, c, row, p, &m, (xa, xb, y), &label);
}

/// The `?` of an op not placed in this trial, with why in its title.
fn unplaced(s: &mut String, c: &Canvas, row: &mut Row, p: &PlacedOp, why: impl std::fmt::Display) {
    let y = c.lane_y(row.index);
    let x = LABEL + 2.0 + 9.0 * row.unplaced as f64;
    row.unplaced += 1;
    let _ = write!(
        s,
        r##"<g><title>{} (op {}): {} on {}, not placed in this trial: {why}</title><text x="{x:.1}" y="{}" fill="#c0392b" font-weight="700">?</text></g>"##,
        esc(&c.label(p.op)),
        p.op.0,
        esc(&describe(c.program, p.op)),
        esc(&c.lane_name(p.lane)),
        y + LANE / 2.0 + 4.0
    );
}

/// The end of a placed op's title: its blocks and SMs, what a graph launch's span is, the graph
/// it was captured into.
fn title_extra(c: &Canvas, p: &PlacedOp, m: &Mark) -> String {
    let kind = c.program.op(p.op).map(|o| &o.kind);
    let mut extra = String::new();
    if let Some(span) = c.timeline.span(p.op) {
        let sms = span.sms();
        let _ = write!(extra, ", {} block(s) on ", span.blocks.len());
        if sms.len() > 8 {
            let _ = write!(extra, "{} SMs", sms.len());
        } else {
            let list: Vec<String> = sms.iter().map(u32::to_string).collect();
            let _ = write!(extra, "SM {}", list.join(", "));
        }
    }
    if matches!(kind, Some(OpKind::GraphLaunch { .. })) && !m.instant {
        extra.push_str(", the span of what its graph ran");
    }
    if let Some(end) = p.graph {
        let _ = write!(
            extra,
            ", captured into the graph made by {} (op {}), run by its launch",
            c.label(end),
            end.0
        );
    }
    extra
}

/// A placed op's shape, by its kind, from `xa` to `xb` on the lane at `y`, and the `</g>` that
/// closes its title's group.
fn shape(
    s: &mut String,
    c: &Canvas,
    row: &Row,
    p: &PlacedOp,
    m: &Mark,
    (xa, xb, y): (f64, f64, f64),
    label: &str,
) {
    let kind = c.program.op(p.op).map(|o| &o.kind);
    let top = y + (LANE - BAR) / 2.0;
    let fill = c.fill(p.lane);
    if m.instant {
        let (xm, ym) = (xa, y + LANE / 2.0);
        let colour = match kind {
            Some(OpKind::Record { .. } | OpKind::Wait { .. }) => EVENT,
            _ => INSTANT,
        };
        let _ = write!(
            s,
            r##"<path d="M {xm:.1} {:.1} l 5 7 l -5 7 l -5 -7 z" fill="{colour}" stroke="#fff" stroke-width="0.8"/></g>"##,
            ym - 7.0
        );
        return;
    }
    match kind {
        Some(OpKind::GraphLaunch { .. }) => {
            let _ = write!(
                s,
                r##"<path d="M {xa:.1} {:.1} v -3 H {xb:.1} v 3" fill="none" stroke="#222" stroke-width="1.5"/></g>"##,
                top + 1.0
            );
            return;
        }
        Some(OpKind::HostFn { .. }) => {
            let _ = write!(
                s,
                r##"<rect x="{xa:.1}" y="{top}" width="{:.1}" height="{BAR}" rx="3" fill="#b8b8b8" stroke="#00000055" stroke-dasharray="3 2"/>"##,
                xb - xa
            );
        }
        Some(OpKind::Copy { .. }) => {
            let dash = if m.source == Source::Events {
                r#" stroke-dasharray="4 2""#
            } else {
                ""
            };
            let _ = write!(
                s,
                r##"<rect x="{xa:.1}" y="{top}" width="{:.1}" height="{BAR}" rx="3" fill="{fill}" fill-opacity="0.45" stroke="{fill}" stroke-width="1.5"{dash}/>"##,
                xb - xa
            );
        }
        _ if p.lane == Lane::Host => {
            let _ = write!(
                s,
                r##"<rect x="{xa:.1}" y="{}" width="{:.1}" height="{}" rx="2" fill="{HOST_OP}"/></g>"##,
                top + 4.0,
                xb - xa,
                BAR - 8.0
            );
            return;
        }
        _ => {
            let _ = write!(
                s,
                r##"<rect x="{xa:.1}" y="{top}" width="{:.1}" height="{BAR}" rx="3" fill="{fill}" stroke="#00000033"/>"##,
                xb - xa
            );
            block_ticks(s, c, p.op, top);
        }
    }
    let solid = !matches!(kind, Some(OpKind::Copy { .. }));
    bar_text(s, row, (xa, xb), top, label, solid);
    s.push_str("</g>");
}

/// Multi-block kernels: a tick at the bottom of the bar for each distinct block start (to the
/// pixel), so waves of blocks and blocks dispatched late are visible.
fn block_ticks(s: &mut String, c: &Canvas, op: OpId, top: f64) {
    let Some(span) = c.timeline.span(op) else {
        return;
    };
    if span.blocks.len() < 2 {
        return;
    }
    let mut ticks: Vec<i64> = span
        .blocks
        .iter()
        .map(|b| (c.x(i64::try_from(b.start_ns).unwrap_or(i64::MAX)) * 2.0).round() as i64)
        .collect();
    ticks.sort_unstable();
    ticks.dedup();
    let mut path = String::new();
    for t in ticks {
        let _ = write!(path, "M {:.1} {:.1} v 5 ", t as f64 / 2.0, top + BAR - 5.0);
    }
    let _ = write!(
        s,
        r##"<path d="{path}" stroke="#ffffffcc" stroke-width="1"/>"##
    );
}

/// The label in the bar where it fits (white on a solid bar), else right of it where that
/// leaves the next mark clear, else none (the title has it).
fn bar_text(s: &mut String, row: &Row, (xa, xb): (f64, f64), top: f64, label: &str, solid: bool) {
    let text_w = 7.0 * label.chars().count() as f64 + 8.0;
    let next = row
        .starts
        .iter()
        .find(|&&x| x > xb + 0.5)
        .copied()
        .unwrap_or(f64::INFINITY);
    let y = top + BAR / 2.0 + 4.0;
    if xb - xa >= text_w {
        let fill = if solid { "#fff" } else { "#111" };
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{y}" text-anchor="middle" fill="{fill}" font-weight="600">{}</text>"##,
            (xa + xb) / 2.0,
            esc(label)
        );
    } else if xb + text_w <= next {
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{y}" fill="#222">{}</text>"##,
            xb + 3.0,
            esc(label)
        );
    }
}

/// A thinned run: one hatched bar from its first start to its last end, one title.
pub(super) fn run(s: &mut String, c: &Canvas, row: &Row, r: &Run) {
    let lane = row.lane;
    let names = format!("{}..{}", c.label(r.first), c.label(r.last));
    let whose = match r.role {
        Role::Op => String::new(),
        Role::Call => "host calls issuing ".into(),
    };
    let source = r
        .source
        .map_or("from mixed sources".into(), |src| src.describe(r.slack_ns));
    let (Some(a), Some(b)) = (r.start, r.end) else {
        let _ = write!(
            s,
            r##"<g><title>{whose}{} (ops {}–{}): {} on {}, none placed in this trial</title><text x="{:.1}" y="{}" fill="#c0392b" font-weight="700">?</text></g>"##,
            esc(&names),
            r.first.0,
            r.last.0,
            count_of(r.kind, r.count),
            esc(&c.lane_name(lane)),
            LABEL + 2.0,
            c.lane_y(row.index) + LANE / 2.0 + 4.0
        );
        return;
    };
    let (xa, xb) = (c.x(a), c.x(b).max(c.x(a) + 1.5));
    let (top, h, fill) = match r.role {
        Role::Call => (
            c.lane_y(row.index) + (LANE - BAR) / 2.0 + 4.0,
            BAR - 8.0,
            CALL,
        ),
        Role::Op => (c.lane_y(row.index) + (LANE - BAR) / 2.0, BAR, c.fill(lane)),
    };
    let missing = if r.unplaced > 0 {
        format!(", {} not placed", r.unplaced)
    } else {
        String::new()
    };
    let _ = write!(
        s,
        r##"<g><title>{whose}{} (ops {}–{}): {} on {}, {:.3} → {:.3} µs, busy {:.3} µs in all, {source}{missing}; thinned: more than {PER_LANE} marks on this lane, the trace has each</title><rect x="{xa:.1}" y="{top}" width="{:.1}" height="{h}" rx="3" fill="{fill}" fill-opacity="0.55" stroke="{fill}" stroke-dasharray="2 2"/>"##,
        esc(&names),
        r.first.0,
        r.last.0,
        count_of(r.kind, r.count),
        esc(&c.lane_name(lane)),
        c.us(a),
        c.us(b),
        r.busy_ns as f64 / 1e3,
        xb - xa,
    );
    if r.role == Role::Op {
        bar_text(
            s,
            row,
            (xa, xb),
            top,
            &format!("{names} ×{}", r.count),
            false,
        );
    }
    s.push_str("</g>");
}

/// Event edges: from the last bar on the record's lane before it (or the record itself) to the
/// first bar on the wait's lane after it (or the wait itself).
pub(super) fn edges(s: &mut String, c: &Canvas, placed: &[PlacedOp], id: &str) {
    let mut last_record = vec![None; c.program.events.len()];
    for p in placed {
        let Some(op) = c.program.op(p.op) else {
            continue;
        };
        let (event, wait) = match op.kind {
            OpKind::Record { event, .. } => {
                if let Some(slot) = last_record.get_mut(event.0) {
                    *slot = Some(p);
                }
                continue;
            }
            OpKind::Wait { event, .. } => (event, p),
            _ => continue,
        };
        let Some(Some(record)) = last_record.get(event.0).copied() else {
            continue;
        };
        let bar = |q: &&PlacedOp| q.lane == record.lane && q.at.is_ok_and(|m| !m.instant);
        let from = placed[..record.op.0.min(placed.len())]
            .iter()
            .rev()
            .find(bar)
            .and_then(|q| q.at.ok())
            .map(|m| m.end)
            .or_else(|| record.at.ok().map(|m| m.start));
        let after = |q: &&PlacedOp| q.lane == wait.lane && q.at.is_ok_and(|m| !m.instant);
        let to = placed
            .get(wait.op.0.saturating_add(1)..)
            .unwrap_or_default()
            .iter()
            .find(after)
            .and_then(|q| q.at.ok())
            .map(|m| m.start)
            .or_else(|| wait.at.ok().map(|m| m.start));
        let (Some(from), Some(to), Some(rr), Some(wr)) =
            (from, to, c.row(record.lane), c.row(wait.lane))
        else {
            continue;
        };
        let (x1, y1, x2, y2) = (
            c.x(from),
            c.lane_y(rr) + LANE / 2.0,
            c.x(to),
            c.lane_y(wr) + LANE / 2.0,
        );
        let name = c
            .program
            .events
            .get(event.0)
            .map_or_else(|| format!("e{}", event.0), |e| e.label.clone());
        let _ = write!(
            s,
            r##"<g><title>event {}: recorded on {} (op {}), waited on by {} (op {})</title><path d="M {x1:.1} {y1:.1} C {:.1} {y1:.1}, {:.1} {y2:.1}, {x2:.1} {y2:.1}" fill="none" stroke="{EVENT}" stroke-width="1.6" marker-end="url(#arrow-{id})"/><circle cx="{x1:.1}" cy="{y1:.1}" r="3" fill="{EVENT}"/></g>"##,
            esc(&name),
            esc(&c.lane_name(record.lane)),
            record.op.0,
            esc(&c.lane_name(wait.lane)),
            wait.op.0,
            x1 + (x2 - x1) * 0.5,
            x1 + (x2 - x1) * 0.5,
        );
    }
}
