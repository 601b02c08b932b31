//! The reports, on the CPU, from runs recorded on real GPUs (every results file under
//! tests/fixtures, the whole-catalogue ones included): the HTML page (well-formed, self-contained,
//! a timeline per claim), every op of each witness trial drawn in the SVG, the terminal picture
//! and the Chrome trace (tests/cpu/report_ops.rs), the Chrome trace (parses, one named track per
//! stream), `compare`, a snapshot of the text output with its volatile values redacted, and
//! (where Debian's chromium is installed) the page rendered in a headless browser.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use stream_litmus::report::{chrome_trace::chrome_trace, compare::compare, html::html_report};
use stream_litmus::{ClaimRecord, OpKind, RunRecord, Span};

/// The core-claim runs, whose claims and verdicts the text tests know.
fn fixtures() -> Vec<(PathBuf, RunRecord)> {
    common::recorded("core-")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stream-litmus-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `stream-litmus render FILE --out OUT`.
fn render(file: &Path, out: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_stream-litmus"))
        .arg("render")
        .arg(file)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn render_writes_the_page_and_the_trace_from_a_recorded_run() {
    for (file, _) in fixtures() {
        let out = temp_dir("render");
        let run = render(&file, &out);
        let text = String::from_utf8_lossy(&run.stdout);
        assert!(run.status.success(), "{}:\n{text}", file.display());
        for name in ["report.html", "trace.json"] {
            let len = std::fs::metadata(out.join(name)).unwrap().len();
            assert!(len > 10_000, "{name} is only {len} bytes");
        }
        assert!(text.contains("12 as expected, 0 not"), "{text}");
        std::fs::remove_dir_all(out).ok();
    }
}

/// Parses the page as XML (it is written to be well-formed) and checks its structure: a summary
/// row and a section per claim, and in each section a timeline with a lane per stream used (its
/// kind in the label), a host lane, an axis, and an arrow per event wait.
#[test]
fn the_page_is_well_formed_with_a_timeline_per_claim() {
    for (file, run) in common::recorded_runs() {
        let html = html_report(run);
        let doc = roxmltree::Document::parse_with_options(
            &html,
            roxmltree::ParsingOptions {
                allow_dtd: true,
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{}: not well-formed: {e}", file.display()));
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "html");
        let rows = doc.descendants().filter(|n| n.has_tag_name("tr")).count();
        assert!(rows > run.claims.len(), "summary rows");
        let sections: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("section") && n.attribute("class") == Some("claim"))
            .collect();
        assert_eq!(sections.len(), run.claims.len());
        for (section, rec) in sections.iter().zip(&run.claims) {
            // A claim that failed to run (a contended recording has some) has no timeline.
            if rec.judgement().is_some() {
                check_section(section, rec);
            }
        }
    }
}

fn check_section(section: &roxmltree::Node, rec: &ClaimRecord) {
    let id = &rec.claim.id;
    let svg = section
        .descendants()
        .find(|n| n.tag_name().name() == "svg" && n.attribute("class") == Some("timeline"))
        .unwrap_or_else(|| panic!("{id}: no timeline"));
    let texts: Vec<String> = svg
        .descendants()
        .filter(|n| n.tag_name().name() == "text")
        .map(|n| n.text().unwrap_or("").to_string())
        .collect();
    let program = &rec.claim.program;
    for (i, s) in program.streams.iter().enumerate() {
        if program.uses_stream(stream_litmus::StreamId(i)) {
            assert!(
                texts
                    .iter()
                    .any(|t| t.contains(&s.label) && t.contains(s.kind.name())),
                "{id}: no lane for {} ({}) in {texts:?}",
                s.label,
                s.kind
            );
        }
    }
    assert!(
        texts.iter().any(|t| t == "host (API calls)"),
        "{id}: no host lane"
    );
    assert!(texts.iter().any(|t| t == "time (µs)"), "{id}: no axis");
    let waits = program
        .ops
        .iter()
        .filter(|op| matches!(op.kind, OpKind::Wait { .. }) && !program.is_noop_wait(op.id))
        .count();
    let arrows = svg
        .descendants()
        .filter(|n| n.tag_name().name() == "path" && n.attribute("marker-end").is_some())
        .count();
    assert_eq!(arrows, waits, "{id}: one arrow per event wait");
}

/// Nothing is fetched: no external scripts, stylesheets, fonts or images.
#[test]
fn the_page_is_self_contained() {
    for (_, run) in common::recorded_runs() {
        let html = html_report(run);
        for banned in [
            "<link",
            "src=",
            "@import",
            "@font-face",
            "https://",
            "<iframe",
            "<img",
        ] {
            assert!(!html.contains(banned), "the page contains {banned:?}");
        }
        let outside: Vec<_> = html
            .match_indices("http://")
            .map(|(i, _)| &html[i..(i + 40).min(html.len())])
            .filter(|s| !s.starts_with("http://www.w3.org/2000/svg"))
            .collect();
        assert!(outside.is_empty(), "{outside:?}");
        for (i, _) in html.match_indices("url(") {
            assert!(html[i..].starts_with("url(#arrow-"), "{}", &html[i..i + 30]);
        }
    }
}

/// The trace parses, has one process per trial, one named track per stream used (plus the host
/// track) in every process, and complete events with non-negative µs times.
#[test]
fn the_trace_has_a_named_track_per_stream() {
    for (_, run) in common::recorded_runs() {
        let text = serde_json::to_string(&chrome_trace(run)).unwrap();
        let trace: serde_json::Value = serde_json::from_str(&text).unwrap();
        let events = trace["traceEvents"].as_array().unwrap();
        let mut tracks: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
        let mut processes = BTreeSet::new();
        for e in events {
            let pid = e["pid"].as_u64().unwrap();
            match (e["ph"].as_str().unwrap(), e["name"].as_str().unwrap()) {
                ("M", "process_name") => {
                    processes.insert(pid);
                }
                ("M", "thread_name") => {
                    let name = e["args"]["name"].as_str().unwrap().to_string();
                    assert!(
                        tracks.entry(pid).or_default().insert(name),
                        "track named twice"
                    );
                }
                ("X", _) => {
                    assert!(e["ts"].as_f64().unwrap() >= 0.0 && e["dur"].as_f64().unwrap() >= 0.0);
                }
                _ => {}
            }
        }
        let trials: usize = run
            .claims
            .iter()
            .filter_map(|c| c.trials())
            .map(|t| t.timelines.len())
            .sum();
        assert_eq!(processes.len(), trials, "one process per trial");
        let mut pid = 0;
        for rec in run.claims.iter().filter(|c| c.trials().is_some()) {
            let program = &rec.claim.program;
            let mut want: BTreeSet<String> = program
                .streams
                .iter()
                .enumerate()
                .filter(|(i, _)| program.uses_stream(stream_litmus::StreamId(*i)))
                .map(|(_, s)| s.display_label())
                .collect();
            want.insert("host".into());
            for _ in &rec.trials().unwrap().timelines {
                pid += 1;
                assert_eq!(tracks[&pid], want, "{}", rec.claim.id);
            }
        }
    }
}

#[test]
fn compare_finds_nothing_between_a_run_and_itself() {
    let (_, run) = &fixtures()[0];
    let (text, differ) = compare(run, run);
    assert_eq!(differ, 0, "{text}");
    assert!(text.contains("0 claim(s) differ; 12 compared"), "{text}");
}

/// A changed verdict and a moved key figure are both listed; a claim missing from one side too.
#[test]
fn compare_lists_changed_verdicts_figures_and_missing_claims() {
    let (_, a) = &fixtures()[0];
    let mut b = a.clone();
    // In b, B of event.wait_orders starts 10 µs before A ends in every trial: a violation.
    let rec = b
        .claims
        .iter_mut()
        .find(|c| c.claim.id == "event.wait_orders")
        .unwrap();
    let (a_op, b_op) = match rec.claim.checks[0] {
        stream_litmus::Check::Precedes { before, after } => (before, after),
        _ => unreachable!(),
    };
    if let stream_litmus::Outcome::Ran { trials, .. } = &mut rec.outcome {
        for t in &mut trials.timelines {
            let end = t.span(a_op).unwrap().end();
            let dur = t.span(b_op).unwrap().duration_ns();
            let i = t.spans.iter().position(|s| s.op == b_op).unwrap();
            t.spans[i] = Span::single(b_op, end - 10_000, end - 10_000 + dur);
        }
    }
    *rec = rec.rejudge();
    b.claims.retain(|c| c.claim.id != "fifo.blocking");
    let (text, differ) = compare(a, &b);
    assert_eq!(differ, 2, "{text}");
    assert!(text.contains("verdict Holds → Violated"), "{text}");
    assert!(
        text.contains("A→B +1.") && text.contains("→ -10.00 µs..-10.00 µs"),
        "{text}"
    );
    assert!(text.contains("only a fifo.blocking"), "{text}");
}

/// The text `render` prints, with the volatile parts (paths, sizes, render time) redacted, is
/// the committed snapshot. `UPDATE_SNAPSHOTS=1 cargo test` rewrites it after a deliberate change.
#[test]
fn the_text_report_matches_its_snapshot() {
    let file = common::fixture("core-h100.json");
    let out = temp_dir("snapshot");
    let run = render(&file, &out);
    assert!(run.status.success());
    let text = redact(&String::from_utf8(run.stdout).unwrap(), &out);
    std::fs::remove_dir_all(&out).ok();
    let snapshot =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/render-core-h100.txt");
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&snapshot, &text).unwrap();
    }
    let want =
        std::fs::read_to_string(&snapshot).expect("snapshot exists (UPDATE_SNAPSHOTS=1 writes it)");
    assert_eq!(
        text, want,
        "the text report changed; if on purpose, UPDATE_SNAPSHOTS=1 cargo test"
    );
}

