//! The HTML page of claims judged on traces: a summary table, then per claim its verdict, its
//! evidence and a picture of the trial that shows the verdict best, its ops on one lane per
//! stream, coloured by the selection they belong to. Self-contained (no script, no external
//! file) and well-formed XML, like the lab's own report.

use super::canvas::{anchor, esc};
use crate::program::OpId;
use crate::trace::{Trace, Trial};
use crate::trace_claims::{TraceClaim, TraceJudgement, TracedTrial};
use std::fmt::Write;

/// The most ops drawn for one trial: a training step has hundreds; beyond this the page would
/// be unreadable, and the Perfetto trace (`trace.json`) has them all.
pub const MAX_DRAWN: usize = 5_000;

const PALETTE: [&str; 6] = [
    "#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e", "#e6ab02",
];
const OTHER: &str = "#b8b8b8";

/// The head of the arrows drawn from an op to one it held back.
const ARROW_HEAD: &str = "<defs><marker id=\"held\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#c0392b\"/></marker></defs>";

/// The whole page.
pub fn html_report(judged: &[(&TraceClaim, &Trace, &TraceJudgement)]) -> String {
    let mut s = String::new();
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>");
    s.push_str("<title>stream-litmus: claims on traces</title><style>");
    s.push_str("body{font-family:sans-serif;margin:1.5em;max-width:1200px}td,th{padding:2px 8px;text-align:left}.ok{color:#1b7a3a}.no{color:#b3261e}pre{white-space:pre-wrap;font-size:90%}");
    s.push_str("</style></head><body><h1>stream-litmus: claims on traces</h1>");
    let ok = judged
        .iter()
        .filter(|(c, _, j)| j.verdict.matches(c.expect))
        .count();
    let _ = write!(s, "<p>{ok} of {} claims as expected</p>", judged.len());
    s.push_str("<table><thead><tr><th>claim</th><th>verdict</th><th>trials</th><th>expected</th></tr></thead><tbody>");
    for (c, _, j) in judged {
        let class = if j.verdict.matches(c.expect) {
            "ok"
        } else {
            "no"
        };
        let _ = write!(
            s,
            "<tr><td><a href=\"#{}\">{}</a></td><td class=\"{class}\">{}</td><td>{}</td><td>{}</td></tr>",
            anchor(&c.id),
            esc(&c.id),
            j.verdict,
            esc(&j.counts.to_string()),
            c.expect
        );
    }
    s.push_str("</tbody></table>");
    for (c, trace, j) in judged {
        let _ = write!(
            s,
            "<h2 id=\"{}\">{}</h2><p>{}<br/>source: {}, {}</p><p>{} · {} trials · expected {}</p><p>tolerances: {}</p><pre>{}</pre>",
            anchor(&c.id),
            esc(&c.id),
            esc(&c.statement),
            esc(&c.source.document),
            esc(&c.source.section),
            j.verdict,
            esc(&j.counts.to_string()),
            c.expect,
            esc(&j.tolerances),
            esc(&j.evidence(c))
        );
        if let Some(w) = j.witness {
            s.push_str(&picture(c, trace, j, w));
        }
    }
    s.push_str("</body></html>\n");
    s
}

/// The SVG of trial `w`: one lane per (file, process, device, stream), each op a rectangle
/// coloured by its first selection, with its label and times (µs on the trial's axis, as in the
/// evidence) as a tooltip; an arrow from each op that held another back to it.
fn picture(c: &TraceClaim, trace: &Trace, j: &TraceJudgement, w: usize) -> String {
    let trials = trace.some_trials(&c.trial, &|t| t == w).unwrap_or_default();
    let (Some((_, trial)), Some(outcome)) = (trials.first(), j.trials.get(w)) else {
        return String::new();
    };
    let spans = trial.drawn();
    let (Some(lo), Some(hi)) = (
        spans.iter().map(|s| s.1).min(),
        spans.iter().map(|s| s.2).max(),
    ) else {
        return String::new();
    };
    // The lanes of the ops drawn (a trial of a million streams would be a page of lanes).
    let drawn = &spans[..spans.len().min(MAX_DRAWN)];
    let mut lanes: Vec<_> = (drawn.iter())
        .filter_map(|&(op, ..)| trial.place(op))
        .collect();
    lanes.sort_unstable();
    lanes.dedup();
    let picked = super::traced_chrome::picked(c, trace, trial);
    let (width, left, lane_h) = (1100.0, 170.0, 22.0);
    let scale = (width - left - 10.0) / ((hi - lo).max(1) as f64);
    let height = lane_h * lanes.len() as f64 + 30.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<p>{} (the trial that shows the verdict best; a red arrow runs from an op to one it held back)</p><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-size=\"11\">{ARROW_HEAD}",
        esc(&trial.name)
    );
    for (i, &place) in lanes.iter().enumerate() {
        let _ = write!(
            s,
            "<text x=\"4\" y=\"{}\">{}</text>",
            lane_h * i as f64 + 15.0,
            esc(&trial.lane_name(trace, place))
        );
    }
    let axis = (lo, left, scale, lane_h);
    rects(&mut s, c, trial, drawn, &lanes, &picked, axis);
    let (arrows, causes) = held_arrows(trial, outcome, &spans, &lanes, axis);
    s.push_str(&arrows);
    let x = legend(&mut s, c, left, height);
    if spans.len() > MAX_DRAWN {
        let _ = write!(
            s,
            "<text x=\"{x:.1}\" y=\"{:.1}\">(first {MAX_DRAWN} of {} ops drawn; trace.json has all)</text>",
            height - 9.0,
            spans.len()
        );
    }
    s.push_str("</svg>");
    if !causes.is_empty() {
        let _ = write!(s, "<ul class=\"causes\">{causes}</ul>");
    }
    s
}

