//! An explanation as a page: where the time went, step by step, before why.
//!
//! Each step (the first [`MAX_STEPS_DRAWN`]; explain.txt and `--json` have them all) is drawn as
//! the claims on traces draw a trial: one lane per GPU stream, each op a rectangle, and every
//! wait the program did not ask for as an arrow from the op it waited for to it, coloured by
//! its cause (dashed where the streams' kinds imply it); then a table of every wait of the step,
//! asked for or not, with its class, cause and time lost; the model's broken pairs and the
//! surprises first. The whole text (every wait) closes the page.

use super::canvas::esc;
use super::explained_chrome::MAX_STEPS_DRAWN;
use crate::explain::{Class, Explanation, Step};
use crate::program::OpId;
use crate::trace::{CauseKind, Trace, Trial, TrialSpec};
use std::fmt::Write;

/// The most ops one step's picture draws (a step of a hundred thousand ops would be a page of
/// rectangles); trace.json has all.
const MAX_DRAWN: usize = 3_000;

/// The most ops the whole page draws: past them, steps get their tables without pictures (200
/// steps of 3,000 ops would be a page of 120 MB).
const MAX_DRAWN_PAGE: usize = 60_000;

/// The colour of each cause's arrows.
fn colour(kind: CauseKind) -> &'static str {
    match kind {
        CauseKind::SharedQueues => "#d62728",
        CauseKind::LegacyStream => "#9467bd",
        CauseKind::FirstLaunch => "#ff7f0e",
        CauseKind::FullGpu | CauseKind::CopyEngine | CauseKind::Priority => "#8c564b",
        CauseKind::Unknown => "#111111",
        _ => "#1f77b4",
    }
}

/// The page: every step's picture and table (up to [`MAX_STEPS_DRAWN`]), then `text`.
pub fn html_report(e: &Explanation, trace: &Trace, spec: &TrialSpec, text: &str) -> String {
    let mut s = page_head(e, trace, spec);
    let _ = writeln!(s, "{}<pre>{}</pre></body></html>", EVERY_WAIT, esc(text));
    s
}

/// [`html_report`] with the text of every wait ([`Listing::All`](crate::explain::Listing)), as
/// `out` is written: a part of the text at a time, as it is made (the page of the docs'
/// benchmark trace is 40 MB; built whole with its text, `explain --out` took 243 MB).
pub fn write_html(
    e: &Explanation,
    trace: &Trace,
    spec: &TrialSpec,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    out.write_all(page_head(e, trace, spec).as_bytes())?;
    out.write_all(EVERY_WAIT.as_bytes())?;
    out.write_all(b"<pre>")?;
    let all = crate::explain::Listing::All;
    crate::explain::text_each(e, trace, all, &mut |part| {
        out.write_all(esc(&crate::border::shown::shown(part)).as_bytes())
    })?;
    out.write_all(b"</pre></body></html>\n")
}

const EVERY_WAIT: &str = "<h2>Every wait</h2>";

/// The page up to the text of every wait.
fn page_head(e: &Explanation, trace: &Trace, spec: &TrialSpec) -> String {
    let mut s = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>stream-litmus: \
         what held the program back</title><style>body{font-family:sans-serif;margin:1.5em;\
         max-width:1200px}td,th{padding:2px 8px;text-align:left;vertical-align:top}\
         pre{white-space:pre-wrap;font-size:90%}.k{display:inline-block;width:2em;height:0.6em;\
         margin:0 0.3em}</style></head><body><h1>What held the program back</h1>",
    );
    let _ = write!(
        s,
        "<p>{} steps ({}). Arrows: a wait the program did not ask for, from the op it waited \
         for to the op that waited, coloured by cause: {}.</p>",
        e.steps.len(),
        esc(&e.cut),
        legend()
    );
    let wanted = |i: usize| i < MAX_STEPS_DRAWN;
    let trials = trace.some_trials(spec, &wanted).unwrap_or_default();
    let mut drawn = 0usize;
    for (i, trial) in trials {
        if let Some(step) = e.steps.get(i) {
            let picture = drawn < MAX_DRAWN_PAGE;
            drawn += trial.ops.len().min(MAX_DRAWN);
            step_section(&mut s, trace, &trial, step, picture);
        }
    }
    if e.steps.len() > MAX_STEPS_DRAWN {
        let _ = write!(
            s,
            "<p>(the first {MAX_STEPS_DRAWN} of {} steps drawn; every step's waits are below)</p>",
            e.steps.len()
        );
    }
    s
}

