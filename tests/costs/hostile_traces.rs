//! Traces and claims on them made to hurt (issue 36), as `tests/cpu/hostile_claims.rs` and
//! `tests/costs/hostile_results.rs` do for claim and results files: a property test (proptest, fixed
//! seed and case count, so that `cargo test` stays quick and repeatable) takes the committed
//! example traces and their claims, and a made-up trace of host functions, and mutates both:
//! - the trace's events: names (empty, globs, line feeds, 20 KB), numbers (extremes in place of
//!   timestamps, durations, streams, processes, correlations), categories, events removed or
//!   repeated (a step range a thousand times over: overlapping trials), steps added;
//! - the claim's text: name patterns, trial ranges, selections (`in`, `during`, a stream),
//!   quantifiers, relations, `next`, numbers, lines repeated or dropped;
//! - now and then a byte of either;
//! - the shapes of issue 51: names with control characters (ESC, BEL, CR, U+202E), kernels of
//!   one call (a graph launch's correlation shared), a call that returned after its op started
//!   (ready times past the start), keys written with escapes (`"tr\u0061ceEvents"`), and a
//!   claim that names a byte copy of its trace beside it.
//!
//! Every mutant is judged by the CLI (`check`, one in four with `--out`), which must end with
//! exit status 0, 1 or 2, without a panic, in under 2 s and 256 MiB.

use crate::common;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A claim file and the trace it names (its events), before any mutation.
struct Base {
    claims: String,
    events: Vec<Value>,
}

/// The example traces with their claims, and a trace of host functions.
fn bases() -> &'static [Base] {
    static B: OnceLock<Vec<Base>> = OnceLock::new();
    B.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let mut all: Vec<Base> = [
            "pytorch/pipeline",
            "pytorch/non_blocking_copy",
            "pytorch/async_launch",
            "cuda/stream_basics",
            "cuda/stream_advanced",
            "cuda/event_two_streams",
            "cuda/weight_prefetch_blocking",
        ]
        .iter()
        .map(|name| {
            let (dir, file) = name.split_once('/').unwrap();
            let claims = std::fs::read_to_string(root.join(format!("{name}.litmus"))).unwrap();
            let gz = std::fs::File::open(root.join(dir).join(format!("traces/{file}.json.gz")));
            let mut text = String::new();
            flate2::read::GzDecoder::new(gz.unwrap())
                .read_to_string(&mut text)
                .unwrap();
            Base {
                claims,
                events: events(&text),
            }
        })
        .collect();
        all.push(host_functions());
        all
    })
}

fn events(trace: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(trace).unwrap();
    v["traceEvents"].as_array().unwrap().clone()
}

/// Two kernels and three host functions whose runs are ranges on a thread of their own.
fn host_functions() -> Base {
    let ops = [
        ("kernel", "K", 7, 1000.0, 50.0, 990.0),
        ("kernel", "L", 9, 1010.0, 50.0, 995.0),
    ];
    let mut events = events(&common::kineto::made(
        &ops,
        &[("ProfilerStep#1", 900.0, 400.0)],
    ));
    for i in 0..3 {
        let at = 996.0 + f64::from(i);
        events.push(
            json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchHostFunc",
            "pid": 1, "tid": 1, "ts": at, "dur": 0.5, "args": {"correlation": 50 + i}}),
        );
        events.push(
            json!({"ph": "X", "cat": "user_annotation", "name": "cb", "pid": 1,
            "tid": 77, "ts": at + 60.0, "dur": 5.0}),
        );
    }
    let claims = "claim t.host\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n\
                  trace \"t.json\"\ntrial each \"ProfilerStep#*\"\nselect H = host \"cb\"\n\
                  select K = kernel \"K\"\ncheck forall precedes(K, H)\n\
                  check ~exists overlaps(H, next K)\n"
        .to_string();
    Base { claims, events }
}

