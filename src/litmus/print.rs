//! Claims written out in the claim-file format, so that reading the text back gives the same
//! claim: labels are written only where they differ from the default one, numbers in the largest
//! exact unit, names quoted only where they are not identifiers.

use super::units::{format_duration, format_size};
use crate::judge::claim::Claim;
use crate::judge::relation::Check;
use crate::program::BufferId;
use crate::program::{HostFnApi, OpId, OpKind, Program, SyncTarget, DEFAULT_BLOCK};
use std::fmt::Write;

/// Several claims, separated by a blank line.
pub fn claims(claims: &[Claim]) -> String {
    claims.iter().map(claim).collect::<Vec<_>>().join("\n")
}

/// One claim in the claim-file format.
pub fn claim(c: &Claim) -> String {
    let mut out = String::new();
    let p = &c.program;
    header(&mut out, c);
    out.push('\n');
    declarations(&mut out, p);
    out.push('\n');
    for (i, op) in p.ops.iter().enumerate() {
        if super::default_label(p, &op.kind).as_deref() != Some(op.label.as_str()) {
            let _ = write!(out, "{}: ", name(&op.label));
        }
        out.push_str(&op_text(p, i, &op.kind));
        out.push('\n');
    }
    if !c.checks.is_empty() || !c.observations.is_empty() {
        out.push('\n');
    }
    for (word, list) in [("check", &c.checks), ("observe", &c.observations)] {
        for check in list {
            let _ = writeln!(out, "{word} {}", check_text(check, p));
        }
    }
    out
}

/// The lines before a claim's program: its header, table, program name and environment.
fn header(out: &mut String, c: &Claim) {
    let p = &c.program;
    let _ = writeln!(out, "claim {}", name(&c.id));
    let _ = writeln!(out, "statement {}", quote(&c.statement));
    let _ = writeln!(
        out,
        "source {} section {}",
        quote(&c.source.document),
        quote(&c.source.section)
    );
    let _ = writeln!(out, "expect {}", format!("{}", c.expect).to_lowercase());
    if let Some(r) = &c.rationale {
        let _ = writeln!(out, "rationale {}", quote(r));
    }
    if let Some(t) = c.table {
        let _ = writeln!(out, "table {t}");
    }
    if p.name != c.id {
        let _ = writeln!(out, "program {}", name(&p.name));
    }
    for v in &c.env {
        match &v.value {
            Some(value) => writeln!(out, "env {} = {}", name(&v.name), value_text(value)),
            None => writeln!(out, "env {} unset", name(&v.name)),
        }
        .ok();
    }
}

/// A program's streams (those alike on one line), peer access, events and buffers.
fn declarations(out: &mut String, p: &Program) {
    let mut i = 0;
    while i < p.streams.len() {
        let s = &p.streams[i];
        let same = p.streams[i..]
            .iter()
            .take_while(|t| t.kind == s.kind && t.priority == s.priority && t.device == s.device)
            .count();
        let names: Vec<String> = p.streams[i..i + same]
            .iter()
            .map(|t| name(&t.label))
            .collect();
        let _ = write!(out, "stream {} = {}", names.join(", "), s.kind);
        if let Some(pr) = s.priority {
            let _ = write!(out, " priority {}", format!("{pr:?}").to_lowercase());
        }
        if s.device != 0 {
            let _ = write!(out, " device {}", s.device);
        }
        out.push('\n');
        i += same;
    }
    if p.peer_access {
        out.push_str("peer_access\n");
    }
    if !p.events.is_empty() {
        let names: Vec<String> = p.events.iter().map(|e| name(&e.label)).collect();
        let _ = writeln!(out, "event {}", names.join(", "));
    }
    for b in &p.buffers {
        let _ = write!(
            out,
            "buffer {} = {} {}",
            name(&b.label),
            b.place,
            format_size(b.bytes)
        );
        if b.fill != 0 {
            let _ = write!(out, " fill {}", b.fill);
        }
        if b.read_back {
            out.push_str(" read_back");
        }
        if b.device != 0 {
            let _ = write!(out, " device {}", b.device);
        }
        out.push('\n');
    }
}