/// Each op drawn a rectangle on its lane, coloured by its first selection, its label and times
/// as its tooltip. `axis` as for [`held_arrows`].
fn rects(
    s: &mut String,
    c: &TraceClaim,
    trial: &Trial,
    drawn: &[(OpId, u64, u64)],
    lanes: &[(usize, i64, u32, u64)],
    picked: &[Vec<usize>],
    (lo, left, scale, lane_h): (u64, f64, f64, f64),
) {
    for &(op, start, end) in drawn {
        let Some(lane) = (trial.place(op)).and_then(|p| lanes.binary_search(&p).ok()) else {
            continue;
        };
        // Coloured by its first selection.
        let first = picked.get(op.0).and_then(|p| p.first()).copied();
        let fill = first.map_or(OTHER, |k| PALETTE[k % PALETTE.len()]);
        let x = left + (start - lo) as f64 * scale;
        let w = (end.saturating_sub(start) as f64 * scale).max(1.0);
        let name = first.map_or("other", |k| c.selections[k].name.as_str());
        let _ = write!(
            s,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{fill}\"><title>{}</title></rect>",
            lane_h * lane as f64 + 3.0,
            lane_h - 6.0,
            esc(&format!(
                "{} ({name}): {:.2}–{:.2} µs",
                trial.label(op),
                start as f64 / 1e3,
                end as f64 / 1e3
            ))
        );
    }
}

/// The legend under the lanes: each selection's colour and name from `left`; where it ends.
fn legend(s: &mut String, c: &TraceClaim, left: f64, height: f64) -> f64 {
    let mut x = left;
    for (k, sel) in c.selections.iter().enumerate() {
        let _ = write!(
            s,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            height - 18.0,
            PALETTE[k % PALETTE.len()],
            x + 14.0,
            height - 9.0,
            esc(&sel.name)
        );
        x += 30.0 + 7.0 * sel.name.chars().count() as f64;
    }
    x
}

/// The arrows from each op that held another back to it, and the causes as list items. `axis`:
/// the picture's first instant, left margin, scale (px per ns) and lane height.
fn held_arrows(
    trial: &Trial,
    outcome: &TracedTrial,
    spans: &[(OpId, u64, u64)],
    lanes: &[(usize, i64, u32, u64)],
    (lo, left, scale, lane_h): (u64, f64, f64, f64),
) -> (String, String) {
    let (mut s, mut causes) = (String::new(), String::new());
    let at = |op: OpId| {
        let lane = lanes.iter().position(|&l| Some(l) == trial.place(op))?;
        let &(_, start, end) = spans.iter().find(|d| d.0 == op)?;
        let x = |t: u64| left + (t - lo) as f64 * scale;
        Some((lane_h * lane as f64 + lane_h / 2.0, x(start), x(end)))
    };
    for held in outcome.checks.iter().filter_map(|c| c.held.as_ref()) {
        let (Some((y1, _, x1)), Some((y2, x2, _))) = (at(held.by), at(held.op)) else {
            continue;
        };
        let words = held.words(&trial.label(held.by));
        let _ = write!(
            s,
            "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"#c0392b\" stroke-width=\"1.5\" marker-end=\"url(#held)\"><title>{}</title></line>",
            esc(&words)
        );
        let _ = write!(
            causes,
            "<li>{} held back ({}): {}</li>",
            esc(&trial.label(held.op)),
            esc(held.kind.word()),
            esc(&words)
        );
    }
    (s, causes)
}
