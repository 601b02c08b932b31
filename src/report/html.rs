//! The HTML report: one self-contained file (inline CSS and SVG, system fonts, no external
//! resources). It is also well-formed XML, so tests can parse it without a browser. At the top is
//! the device and a summary table. Below, each claim gets its statement, source, verdict,
//! evidence, the timeline of its witness trial (the median trial, or the first violating or
//! undecided one), and the program with the trial's measurements.

use super::canvas::{anchor, colour, esc};
use super::svg::timeline_svg;
use crate::judge::verdict::Verdict;
use crate::program::StreamKind;
use crate::record::{ClaimRecord, Outcome, RunRecord};
use std::fmt::Write;

const STYLE: &str = r#"
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       margin: 0 auto; max-width: 1160px; padding: 24px; color: #1d2330; background: #fff; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 0; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.device { color: #4a5263; margin: 0 0 16px; line-height: 1.5; }
table { border-collapse: collapse; }
table.summary { width: 100%; margin: 8px 0 28px; font-size: 14px; }
table.summary th, table.summary td { text-align: left; padding: 5px 10px; border-bottom: 1px solid #e3e5e8; }
table.summary td { white-space: nowrap; }
table.summary td:last-child { white-space: normal; }
table.summary td.id { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; color: #fff; }
.holds { background: #2e8b57; } .violated { background: #c0392b; } .inconclusive { background: #b7950b; } .failed { background: #555; }
.ok { color: #2e8b57; font-weight: 600; } .bad { color: #c0392b; font-weight: 600; }
section.claim { border: 1px solid #e3e5e8; border-radius: 8px; padding: 16px 18px; margin: 0 0 20px; }
section.claim header { display: flex; gap: 12px; align-items: baseline; flex-wrap: wrap; }
.statement { font-size: 15px; margin: 8px 0 4px; }
.meta { color: #4a5263; font-size: 13px; margin: 2px 0; }
.evidence { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; background: #f6f7f9; padding: 8px 10px; border-radius: 6px; white-space: pre-wrap; }
figure { margin: 12px 0 4px; overflow-x: auto; }
figcaption { color: #4a5263; font-size: 12.5px; margin-top: 4px; }
details { margin-top: 8px; font-size: 13px; }
pre { font-size: 12.5px; background: #f6f7f9; padding: 8px 10px; border-radius: 6px; overflow-x: auto; }
table.measure td, table.measure th { padding: 3px 8px; border-bottom: 1px solid #eceef1; font-size: 12.5px; text-align: left; }
.legend { display: flex; gap: 16px; font-size: 12.5px; color: #4a5263; margin: 0 0 20px; flex-wrap: wrap; }
.legend span.sw { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 5px; vertical-align: -1px; }
"#;

/// Counts the timelines the browser actually laid out (a non-empty bounding box) and writes the
/// count on `<body data-timelines>`, so a headless browser can check the page rendered.
const SCRIPT: &str = "document.body.dataset.timelines = Array.from(document.querySelectorAll('svg.timeline')).filter(function (s) { return s.getBBox().width > 0; }).length;";

fn badge(rec: &ClaimRecord) -> String {
    match rec.verdict() {
        Some(Verdict::Holds) => r#"<span class="badge holds">Holds</span>"#.into(),
        Some(Verdict::Violated) => r#"<span class="badge violated">Violated</span>"#.into(),
        Some(Verdict::Inconclusive) => {
            r#"<span class="badge inconclusive">Inconclusive</span>"#.into()
        }
        None => r#"<span class="badge failed">Failed</span>"#.into(),
    }
}

/// The whole page.
pub fn html_report(run: &RunRecord) -> String {
    let mut s = String::new();
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>");
    s.push_str(r#"<meta name="viewport" content="width=device-width, initial-scale=1"/>"#);
    s.push_str("<title>stream-litmus report</title><style>");
    s.push_str(STYLE);
    s.push_str("</style></head><body>");
    let ok = run.claims.iter().filter(|c| c.as_expected()).count();
    let _ = write!(
        s,
        "<h1>stream-litmus</h1><p class=\"device\">{}<br/>{} of {} claims as expected · {} trials per claim · wall {:.2} s, GPU time {:.1} ms · {}</p>",
        device_line(run),
        ok,
        run.claims.len(),
        run.trials_per_claim,
        run.timing.wall_ns as f64 / 1e9,
        run.timing.gpu_ns as f64 / 1e6,
        esc(&run.tool)
    );
    let split = crate::report::timing_text::summary(run, 5);
    if !split.is_empty() {
        let _ = write!(
            s,
            "<details><summary>where the time went</summary><pre>{}</pre></details>",
            esc(&split)
        );
    }
    s.push_str(r#"<div class="legend">"#);
    for k in StreamKind::ALL {
        let _ = write!(
            s,
            r#"<span><span class="sw" style="background:{}"></span>{k} stream</span>"#,
            colour(k)
        );
    }
    s.push_str(r##"<span><span class="sw" style="background:#3b75af80;outline:1.5px solid #3b75af"></span>copy (outline dashed: events, not CUPTI)</span><span><span class="sw" style="background:#b8b8b8"></span>host function</span><span><span class="sw" style="background:#8c8c8c"></span>host call issuing a stream op</span><span><span class="sw" style="background:#4d5360"></span>host-side call (sync, query, API call, capture)</span><span><span class="sw" style="background:#6a3d9a"></span>event record → wait</span><span><span class="sw" style="background:#1f5f66"></span>enqueued op (alloc, free)</span><span><span class="sw" style="background:#3b75af8c;outline:1px dashed #3b75af"></span>thinned run of ops</span></div>"##);
    s.push_str(r#"<table class="summary"><thead><tr><th>claim</th><th>verdict</th><th>trials</th><th>expected</th><th></th><th>source</th></tr></thead><tbody>"#);
    for rec in &run.claims {
        let counts = rec
            .judgement()
            .map(|j| j.counts.to_string())
            .unwrap_or_else(|| "—".into());
        let mark = if rec.as_expected() {
            r#"<span class="ok">as expected</span>"#
        } else {
            r#"<span class="bad">NOT as expected</span>"#
        };
        let _ = write!(
            s,
            r##"<tr><td class="id"><a href="#{}">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{mark}</td><td>{}</td></tr>"##,
            anchor(&rec.claim.id),
            esc(&rec.claim.id),
            badge(rec),
            esc(&counts),
            rec.claim.expect,
            esc(&rec.claim.source.to_string())
        );
    }
    s.push_str("</tbody></table>");
    for (i, rec) in run.claims.iter().enumerate() {
        claim_section(&mut s, rec, i);
    }
    let _ = writeln!(s, "<script>{SCRIPT}</script></body></html>");
    s
}

fn device_line(run: &RunRecord) -> String {
    let Some(cal) = &run.calibration else {
        return "no GPU was opened".into();
    };
    let d = &cal.device;
    esc(&format!(
        "{} (sm_{}{}), {} SMs, {} MHz, driver {} · timer step {} ns, launch jitter {:.2} µs, dependent gap {:.2} µs · CUPTI {}",
        d.name,
        d.compute_capability.0,
        d.compute_capability.1,
        d.sm_count,
        d.clock_khz / 1000,
        d.driver(),
        cal.timer_step_ns,
        cal.launch_jitter_ns as f64 / 1e3,
        cal.dependent_gap_ns as f64 / 1e3,
        d.cupti.as_deref().unwrap_or("not found")
    ))
}

fn claim_section(s: &mut String, rec: &ClaimRecord, index: usize) {
    let c = &rec.claim;
    let _ = write!(
        s,
        r#"<section class="claim" id="{}"><header><h2>{}</h2>{}<span class="meta">expected {}{}</span></header>"#,
        anchor(&c.id),
        esc(&c.id),
        badge(rec),
        c.expect,
        if rec.as_expected() {
            ""
        } else {
            " — not as expected"
        }
    );
    let _ = write!(
        s,
        r#"<p class="statement">{}</p><p class="meta">Source: {}</p>"#,
        esc(&c.statement),
        esc(&c.source.to_string())
    );
    if let Some(why) = &c.rationale {
        let _ = write!(s, r#"<p class="meta">Why: {}</p>"#, esc(why));
    }
    for var in &c.env {
        let _ = write!(
            s,
            r#"<p class="meta">Environment: {}</p>"#,
            esc(&var.to_string())
        );
    }
    match &rec.outcome {
        Outcome::Failed { error } => {
            let _ = write!(s, r#"<p class="evidence">{}</p>"#, esc(&error.to_string()));
        }
        Outcome::Ran { trials, judgement } => {
            let _ = write!(
                s,
                r#"<p class="evidence">{} · {}</p>"#,
                esc(&judgement.counts.to_string()),
                esc(&judgement.evidence(&c.program))
            );
            if let Some(w) = judgement.witness {
                let which = match judgement.verdict {
                    Verdict::Holds => "the median trial",
                    Verdict::Violated => "the first violating trial",
                    Verdict::Inconclusive => "the first undecided trial",
                };
                let _ = write!(
                    s,
                    "<figure>{}<figcaption>Trial {} of {}, {which}. Hover a bar or mark for its op, exact times and what placed it. Tolerances: {}.</figcaption></figure>",
                    timeline_svg(&c.program, &trials.timelines[w], &index.to_string()),
                    w + 1,
                    trials.timelines.len(),
                    esc(&judgement.tolerances.to_string())
                );
                s.push_str("<details><summary>Program and measurements</summary><pre>");
                s.push_str(&esc(&c.program.to_string()));
                s.push_str(r#"</pre><table class="measure"><thead><tr><th>check</th><th>truth</th><th>measured</th><th>why</th></tr></thead><tbody>"#);
                for m in &judgement.trials[w].measurements {
                    let _ = write!(
                        s,
                        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        esc(&m.check.describe(&c.program)),
                        m.truth,
                        esc(&m.describe(&c.program)),
                        esc(&m.reason)
                    );
                }
                s.push_str("</tbody></table></details>");
            }
        }
    }
    s.push_str("</section>");
}