/// The causes and their colours, inline.
fn legend() -> String {
    let kinds = [
        CauseKind::SharedQueues,
        CauseKind::LegacyStream,
        CauseKind::FirstLaunch,
        CauseKind::FullGpu,
        CauseKind::Unknown,
    ];
    (kinds.iter())
        .map(|&k| {
            let word = match k {
                CauseKind::FullGpu => "room on the GPU (full, copy engine, priority)",
                CauseKind::LegacyStream => "the legacy default stream (implied, dashed)",
                k => k.word(),
            };
            format!(
                "<span class=\"k\" style=\"background:{}\"></span>{}",
                colour(k),
                esc(word)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn step_section(s: &mut String, trace: &Trace, trial: &Trial, st: &Step, picture_too: bool) {
    let _ = write!(s, "<h2>{}</h2>", esc(&st.name));
    for v in &st.violations {
        let _ = write!(
            s,
            "<p><b>broken, {}</b>: {}</p>",
            esc(v.rule.word()),
            esc(&v.text)
        );
    }
    if picture_too {
        picture(s, trace, trial, st);
    }
    if !st.waits.is_empty() {
        s.push_str(
            "<table><tr><th>op</th><th>waited for</th><th>class</th><th>cause</th>\
             <th>lost</th><th>why</th></tr>",
        );
        let mut waits: Vec<_> = st.waits.iter().collect();
        waits.sort_by_key(|w| Class::of(w.held.kind));
        for w in waits {
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2} µs</td><td>{}</td></tr>",
                esc(&w.label),
                esc(&w.by_label),
                Class::of(w.held.kind).word(),
                esc(w.held.kind.word()),
                w.lost_ns as f64 / 1e3,
                esc(&w.held.cause)
            );
        }
        s.push_str("</table>");
    }
    for p in &st.surprises {
        let _ = write!(
            s,
            "<p>surprise: the pageable copy {} ran beside {} for {:.2} µs</p>",
            esc(&p.copy_label),
            esc(&p.kernel_label),
            p.overlap_ns as f64 / 1e3
        );
    }
}

/// The step's lanes and ops, and each wait not asked for (or implied, or for room) as an arrow
/// coloured by its cause.
fn picture(s: &mut String, trace: &Trace, trial: &Trial, st: &Step) {
    let spans = trial.drawn();
    let drawn = &spans[..spans.len().min(MAX_DRAWN)];
    let (Some(lo), Some(hi)) = (
        drawn.iter().map(|d| d.1).min(),
        drawn.iter().map(|d| d.2).max(),
    ) else {
        return;
    };
    let mut lanes: Vec<_> = drawn
        .iter()
        .filter_map(|&(op, ..)| trial.place(op))
        .collect();
    lanes.sort_unstable();
    lanes.dedup();
    let (width, left, lane_h) = (1100.0, 170.0, 20.0);
    let scale = (width - left - 10.0) / ((hi - lo).max(1) as f64);
    let height = lane_h * lanes.len() as f64 + 8.0;
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-size=\"11\"><defs><marker id=\"w\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" \
         markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\"/>\
         </marker></defs>"
    );
    for (i, &place) in lanes.iter().enumerate() {
        let _ = write!(
            s,
            "<text x=\"4\" y=\"{:.1}\">{}</text>",
            lane_h * i as f64 + 14.0,
            esc(&trial.lane_name(trace, place))
        );
    }
    let x = |t: u64| left + t.saturating_sub(lo) as f64 * scale;
    let spans: std::collections::HashMap<OpId, (u64, u64)> =
        drawn.iter().map(|&(o, s, e)| (o, (s, e))).collect();
    let at = |op: OpId| {
        let lane = lanes.binary_search(&trial.place(op)?).ok()?;
        let &(start, end) = spans.get(&op)?;
        Some((lane_h * lane as f64 + lane_h / 2.0, x(start), x(end)))
    };
    for &(op, start, end) in drawn {
        let Some(lane) = trial.place(op).and_then(|p| lanes.binary_search(&p).ok()) else {
            continue;
        };
        let _ = write!(
            s,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#9ecae1\">\
             <title>{}</title></rect>",
            x(start),
            lane_h * lane as f64 + 3.0,
            ((end.saturating_sub(start)) as f64 * scale).max(1.0),
            lane_h - 6.0,
            esc(&format!(
                "{}: {:.2}–{:.2} µs",
                trial.label(op),
                start as f64 / 1e3,
                end as f64 / 1e3
            ))
        );
    }
    for w in st
        .waits
        .iter()
        .filter(|w| Class::of(w.held.kind) != Class::Asked)
    {
        let (Some((y1, _, x1)), Some((y2, x2, _))) = (at(w.held.by), at(w.held.op)) else {
            continue;
        };
        let dash = match Class::of(w.held.kind) {
            Class::Implied => " stroke-dasharray=\"4 2\"",
            _ => "",
        };
        let _ = write!(
            s,
            "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"{}\" \
             stroke-width=\"1.5\"{dash} marker-end=\"url(#w)\"><title>{} waited {:.2} µs ({}): \
             {}</title></line>",
            colour(w.held.kind),
            esc(&w.label),
            w.lost_ns as f64 / 1e3,
            esc(w.held.kind.word()),
            esc(&w.held.words(&w.by_label))
        );
    }
    s.push_str("</svg>");
    if spans.len() > MAX_DRAWN {
        let _ = write!(
            s,
            "<p>(first {MAX_DRAWN} of {} ops drawn; trace.json has all)</p>",
            spans.len()
        );
    }
}