fn redact(text: &str, out: &Path) -> String {
    text.lines()
        .map(|l| {
            let l = l.replace(&out.display().to_string(), "[out]");
            if l.starts_with("wrote  ") {
                let cut = l.find(" (").unwrap_or(l.len());
                format!("{} ([size])", &l[..cut])
            } else if l.starts_with("render ") {
                "render [ms]".to_string()
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// The page in a real browser: no console errors, every timeline laid out, and a screenshot.
#[test]
#[cfg_attr(
    not(chromium),
    ignore = "needs Debian's chromium (apt-get install chromium), or CHROMIUM=/path/to/browser at build time"
)]
fn the_page_renders_in_headless_chromium() {
    let (_, run) = &fixtures()[0];
    let dir = temp_dir("chromium");
    let page = dir.join("report.html");
    std::fs::write(&page, html_report(run)).unwrap();
    let dom_text = in_chromium(&page, &dir);
    let timelines = run
        .claims
        .iter()
        .filter(|c| c.judgement().and_then(|j| j.witness).is_some())
        .count();
    assert!(
        dom_text.contains(&format!("data-timelines=\"{timelines}\"")),
        "the browser laid out fewer than {timelines} timelines"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The page of claims judged on traces (`check --out`) and `explain`'s (`explain --out`), in a
/// real browser as the lab's: no console line, what the page names laid out, a screenshot.
#[test]
#[cfg_attr(
    not(chromium),
    ignore = "needs Debian's chromium (apt-get install chromium), or CHROMIUM=/path/to/browser at build time"
)]
fn the_trace_pages_render_in_headless_chromium() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let claims = root.join("examples/pytorch/pipeline.litmus");
    let trace = root.join("examples/pytorch/traces/pipeline.json.gz");
    let dir = temp_dir("chromium-traces");
    let (checked, explained) = (dir.join("checked"), dir.join("explained"));
    for args in [
        vec![
            "check".as_ref(),
            claims.as_os_str(),
            "--out".as_ref(),
            checked.as_os_str(),
        ],
        vec![
            "explain".as_ref(),
            trace.as_os_str(),
            "--out".as_ref(),
            explained.as_os_str(),
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_stream-litmus"))
            .args(&args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let dom = in_chromium(&checked.join("report.html"), &dir);
    for id in [
        "pytorch.four_stream_pipeline_is_faster",
        "pytorch.pipeline_chunk_runs_in_order",
    ] {
        assert!(dom.contains(id), "the check page lost {id}");
    }
    assert!(dom.matches("<svg").count() >= 4, "a timeline per claim");
    let dom = in_chromium(&explained.join("report.html"), &dir);
    assert!(
        dom.contains("ProfilerStep#1") && dom.contains("<svg"),
        "explain's page"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `page` rendered by headless chromium: its DOM after scripts ran, once no console line was
/// logged (the pages log nothing by design) and a screenshot of it was taken.
fn in_chromium(page: &Path, dir: &Path) -> String {
    let browser = option_env!("STREAM_LITMUS_CHROMIUM").unwrap_or("chromium");
    let url = format!("file://{}", page.display());
    let base = |args: &[&str]| {
        let mut c = Command::new(browser);
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .args(args)
        .arg(&url);
        c.output().unwrap()
    };
    let dom = base(&["--dump-dom", "--virtual-time-budget=2000"]);
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    let log = String::from_utf8_lossy(&dom.stderr);
    // The page logs nothing by design, so any console line (console.error logs as
    // "INFO:CONSOLE … \"message\"", an exception as "Uncaught …") is a failure.
    let logged: Vec<_> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(logged.is_empty(), "{} logged: {logged:?}", page.display());
    let shot = dir.join("report.png");
    std::fs::remove_file(&shot).ok();
    let out = base(&[
        &format!("--screenshot={}", shot.display()),
        "--window-size=1200,1400",
    ]);
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(
        size > 20_000,
        "no screenshot of {} ({size} bytes): {}",
        page.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    dom_text.into_owned()
}