/// A check as a claim file writes it: `precedes(A, B)`.
pub(super) fn check_text(check: &crate::judge::relation::Check, p: &Program) -> String {
    check_with(check, p, |id| op_ref(p, p.ops.len(), id))
}

/// `precedes(A, B)`: the check as a claim file writes it, with `op` naming each op.
pub(super) fn check_with(check: &Check, program: &Program, op: impl Fn(OpId) -> String) -> String {
    let buffer = |b: BufferId| {
        name(
            &program
                .buffer(b)
                .map_or(format!("b{}", b.0), |b| b.label.clone()),
        )
    };
    let range = |(a, b): (OpId, OpId)| format!("{}..{}", op(a), op(b));
    let two = |name: &str, a: OpId, b: OpId| format!("{name}({}, {})", op(a), op(b));
    match *check {
        Check::Precedes { before, after } => two("precedes", before, after),
        Check::Overlaps { a, b } => two("overlaps", a, b),
        Check::Interleaves { low, high } => two("interleaves", low, high),
        Check::Behind { low, high } => two("behind", low, high),
        Check::Uninterrupted { op: o, by } => two("uninterrupted", o, by),
        Check::ElapsedCovers { elapsed, span } => two("elapsed_covers", elapsed, span),
        Check::ReturnsBefore { call, span } => two("returns_before", call, span),
        Check::ReturnsAfter { call, span } => two("returns_after", call, span),
        Check::Answers { query, span } => two("answers", query, span),
        Check::Separates {
            call,
            before,
            after,
        } => format!("separates({}, {}, {})", op(call), op(before), op(after)),
        Check::Reuses { first, second } => two("reuses", first, second),
        Check::LaunchCheaper { graph, first, last } => {
            format!("launch_cheaper({}, {})", op(graph), range((first, last)))
        }
        Check::Serializes { a, b } => two("serializes", a, b),
        Check::Faster { slow, fast } => format!("faster({}, {})", range(slow), range(fast)),
        Check::Blocks { call, span } => two("blocks", call, span),
        Check::Contents { buffer: b, value } => format!("contents({}, {value})", buffer(b)),
        Check::MemoryIs { buffer: b, place } => format!("memory_is({}, {place})", buffer(b)),
    }
}

/// How an op at position `at` names op `id`: its label if that names one op among the first
/// `at` ops, else `#id`.
fn op_ref(p: &Program, at: usize, id: OpId) -> String {
    let Some(op) = p.op(id) else {
        return format!("#{}", id.0);
    };
    let same = p.ops[..at.min(p.ops.len())]
        .iter()
        .filter(|o| o.label == op.label)
        .count();
    if same == 1 {
        name(&op.label)
    } else {
        format!("#{}", id.0)
    }
}

