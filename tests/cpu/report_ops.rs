//! Every op drawn: on every recorded run (the whole catalogue on both GPUs included), each op of
//! each claim's witness trial has a titled bar or mark in the SVG (naming the op, its kind, its
//! interval and what placed it), a row in the terminal picture and an event in the Chrome trace.
//! A thinned op may be covered by a run that names its range of ops instead. Dense timelines
//! stay small, and so does the whole page.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use stream_litmus::report::chrome_trace::chrome_trace;
use stream_litmus::report::html::html_report;
use stream_litmus::report::placement::kind_name;
use stream_litmus::report::svg::timeline_svg;
use stream_litmus::report::terminal::picture;
use stream_litmus::RunRecord;

/// The op ranges that runs name: "(ops 0–999)" in titles, "[ops 0–999]" in rows.
fn ranges<'a>(texts: impl IntoIterator<Item = &'a str>, open: &str) -> Vec<(usize, usize)> {
    texts
        .into_iter()
        .filter_map(|t| {
            let rest = &t[t.find(open)? + open.len()..];
            let (a, rest) = rest.split_once('–')?;
            let b: String = rest.chars().take_while(char::is_ascii_digit).collect();
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .collect()
}

/// The op ids of each trace process's events (host calls left out: they are not the op).
fn traced(run: &RunRecord) -> BTreeMap<u64, BTreeSet<u64>> {
    let mut out: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for e in chrome_trace(run)["traceEvents"].as_array().unwrap() {
        if e["ph"] == "M" || e["cat"] == "host call" {
            continue;
        }
        if let (Some(pid), Some(op)) = (e["pid"].as_u64(), e["args"]["op"].as_u64()) {
            out.entry(pid).or_default().insert(op);
        }
    }
    out
}

#[test]
fn every_op_of_the_witness_trial_is_in_all_three_pictures() {
    for (file, run) in common::recorded_runs() {
        let traced = traced(run);
        let mut pid = 0u64;
        for rec in &run.claims {
            let Some(trials) = rec.trials() else { continue };
            let first_pid = pid + 1;
            pid += trials.timelines.len() as u64;
            let Some(w) = rec.judgement().and_then(|j| j.witness) else {
                continue;
            };
            let (program, timeline) = (&rec.claim.program, &trials.timelines[w]);
            let at = format!("{}: {}", file.display(), rec.claim.id);
            let svg = timeline_svg(program, timeline, "t");
            let doc = roxmltree::Document::parse(&svg)
                .unwrap_or_else(|e| panic!("{at}: the SVG is not well-formed: {e}"));
            let titles: Vec<&str> = doc
                .descendants()
                .filter(|n| n.has_tag_name("title"))
                .filter_map(|n| n.text())
                .filter(|t| !t.starts_with("host call"))
                .collect();
            let svg_runs = ranges(titles.iter().copied(), "(ops ");
            let text = picture(program, timeline, 64);
            let row_runs = ranges(text.lines(), "[ops ");
            let trace = traced.get(&(first_pid + w as u64));
            for op in &program.ops {
                let i = op.id.0;
                let in_run = |runs: &[(usize, usize)]| runs.iter().any(|&(a, b)| a <= i && i <= b);
                let single = format!("{} (op {i}): {}", op.label, kind_name(&op.kind));
                let title = titles.iter().find(|t| t.starts_with(&single));
                assert!(
                    title.is_some() || in_run(&svg_runs),
                    "{at}: no titled mark for {} (op {i}) in the SVG: {titles:#?}",
                    op.label
                );
                if let Some(t) = title {
                    assert!(
                        t.contains("not placed")
                            || (t.contains(" µs")
                                && (t.contains("from ") || t.contains("host clock"))),
                        "{at}: the title names no interval or source: {t}"
                    );
                }
                assert!(
                    text.lines().any(|l| l.ends_with(&format!("[op {i}]"))) || in_run(&row_runs),
                    "{at}: no row for {} (op {i}) in the terminal picture:\n{text}",
                    op.label
                );
                assert!(
                    trace.is_some_and(|ops| ops.contains(&(i as u64))),
                    "{at}: no event for {} (op {i}) in the trace",
                    op.label
                );
            }
        }
    }
}

/// The claims about copies draw their copies: the pinned overlap claim shows K and C, C placed by
/// the witness of its run (CUPTI, or events in the no-CUPTI run).
#[test]
fn copy_claims_draw_their_copies_with_their_witness() {
    for (file, run) in common::recorded_runs() {
        let Some(rec) = run
            .claims
            .iter()
            .find(|c| c.claim.id == "copy.overlaps_kernel.pinned.kernel_first")
        else {
            continue;
        };
        let (trials, j) = (rec.trials().unwrap(), rec.judgement().unwrap());
        let t = &trials.timelines[j.witness.unwrap()];
        let svg = timeline_svg(&rec.claim.program, t, "t");
        let witness = match t.witness.map(|w| w.kind) {
            Some(stream_litmus::WitnessKind::Cupti) => "from CUPTI",
            Some(stream_litmus::WitnessKind::Events) => "from events around it",
            None => panic!("{}: the copy run has no witness", file.display()),
        };
        assert!(svg.contains("<title>K (op 0): kernel on s1"), "{svg}");
        assert!(
            svg.contains("<title>C (op 1): copy H2D") && svg.contains(witness),
            "{}: {svg}",
            file.display()
        );
    }
}

/// The 1000-kernel graph claim is drawn as a few runs, not 2000 bars and 1000 host calls, and the
/// whole-catalogue page stays well under its former 1.6 MB.
#[test]
fn dense_timelines_are_thinned_and_the_page_stays_small() {
    for (file, run) in common::recorded_runs() {
        let Some(rec) = run
            .claims
            .iter()
            .find(|c| c.claim.id == "graph.launch_cost.1000")
        else {
            continue;
        };
        let (trials, j) = (rec.trials().unwrap(), rec.judgement().unwrap());
        let svg = timeline_svg(
            &rec.claim.program,
            &trials.timelines[j.witness.unwrap()],
            "t",
        );
        assert!(
            svg.len() < 20_000,
            "{}: {} bytes",
            file.display(),
            svg.len()
        );
        for run in [
            "D0..D999 (ops 0–999): 1000 kernels",
            "G0..G999 (ops 1001–2000)",
        ] {
            assert!(svg.contains(run), "{}: no run {run}", file.display());
        }
        let page = html_report(run).len();
        assert!(
            page < 1_100_000,
            "{}: the page is {page} bytes",
            file.display()
        );
    }
}
