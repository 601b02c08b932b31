//! One trial as an SVG timeline, in the spirit of Nsight Systems: a time axis in µs at the top,
//! one lane per stream (its kind in the label), a host lane with the API calls, bars labelled by
//! op with exact numbers in their hover titles, and event record → wait edges as arrows.
//!
//! Host calls and host functions are placed on the GPU clock with [`Timeline::host_offset_ns`]:
//! the measured clock sync where the trial has one (within about a microsecond), else the
//! host-to-GPU offset (within the launch latency).

use crate::program::{OpId, OpKind, Program, StreamKind};
use crate::timeline::Timeline;
use std::fmt::Write;

const WIDTH: f64 = 1100.0;
const LABEL: f64 = 190.0;
const RIGHT: f64 = 24.0;
const AXIS: f64 = 34.0;
const LANE: f64 = 30.0;
const BAR: f64 = 20.0;
const FONT: &str =
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";

/// Bar colour per stream kind.
pub fn colour(kind: StreamKind) -> &'static str {
    match kind {
        StreamKind::LegacyNull => "#d1495b",
        StreamKind::PerThread => "#edae49",
        StreamKind::Blocking => "#3b75af",
        StreamKind::NonBlocking => "#3f9b5b",
    }
}

/// Escapes text for XML content and attributes.
pub fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

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

struct Lanes {
    /// Lane of each program stream, or `None` if the stream has no ops.
    of_stream: Vec<Option<usize>>,
    labels: Vec<(String, Option<StreamKind>)>,
    host: Option<usize>,
}

fn lanes(program: &Program, timeline: &Timeline) -> Lanes {
    let mut of_stream = vec![None; program.streams.len()];
    let mut labels = Vec::new();
    for (i, s) in program.streams.iter().enumerate() {
        if program.uses_stream(crate::program::StreamId(i)) {
            of_stream[i] = Some(labels.len());
            let mut label = s.display_label();
            if let Some(p) = s.priority {
                label.push_str(match p {
                    crate::program::Priority::Lowest => " · low prio",
                    crate::program::Priority::Highest => " · high prio",
                });
            }
            labels.push((label, Some(s.kind)));
        }
    }
    let host = (!timeline.host_calls.is_empty()).then(|| {
        labels.push(("host (API calls)".into(), None));
        labels.len() - 1
    });
    Lanes {
        of_stream,
        labels,
        host,
    }
}