/// The text of op `at` of `p`, as a claim file writes it. A table: one arm per kind of op,
/// kept whole on purpose.
fn op_text(p: &Program, at: usize, kind: &OpKind) -> String {
    let stream = |s: crate::program::StreamId| {
        name(&p.stream(s).map_or(format!("s{}", s.0), |s| s.label.clone()))
    };
    let event = |e: crate::program::EventId| {
        name(
            &p.events
                .get(e.0)
                .map_or(format!("e{}", e.0), |e| e.label.clone()),
        )
    };
    let buffer = |b: crate::program::BufferId| {
        name(&p.buffer(b).map_or(format!("b{}", b.0), |b| b.label.clone()))
    };
    let launch = |grid: u32, block: u32| {
        if (grid, block) == (1, DEFAULT_BLOCK) {
            String::new()
        } else {
            format!(" <<<{grid}, {block}>>>")
        }
    };
    let target = |t: SyncTarget| match t {
        SyncTarget::Device => "device".to_string(),
        SyncTarget::Stream(s) => format!("stream {}", stream(s)),
        SyncTarget::Event(e) => format!("event {}", event(e)),
    };
    match *kind {
        OpKind::Spin {
            stream: s,
            duration_ns,
            grid,
            block,
        } => {
            format!(
                "spin {}{} on {}",
                format_duration(duration_ns),
                launch(grid, block),
                stream(s)
            )
        }
        OpKind::Record {
            stream: s,
            event: e,
        } => format!("record {} on {}", event(e), stream(s)),
        OpKind::Wait {
            stream: s,
            event: e,
        } => format!("wait {} on {}", event(e), stream(s)),
        OpKind::HostSync { target: t } => format!("host_sync {}", target(t)),
        OpKind::Query { target: t } => format!("query {}", target(t)),
        OpKind::DeviceSync { device } => format!("device_sync {device}"),
        OpKind::AllReduce {
            stream: s,
            buffer: b,
        } => {
            format!("all_reduce {} on {}", buffer(b), stream(s))
        }
        OpKind::Elapsed { from, to } => format!("elapsed {} to {}", event(from), event(to)),
        OpKind::HostFn {
            stream: s,
            duration_ns,
            api,
        } => {
            let via = match api {
                HostFnApi::LaunchHostFunc => "",
                HostFnApi::StreamAddCallback => " via cuStreamAddCallback",
            };
            format!(
                "host_fn {} on {}{via}",
                format_duration(duration_ns),
                stream(s)
            )
        }
        OpKind::Api { call, bytes } => format!("api {} {}", call.name(), format_size(bytes)),
        OpKind::AllocAsync { stream: s, bytes } => {
            format!("alloc_async {} on {}", format_size(bytes), stream(s))
        }
        OpKind::FreeAsync { stream: s, alloc } => {
            format!("free_async {} on {}", op_ref(p, at, alloc), stream(s))
        }
        OpKind::BeginCapture { stream: s } => format!("begin_capture {}", stream(s)),
        OpKind::EndCapture { stream: s } => format!("end_capture {}", stream(s)),
        OpKind::GraphLaunch { stream: s, graph } => {
            format!("graph_launch {} on {}", op_ref(p, at, graph), stream(s))
        }
        OpKind::Copy {
            stream: s,
            src,
            dst,
            bytes,
        } => {
            let whole = [src, dst]
                .iter()
                .filter_map(|&b| p.buffer(b))
                .map(|b| b.bytes)
                .min();
            let size = if whole == Some(bytes) {
                String::new()
            } else {
                format!("{} ", format_size(bytes))
            };
            format!(
                "copy {size}{} to {} on {}",
                buffer(src),
                buffer(dst),
                stream(s)
            )
        }
        OpKind::Add {
            stream: s,
            a,
            b,
            out,
            grid,
            block,
        } => format!(
            "add {} = {} + {}{} on {}",
            buffer(out),
            buffer(a),
            buffer(b),
            launch(grid, block),
            stream(s)
        ),
    }
}

/// Whether `s` reads back as one identifier (see `syntax::ident`).
fn is_ident(s: &str) -> bool {
    let part = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '\'');
    let mut chars = s.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_');
    first_ok
        && s.split('.')
            .all(|seg| !seg.is_empty() && seg.chars().all(part))
}

/// A name as written: bare when it is an identifier, else quoted.
pub(super) fn name(s: &str) -> String {
    if is_ident(s) {
        s.to_string()
    } else {
        quote(s)
    }
}

/// An environment variable's value: bare when it is a plain word or number.
fn value_text(s: &str) -> String {
    if is_ident(s) || (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit())) {
        s.to_string()
    } else {
        quote(s)
    }
}

/// A quoted string with `\"`, `\\`, `\n`, `\t`, `\r` and `\u{..}` escapes.
pub(super) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