/// One change to a trace's events; indices are taken modulo the events there are.
#[derive(Debug, Clone)]
enum TraceEdit {
    Name(usize, &'static str),
    Number(usize, &'static str, &'static str),
    Category(usize, &'static str),
    Remove(usize),
    /// The i-th event (of the ranges only, where the flag says so) repeated n times.
    Repeat(usize, bool, usize),
    Steps(usize, u32),
    /// The i-th GPU op and the n after it on its stream given its correlation: one call's ops,
    /// as a graph launch's kernels are.
    OneCall(usize, usize),
    /// The i-th GPU op's call made to end after the op started.
    LateCall(usize),
}

/// One change to a claim file's text.
#[derive(Debug, Clone)]
enum ClaimEdit {
    /// The n-th quoted string (not a statement's or source's) becomes this.
    Pattern(usize, &'static str),
    /// A selection line gains this.
    Select(usize, &'static str),
    /// A check line's quantifier, relation or second op replaced.
    Check(usize, &'static str, &'static str),
    Number(usize, &'static str),
    DuplicateLine(usize),
    DeleteLine(usize),
    /// A second trace line naming a byte copy of the trace (`t2.json`).
    CopiedTrace,
}

const NAMES: &[&str] = &[
    "",
    "*",
    "ProfilerStep#1",
    "ProfilerStep#*",
    "a\nok   forged.claim  Holds",
    "\u{1b}[31mred\u{7}",
    "\u{202e}evil",
    "a\r\nok   forged.claim  Holds",
    "cb",
    "K",
    "_Z3fooILi1EEvv",
    "@long",
];
const FIELDS: &[&str] = &[
    "ts",
    "dur",
    "pid",
    "tid",
    "stream",
    "device",
    "correlation",
    "event",
    "wait_on_cuda_event_id",
    "priority",
];
const CATEGORIES: &[&str] = &[
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "cuda_runtime",
    "user_annotation",
    "cpu_op",
    "cuda_sync",
    "",
];
const PATTERNS: &[&str] = &["*", "", "?", "NOPE*", "ProfilerStep#*", "*a*b*c*", "@long"];
const SELECTS: &[&str] = &[
    " in \"ProfilerStep#*\"",
    " during \"*\"",
    " stream 7",
    " device 0",
    " rank 1",
    " in \"NOPE\"",
];
const QUANTIFIERS: &[&str] = &["", "exists ", "forall ", "~exists "];
const RELATIONS: &[&str] = &[
    "precedes",
    "overlaps",
    "serializes",
    "returns_before",
    "returns_after",
    "blocks",
    "faster",
    "chain",
];

fn trace_edit() -> impl Strategy<Value = TraceEdit> {
    let i = any::<usize>();
    prop_oneof![
        (i, proptest::sample::select(NAMES)).prop_map(|(i, n)| TraceEdit::Name(i, n)),
        (
            i,
            proptest::sample::select(FIELDS),
            proptest::sample::select(common::EXTREMES)
        )
            .prop_map(|(i, f, n)| TraceEdit::Number(i, f, n)),
        (i, proptest::sample::select(CATEGORIES)).prop_map(|(i, c)| TraceEdit::Category(i, c)),
        i.prop_map(TraceEdit::Remove),
        (
            i,
            any::<bool>(),
            prop_oneof![Just(1usize), Just(50), Just(1000)]
        )
            .prop_map(|(i, ranges, n)| TraceEdit::Repeat(i, ranges, n)),
        (prop_oneof![Just(1usize), Just(30), Just(3000)], 1u32..40)
            .prop_map(|(n, w)| TraceEdit::Steps(n, w)),
        (i, 1usize..6).prop_map(|(i, n)| TraceEdit::OneCall(i, n)),
        i.prop_map(TraceEdit::LateCall),
    ]
}

fn claim_edit() -> impl Strategy<Value = ClaimEdit> {
    let i = any::<usize>();
    prop_oneof![
        (i, proptest::sample::select(PATTERNS)).prop_map(|(i, p)| ClaimEdit::Pattern(i, p)),
        (i, proptest::sample::select(SELECTS)).prop_map(|(i, s)| ClaimEdit::Select(i, s)),
        (
            i,
            proptest::sample::select(QUANTIFIERS),
            proptest::sample::select(RELATIONS)
        )
            .prop_map(|(i, q, r)| ClaimEdit::Check(i, q, r)),
        (i, proptest::sample::select(common::EXTREMES)).prop_map(|(i, n)| ClaimEdit::Number(i, n)),
        i.prop_map(ClaimEdit::DuplicateLine),
        i.prop_map(ClaimEdit::DeleteLine),
        Just(ClaimEdit::CopiedTrace),
    ]
}

/// `@long` is a name or pattern of 20,000 bytes.
fn spelled(s: &str) -> String {
    match s {
        "@long" => "ab".repeat(10_000),
        s => s.to_string(),
    }
}

fn number(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.into()))
}

fn edit_trace(events: &mut Vec<Value>, e: &TraceEdit) {
    let n = events.len().max(1);
    match *e {
        TraceEdit::Name(i, name) => {
            if let Some(ev) = events.get_mut(i % n) {
                ev["name"] = spelled(name).into();
            }
        }
        TraceEdit::Number(i, field, v) => {
            let Some(ev) = events.get_mut(i % n) else {
                return;
            };
            match field {
                "stream"
                | "device"
                | "correlation"
                | "event"
                | "wait_on_cuda_event_id"
                | "priority"
                    if ev["args"].is_object() =>
                {
                    ev["args"][field] = number(v)
                }
                _ => ev[field] = number(v),
            }
        }
        TraceEdit::Category(i, cat) => {
            if let Some(ev) = events.get_mut(i % n) {
                ev["cat"] = cat.into();
            }
        }
        TraceEdit::Remove(i) => {
            if !events.is_empty() {
                events.remove(i % n);
            }
        }
        TraceEdit::Repeat(i, ranges, times) => {
            let range = |e: &&Value| !ranges || e["cat"] == "user_annotation";
            let chosen: Vec<&Value> = events.iter().filter(range).collect();
            if let Some(ev) = chosen.get(i % chosen.len().max(1)).map(|e| (*e).clone()) {
                events.extend(std::iter::repeat(ev).take(times));
            }
        }
        TraceEdit::Steps(count, width) => steps(events, count, width),
        TraceEdit::OneCall(i, after) => {
            let gpu: Vec<usize> = (0..events.len()).filter(|&k| is_gpu(&events[k])).collect();
            let Some(&first) = gpu.get(i % gpu.len().max(1)) else {
                return;
            };
            let (stream, correlation) = (
                events[first]["args"]["stream"].clone(),
                events[first]["args"]["correlation"].clone(),
            );
            for &k in gpu.iter().filter(|&&k| k > first).take(after) {
                if events[k]["args"]["stream"] == stream {
                    events[k]["args"]["correlation"] = correlation.clone();
                }
            }
        }
        TraceEdit::LateCall(i) => {
            let gpu: Vec<usize> = (0..events.len()).filter(|&k| is_gpu(&events[k])).collect();
            let Some(&op) = gpu.get(i % gpu.len().max(1)) else {
                return;
            };
            let correlation = events[op]["args"]["correlation"].clone();
            let start = events[op]["ts"].as_f64().unwrap_or(0.0);
            let call = events
                .iter_mut()
                .find(|e| e["cat"] == "cuda_runtime" && e["args"]["correlation"] == correlation);
            if let Some(call) = call {
                let ts = call["ts"].as_f64().unwrap_or(0.0);
                call["dur"] = json!((start - ts).max(0.0) + 5.0);
            }
        }
    }
}

/// A kernel, copy or set of memory: an op on the GPU's timeline.
fn is_gpu(e: &Value) -> bool {
    matches!(
        e["cat"].as_str(),
        Some("kernel" | "gpu_memcpy" | "gpu_memset")
    )
}

/// `count` ranges `ProfilerStep#k` on the first call's thread, spread over the trace's time,
/// each `width` of them wide (they overlap past 1).
fn steps(events: &mut Vec<Value>, count: usize, width: u32) {
    let ts: Vec<f64> = events.iter().filter_map(|e| e["ts"].as_f64()).collect();
    let (lo, hi) = ts
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), &t| (l.min(t), h.max(t)));
    let call = events.iter().find(|e| e["cat"] == "cuda_runtime");
    let (pid, tid) = call.map_or((json!(1), json!(1)), |c| {
        (c["pid"].clone(), c["tid"].clone())
    });
    let each = (hi - lo).max(1.0) / count as f64;
    for k in 0..count {
        events.push(
            json!({"ph": "X", "cat": "user_annotation", "name": format!("ProfilerStep#{k}"),
            "pid": pid, "tid": tid, "ts": lo + each * k as f64, "dur": each * f64::from(width)}),
        );
    }
}

fn edit_claims(text: &str, e: &ClaimEdit) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let n = lines.len().max(1);
    let is = |l: &str, what: &str| l.trim_start().starts_with(what);
    let pick = |lines: &[String], what: &str, i: usize| {
        let found: Vec<usize> = (0..lines.len()).filter(|&k| is(&lines[k], what)).collect();
        (!found.is_empty()).then(|| found[i % found.len()])
    };
    match *e {
        ClaimEdit::Pattern(i, p) => {
            let quoted: Vec<usize> = (0..lines.len())
                .filter(|&k| {
                    (is(&lines[k], "select") || is(&lines[k], "trial")) && lines[k].contains('"')
                })
                .collect();
            if let Some(&k) = quoted.get(i % quoted.len().max(1)) {
                let l = &lines[k];
                let (a, rest) = l.split_once('"').unwrap();
                let b = rest.split_once('"').map_or("", |(_, b)| b);
                lines[k] = format!("{a}\"{}\"{b}", spelled(p));
            }
        }
        ClaimEdit::Select(i, s) => {
            if let Some(k) = pick(&lines, "select", i) {
                lines[k].push_str(s);
            }
        }
        ClaimEdit::Check(i, q, r) => {
            if let Some(k) = pick(&lines, "check", i) {
                let args = lines[k]
                    .split_once('(')
                    .map_or("(A, B)", |(_, a)| a)
                    .to_string();
                let args = match (r, args.split_once(", ")) {
                    ("chain", Some((x, y))) => format!("({x}, next {y}"),
                    _ => format!("({args}"),
                };
                lines[k] = format!("check {q}{r}{args}");
            }
        }
        ClaimEdit::Number(i, v) => {
            let k = i % n;
            if let Some(l) = lines.get_mut(k) {
                if let Some(p) = l.find(|c: char| c.is_ascii_digit()) {
                    let q = p + l[p..].chars().take_while(char::is_ascii_digit).count();
                    l.replace_range(p..q, v);
                }
            }
        }
        ClaimEdit::DuplicateLine(i) => {
            if !lines.is_empty() {
                let l = lines[i % n].clone();
                lines.insert(i % n, l);
            }
        }
        ClaimEdit::DeleteLine(i) => {
            if !lines.is_empty() {
                lines.remove(i % n);
            }
        }
        ClaimEdit::CopiedTrace => {
            if let Some(k) = pick(&lines, "trace ", 0) {
                lines.insert(k + 1, "trace \"t2.json\"".to_string());
            }
        }
    }
    lines.join("\n") + "\n"
}