/// The SVG of one trial. `id` makes marker ids unique when a page holds several timelines.
pub fn timeline_svg(program: &Program, timeline: &Timeline, id: &str) -> String {
    let lanes = lanes(program, timeline);
    let origin = timeline.origin_ns() as i64;
    let offset = timeline.host_offset_ns().unwrap_or(origin);
    let host_at = |ns: u64| ns as i64 + offset - origin;
    // The time range: every span, and the host calls placed on the GPU clock.
    let mut lo = 0i64;
    let mut hi = timeline.makespan_ns() as i64;
    for c in &timeline.host_calls {
        lo = lo.min(host_at(c.begin_ns));
        hi = hi.max(host_at(c.end_ns));
    }
    for h in &timeline.host_spans {
        hi = hi.max(host_at(h.end_ns));
    }
    let span_ns = (hi - lo).max(1) as f64;
    let plot = WIDTH - LABEL - RIGHT;
    let x = |t_ns: i64| LABEL + (t_ns - lo) as f64 / span_ns * plot;
    let lane_y = |lane: usize| AXIS + lane as f64 * LANE;
    let height = AXIS + lanes.labels.len() as f64 * LANE + 8.0;

    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" font-family="{FONT}" font-size="12" role="img" aria-label="timeline of {}">"#,
        esc(&program.name)
    );
    let _ = write!(
        s,
        r##"<defs><marker id="arrow-{id}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#6a3d9a"/></marker></defs>"##
    );
    // Lane backgrounds and labels.
    for (i, (label, kind)) in lanes.labels.iter().enumerate() {
        let y = lane_y(i);
        let fill = if i % 2 == 0 { "#f6f7f9" } else { "#ffffff" };
        let _ = write!(
            s,
            r##"<rect x="0" y="{y}" width="{WIDTH}" height="{LANE}" fill="{fill}"/>"##
        );
        let swatch = kind.map(colour).unwrap_or("#8c8c8c");
        let _ = write!(
            s,
            r##"<rect x="8" y="{}" width="10" height="10" rx="2" fill="{swatch}"/><text x="24" y="{}" fill="#222">{}</text>"##,
            y + LANE / 2.0 - 5.0,
            y + LANE / 2.0 + 4.0,
            esc(label)
        );
    }
    // Time axis with grid lines.
    let step_us = tick_step(span_ns / 1e3);
    let first = (lo as f64 / 1e3 / step_us).ceil() as i64;
    let last = (hi as f64 / 1e3 / step_us).floor() as i64;
    let _ = write!(
        s,
        r##"<line x1="{LABEL}" y1="{AXIS}" x2="{}" y2="{AXIS}" stroke="#999"/>"##,
        WIDTH - RIGHT
    );
    for k in first..=last {
        let t_us = k as f64 * step_us;
        let xt = x((t_us * 1e3) as i64);
        let _ = write!(
            s,
            r##"<line x1="{xt:.1}" y1="{}" x2="{xt:.1}" y2="{}" stroke="#e3e5e8"/><line x1="{xt:.1}" y1="{}" x2="{xt:.1}" y2="{AXIS}" stroke="#999"/><text x="{xt:.1}" y="{}" text-anchor="middle" fill="#555">{}</text>"##,
            AXIS,
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
    // Host-function bars, placed with the clock sync: grey, on their stream's lane.
    for op in &program.ops {
        let OpKind::HostFn { stream, .. } = op.kind else {
            continue;
        };
        let (Some(iv), Some(lane)) = (timeline.interval(op.id), lane_of(&lanes.of_stream, stream))
        else {
            continue;
        };
        let (a, b) = (iv.start - origin, iv.end - origin);
        let (xa, xb) = (x(a), x(b).max(x(a) + 1.5));
        let y = lane_y(lane) + (LANE - BAR) / 2.0;
        let _ = write!(
            s,
            r##"<g><title>host function {} on {}: {:.3} → {:.3} µs (±{:.2} µs clock alignment)</title><rect x="{xa:.1}" y="{y}" width="{:.1}" height="{BAR}" rx="3" fill="#b8b8b8" stroke="#00000055" stroke-dasharray="3 2"/></g>"##,
            esc(&op.label),
            esc(stream_label(program, stream)),
            a as f64 / 1e3,
            b as f64 / 1e3,
            iv.slack_ns as f64 / 1e3,
            xb - xa,
        );
    }
    // Kernel bars.
    for op in &program.ops {
        let OpKind::Spin { stream, .. } = op.kind else {
            continue;
        };
        let (Some(span), Some(lane)) = (timeline.span(op.id), lane_of(&lanes.of_stream, stream))
        else {
            continue;
        };
        let Some(kind) = program.stream(stream).map(|st| st.kind) else {
            continue;
        };
        let (a, b) = (span.start() as i64 - origin, span.end() as i64 - origin);
        let (xa, xb) = (x(a), x(b).max(x(a) + 1.5));
        let y = lane_y(lane) + (LANE - BAR) / 2.0;
        let sm_list = span.sms();
        let sms = if sm_list.len() > 8 {
            format!("{} SMs", sm_list.len())
        } else {
            let list: Vec<String> = sm_list.iter().map(u32::to_string).collect();
            format!("SM {}", list.join(", "))
        };
        let _ = write!(
            s,
            r##"<g><title>{} on {}: {:.3} → {:.3} µs ({:.3} µs), {} block(s) on {}</title><rect x="{xa:.1}" y="{y}" width="{:.1}" height="{BAR}" rx="3" fill="{}" stroke="#00000033"/>"##,
            esc(&op.label),
            esc(stream_label(program, stream)),
            a as f64 / 1e3,
            b as f64 / 1e3,
            (b - a) as f64 / 1e3,
            span.blocks.len(),
            sms,
            xb - xa,
            colour(kind)
        );
        // Multi-block kernels: a tick at the bottom of the bar for each distinct block start
        // (to the pixel), so waves of blocks and blocks dispatched late are visible.
        if span.blocks.len() > 1 {
            let mut ticks: Vec<i64> = span
                .blocks
                .iter()
                .map(|b| (x(b.start_ns as i64 - origin) * 2.0).round() as i64)
                .collect();
            ticks.sort_unstable();
            ticks.dedup();
            let mut path = String::new();
            for t in ticks {
                let _ = write!(path, "M {:.1} {:.1} v 5 ", t as f64 / 2.0, y + BAR - 5.0);
            }
            let _ = write!(
                s,
                r##"<path d="{path}" stroke="#ffffffcc" stroke-width="1"/>"##
            );
        }
        let text_w = 7.0 * op.label.chars().count() as f64 + 8.0;
        if xb - xa >= text_w {
            let _ = write!(
                s,
                r##"<text x="{:.1}" y="{}" text-anchor="middle" fill="#fff" font-weight="600">{}</text>"##,
                (xa + xb) / 2.0,
                y + BAR / 2.0 + 4.0,
                esc(&op.label)
            );
        } else {
            let _ = write!(
                s,
                r##"<text x="{:.1}" y="{}" fill="#222">{}</text>"##,
                xb + 3.0,
                y + BAR / 2.0 + 4.0,
                esc(&op.label)
            );
        }
        s.push_str("</g>");
    }
    // Host calls.
    if let Some(lane) = lanes.host {
        let y = lane_y(lane) + (LANE - BAR) / 2.0 + 4.0;
        for c in &timeline.host_calls {
            let (a, b) = (host_at(c.begin_ns), host_at(c.end_ns));
            let label = program.label(c.op);
            let _ = write!(
                s,
                r##"<g><title>host: {} took {:.3} µs (at {:.3} µs on the GPU clock, ± launch latency)</title><rect x="{:.1}" y="{y}" width="{:.1}" height="{}" rx="2" fill="#8c8c8c"/></g>"##,
                esc(&label),
                (c.end_ns - c.begin_ns) as f64 / 1e3,
                a as f64 / 1e3,
                x(a),
                (x(b) - x(a)).max(1.5),
                BAR - 8.0
            );
        }
    }
    // Event edges: from the work a record captured to the first kernel after the matching wait.
    for (w, r, ev) in event_edges(program) {
        let (Some(OpKind::Record { stream: rs, .. }), Some(OpKind::Wait { stream: ws, .. })) = (
            program.op(r).map(|o| &o.kind),
            program.op(w).map(|o| &o.kind),
        ) else {
            continue;
        };
        let (Some(rl), Some(wl)) = (
            lane_of(&lanes.of_stream, *rs),
            lane_of(&lanes.of_stream, *ws),
        ) else {
            continue;
        };
        let source = last_kernel_before(program, *rs, r)
            .and_then(|k| timeline.span(k))
            .map(|sp| sp.end() as i64 - origin)
            .or_else(|| timeline.issued_ns(r).map(host_at));
        let target = first_kernel_after(program, *ws, w)
            .and_then(|k| timeline.span(k))
            .map(|sp| sp.start() as i64 - origin);
        let (Some(src), Some(dst)) = (source, target) else {
            continue;
        };
        let (x1, y1, x2, y2) = (
            x(src),
            lane_y(rl) + LANE / 2.0,
            x(dst),
            lane_y(wl) + LANE / 2.0,
        );
        let _ = write!(
            s,
            r##"<g><title>event {}: recorded on {} (op {}), waited on by {} (op {})</title><path d="M {x1:.1} {y1:.1} C {:.1} {y1:.1}, {:.1} {y2:.1}, {x2:.1} {y2:.1}" fill="none" stroke="#6a3d9a" stroke-width="1.6" marker-end="url(#arrow-{id})"/><circle cx="{x1:.1}" cy="{y1:.1}" r="3" fill="#6a3d9a"/></g>"##,
            esc(program.events.get(ev).map_or("?", |e| e.label.as_str())),
            esc(stream_label(program, *rs)),
            r.0,
            esc(stream_label(program, *ws)),
            w.0,
            x1 + (x2 - x1) * 0.5,
            x1 + (x2 - x1) * 0.5,
        );
    }
    s.push_str("</svg>");
    s
}

/// (wait, the record it waits for, event index) for every wait that has a record before it.
fn event_edges(program: &Program) -> Vec<(OpId, OpId, usize)> {
    let mut last = vec![None; program.events.len()];
    let mut out = Vec::new();
    for op in &program.ops {
        match op.kind {
            OpKind::Record { event, .. } => {
                if let Some(slot) = last.get_mut(event.0) {
                    *slot = Some(op.id);
                }
            }
            OpKind::Wait { event, .. } => {
                if let Some(&Some(r)) = last.get(event.0) {
                    out.push((op.id, r, event.0));
                }
            }
            _ => {}
        }
    }
    out
}

fn last_kernel_before(
    program: &Program,
    stream: crate::program::StreamId,
    op: OpId,
) -> Option<OpId> {
    program
        .ops
        .get(..op.0)
        .unwrap_or_default()
        .iter()
        .rev()
        .find(|o| matches!(o.kind, OpKind::Spin { stream: s, .. } if s == stream))
        .map(|o| o.id)
}

fn first_kernel_after(
    program: &Program,
    stream: crate::program::StreamId,
    op: OpId,
) -> Option<OpId> {
    program
        .ops
        .get(op.0.saturating_add(1)..)
        .unwrap_or_default()
        .iter()
        .find(|o| matches!(o.kind, OpKind::Spin { stream: s, .. } if s == stream))
        .map(|o| o.id)
}

/// The lane of stream `s`, if it has one; a missing stream has none (lookups here cannot panic,
/// whatever a results file names).
fn lane_of(of_stream: &[Option<usize>], s: crate::program::StreamId) -> Option<usize> {
    of_stream.get(s.0).copied().flatten()
}

/// The label of stream `s`, or "?" for a stream the program does not have.
fn stream_label(program: &Program, s: crate::program::StreamId) -> &str {
    program.stream(s).map_or("?", |st| st.label.as_str())
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
