//! One trial as an SVG timeline, in the spirit of Nsight Systems: a time axis in µs at the top,
//! one lane per stream (its kind in the label), a host lane with the API calls, a bar or mark
//! per op with exact numbers in its hover title, and event record → wait edges as arrows.
//!
//! Every op is drawn where [`placed_ops`] puts it, so this picture, the terminal's and the trace
//! agree: kernels and vector adds from their stamps, copies from their witness, host functions
//! and host calls by the host clock, enqueued ops (records, waits, async allocations and frees)
//! as instants, a graph launch as a bracket over what its graph ran. Every title names the op,
//! its kind, its interval and the source that placed it. An op with no place in the trial is a
//! `?` at the start of its lane. Dense lanes are thinned ([`thin`]) into runs with one title.

use super::canvas::{
    colour, esc, Canvas, AXIS, CALL, EVENT, FONT, LABEL, LANE, PER_LANE, RIGHT, WIDTH,
};
use super::placement::{extent, origin, placed_ops, Lane};
use super::svg_marks::{edges, one, run, Row};
use super::thin::{mark, thin, Drawn};
use crate::measured::timeline::Timeline;
use crate::program::{Program, StreamKind};
use std::fmt::Write;

/// A "nice" tick step (1, 2 or 5 × 10^k µs) giving at most about ten ticks over `span_us`.
fn tick_step(span_us: f64) -> f64 {
    let raw = (span_us / 10.0).max(1e-3);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag)
}

/// The SVG of one trial. `id` makes marker ids unique when a page holds several timelines.
pub fn timeline_svg(program: &Program, timeline: &Timeline, id: &str) -> String {
    let placed = placed_ops(program, timeline);
    let lanes = thin(program, &placed, true, PER_LANE);
    let rows = lane_rows(program, lanes.iter().any(|(l, _)| *l == Lane::Host));
    let zero = origin(&placed);
    let (first, last) = extent(&placed, true).unwrap_or((zero, zero));
    let lo = first.saturating_sub(zero).min(0);
    let hi = last.saturating_sub(zero).max(lo.saturating_add(1));
    let c = Canvas {
        program,
        timeline,
        rows,
        origin: zero,
        lo,
        span_ns: hi.saturating_sub(lo).max(1) as f64,
    };
    let height = AXIS + c.rows.len() as f64 * LANE + 8.0;

    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" font-family="{FONT}" font-size="12" role="img" aria-label="timeline of {}">"#,
        esc(&program.name)
    );
    let _ = write!(
        s,
        r##"<defs><marker id="arrow-{id}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="{EVENT}"/></marker></defs>"##
    );
    for (i, (_, label, kind)) in c.rows.iter().enumerate() {
        let y = c.lane_y(i);
        let fill = if i % 2 == 0 { "#f6f7f9" } else { "#ffffff" };
        let _ = write!(
            s,
            r##"<rect x="0" y="{y}" width="{WIDTH}" height="{LANE}" fill="{fill}"/><rect x="8" y="{}" width="10" height="10" rx="2" fill="{}"/><text x="24" y="{}" fill="#222">{}</text>"##,
            y + LANE / 2.0 - 5.0,
            kind.map(colour).unwrap_or(CALL),
            y + LANE / 2.0 + 4.0,
            esc(label)
        );
    }
    axis(&mut s, &c, lo, hi, height);
    for (lane, drawn) in &lanes {
        lane_marks(&mut s, &c, *lane, drawn);
    }
    edges(&mut s, &c, &placed, id);
    s.push_str("</svg>");
    s
}

/// The timeline's rows: each stream the program uses, labelled with its priority, then the
/// host's where it has marks.
fn lane_rows(program: &Program, host: bool) -> Vec<(Lane, String, Option<StreamKind>)> {
    let mut rows = Vec::new();
    for (i, s) in program.streams.iter().enumerate() {
        let sid = crate::program::StreamId(i);
        if program.uses_stream(sid) {
            let mut label = s.display_label();
            if let Some(p) = s.priority {
                label.push_str(match p {
                    crate::program::Priority::Lowest => " · low prio",
                    crate::program::Priority::Highest => " · high prio",
                });
            }
            rows.push((Lane::Stream(sid), label, Some(s.kind)));
        }
    }
    if host {
        rows.push((Lane::Host, "host (API calls)".into(), None));
    }
    rows
}

/// The marks of one lane, each op's or run's, knowing where every mark of the lane starts.
fn lane_marks(s: &mut String, c: &Canvas, lane: Lane, drawn: &[Drawn]) {
    let Some(index) = c.row(lane) else { return };
    let mut starts: Vec<f64> = drawn
        .iter()
        .filter_map(|d| match d {
            Drawn::One { placed, role } => mark(placed, *role).ok().map(|m| m.start),
            Drawn::Run(r) => r.start,
        })
        .map(|t| c.x(t))
        .collect();
    starts.sort_by(f64::total_cmp);
    let mut row = Row {
        index,
        lane,
        starts,
        unplaced: 0,
    };
    for d in drawn {
        match d {
            Drawn::One { placed, role } => one(s, c, &mut row, placed, *role),
            Drawn::Run(r) => run(s, c, &row, r),
        }
    }
}

/// The time axis with grid lines.
fn axis(s: &mut String, c: &Canvas, lo: i64, hi: i64, height: f64) {
    let step_us = tick_step(c.span_ns / 1e3);
    let first = (lo as f64 / 1e3 / step_us).ceil() as i64;
    let last = (hi as f64 / 1e3 / step_us).floor() as i64;
    let _ = write!(
        s,
        r##"<line x1="{LABEL}" y1="{AXIS}" x2="{}" y2="{AXIS}" stroke="#999"/>"##,
        WIDTH - RIGHT
    );
    for k in first..=last {
        let t_us = k as f64 * step_us;
        let xt = c.x(c.origin.saturating_add((t_us * 1e3) as i64));
        let _ = write!(
            s,
            r##"<line x1="{xt:.1}" y1="{AXIS}" x2="{xt:.1}" y2="{}" stroke="#e3e5e8"/><line x1="{xt:.1}" y1="{}" x2="{xt:.1}" y2="{AXIS}" stroke="#999"/><text x="{xt:.1}" y="{}" text-anchor="middle" fill="#555">{}</text>"##,
            height - 8.0,
            AXIS - 5.0,
            AXIS - 9.0,
            trim(t_us)
        );
    }
    let _ = write!(
        s,
        r##"<text x="24" y="{}" fill="#555">time (µs)</text>"##,
        AXIS - 9.0
    );
}

/// "20", "2.5", "0.25": a tick label without trailing zeros.
fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}