/// The trace lines of a claim file pointed at `t.json`.
fn on_the_mutant(claims: &str) -> String {
    (claims.lines())
        .map(
            |l| match l.trim_start().starts_with("trace ") && !l.contains("t2.json") {
                true => "trace \"t.json\"".to_string(),
                false => l.to_string(),
            },
        )
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// Judges one mutant through the CLI and asserts the bounds; returns its exit status.
fn judged_within_bounds(
    dir: &Path,
    claims: &str,
    events: Vec<Value>,
    byte: Option<(usize, u8)>,
    out: bool,
    escaped: bool,
) -> i32 {
    let mut text = serde_json::to_vec(&json!({"schemaVersion": 1, "traceEvents": events})).unwrap();
    if escaped {
        // Keys spelled with escapes read as the keys they spell, in the splitter as in serde.
        text = String::from_utf8(text)
            .unwrap()
            .replace("\"traceEvents\"", "\"tr\\u0061ceEvents\"")
            .replace("\"ts\":", "\"\\u0074s\":")
            .replace("\"name\":", "\"n\\u0061me\":")
            .into_bytes();
    }
    if let Some((i, b)) = byte {
        let i = i % text.len();
        text[i] = b;
    }
    std::fs::write(dir.join("t.json"), &text).unwrap();
    std::fs::write(dir.join("t2.json"), &text).unwrap();
    let c = dir.join("c.litmus");
    std::fs::write(&c, on_the_mutant(claims)).unwrap();
    let report = dir.join("out");
    let mut args = vec![OsStr::new("check"), c.as_os_str()];
    if out {
        args.extend([OsStr::new("--out"), report.as_os_str()]);
    }
    let _one = common::peak::one_at_a_time();
    let started = Instant::now();
    let (code, err, kib) = common::peak::run_cli(&args, &[]);
    let took = started.elapsed();
    let cut = (0..=err.len().min(600))
        .rev()
        .find(|&i| err.is_char_boundary(i));
    let shown = &err[..cut.unwrap_or(0)];
    assert!(matches!(code, Some(0..=2)), "exit {code:?}: {shown}");
    assert!(!err.contains("panicked"), "{shown}");
    assert_no_raw_control(&err);
    assert!(took < Duration::from_secs(2), "{took:?}: {shown}");
    assert!(kib < 256 << 10, "{kib} KiB: {shown}");
    // `explain` reads the same trace (with its syncs, records and streams) within the same
    // bounds.
    let trace = dir.join("t.json");
    let started = Instant::now();
    let (explained, err, kib) =
        common::peak::run_cli(&[OsStr::new("explain"), trace.as_os_str()], &[]);
    let took = started.elapsed();
    let cut = (0..=err.len().min(600))
        .rev()
        .find(|&i| err.is_char_boundary(i));
    let said = &err[..cut.unwrap_or(0)];
    assert!(
        matches!(explained, Some(0..=2)),
        "explain: exit {explained:?}: {said}"
    );
    assert!(!err.contains("panicked"), "explain: {said}");
    assert_no_raw_control(&err);
    assert!(took < Duration::from_secs(2), "explain: {took:?}: {said}");
    assert!(kib < 256 << 10, "explain: {kib} KiB: {said}");
    if std::env::var_os("SHOW_MUTANTS").is_some() {
        eprintln!(
            "{code:?} {took:?} {kib} KiB {}",
            shown.lines().next().unwrap_or("")
        );
    }
    code.unwrap_or(-1)
}

/// What the CLI said holds no control character but its line feeds, and no bidirectional
/// override: a name or path from the trace is escaped, so it forges no line and hides no text.
fn assert_no_raw_control(said: &str) {
    let raw = said
        .char_indices()
        .find(|&(_, c)| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c));
    if let Some((at, c)) = raw {
        let from = (0..=at.saturating_sub(120))
            .rev()
            .find(|&i| said.is_char_boundary(i));
        panic!("raw {c:?} at byte {at}: {:?}", &said[from.unwrap_or(0)..at]);
    }
}

#[test]
fn mutated_traces_and_claims_are_judged_or_refused_within_bounds() {
    // HOSTILE_TRACES_CASES=N HOSTILE_TRACES_SEED=K for a longer search by hand.
    let from_env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u32>().ok());
    let config = Config {
        cases: from_env("HOSTILE_TRACES_CASES").unwrap_or(256),
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        ..Config::default()
    };
    let seed = from_env("HOSTILE_TRACES_SEED").map_or(36, |k| k as u8);
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let dir = tempfile::tempdir().unwrap();
    let seen = std::cell::RefCell::new([0usize; 3]);
    let strategy = (
        0..bases().len(),
        proptest::collection::vec(trace_edit(), 0..4),
        proptest::collection::vec(claim_edit(), 0..3),
        proptest::option::weighted(0.15, (any::<usize>(), any::<u8>())),
        proptest::bool::weighted(0.25),
        proptest::bool::weighted(0.2),
    );
    runner
        .run(
            &strategy,
            |(b, trace_edits, claim_edits, byte, out, escaped)| {
                let base = &bases()[b];
                let mut events = base.events.clone();
                for e in &trace_edits {
                    edit_trace(&mut events, e);
                }
                let mut claims = base.claims.clone();
                for e in &claim_edits {
                    claims = edit_claims(&claims, e);
                }
                let code = judged_within_bounds(dir.path(), &claims, events, byte, out, escaped);
                seen.borrow_mut()[code as usize] += 1;
                Ok(())
            },
        )
        .unwrap();
    // Mutants judged as expected, judged otherwise, and refused: every side is reached.
    let seen = seen.into_inner();
    assert!(seen.iter().all(|&n| n > 0), "exit 0, 1, 2: {seen:?}");
}
