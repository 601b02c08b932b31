//! The one printer of programs: a program's declarations and ops as a claim file writes them
//! (docs/writing-claims.md). The claim-file printer (`litmus::print`) writes whole claims with it,
//! and [`Program`]'s `Display` (the listing of `show`, the evidence and the reports) lists the
//! same lines with each op's index, so a listing reads as the file it came from and adding an op
//! kind means one arm here.

use super::{
    BufferId, EventId, HostFnApi, OpId, OpKind, Program, StreamId, SyncTarget, DEFAULT_BLOCK,
};
use std::fmt::{self, Write};

/// Size units and their length in bytes, as claim files write them.
pub const SIZES: [(&str, u64); 4] = [
    ("B", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
];

impl fmt::Display for Program {
    /// `program NAME`, the declarations, and one line per op with its index, each as a claim
    /// file writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "program {}", name(&self.name))?;
        let mut decl = String::new();
        declarations(&mut decl, self);
        for line in decl.lines() {
            writeln!(f, "  {line}")?;
        }
        for (i, op) in self.ops.iter().enumerate() {
            write!(f, "  {i:>3} ")?;
            if default_label(self, &op.kind).as_deref() != Some(op.label.as_str()) {
                write!(f, "{}: ", name(&op.label))?;
            }
            writeln!(f, "{}", op_text(self, i, &op.kind))?;
        }
        Ok(())
    }
}

/// The label the builder gives an op of `kind` when none is written (`record E`, `host sync`),
/// or `None` where the builder asks for one (spins, host functions, queries, copies...).
pub fn default_label(program: &Program, kind: &OpKind) -> Option<String> {
    let event = |e: EventId| {
        program
            .events
            .get(e.0)
            .map_or(format!("e{}", e.0), |e| e.label.clone())
    };
    Some(match *kind {
        OpKind::Record { event: e, .. } => format!("record {}", event(e)),
        OpKind::Wait { event: e, .. } => format!("wait {}", event(e)),
        OpKind::HostSync { .. } => "host sync".to_string(),
        OpKind::Elapsed { from, to } => format!("elapsed {}→{}", event(from), event(to)),
        OpKind::Api { call, .. } => call.name().to_string(),
        OpKind::FreeAsync { alloc, .. } => format!("free {}", program.label(alloc)),
        OpKind::BeginCapture { .. } => "begin capture".to_string(),
        OpKind::EndCapture { .. } => "end capture".to_string(),
        OpKind::GraphLaunch { .. } => "graph launch".to_string(),
        _ => return None,
    })
}

/// A program's streams (those alike on one line), peer access, events and buffers.
pub fn declarations(out: &mut String, p: &Program) {
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

/// How an op at position `at` names op `id`: its label if that names one op among the first
/// `at` ops, else `#id`.
pub fn op_ref(p: &Program, at: usize, id: OpId) -> String {
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
pub fn op_text(p: &Program, at: usize, kind: &OpKind) -> String {
    let stream = |s: StreamId| name(&p.stream(s).map_or(format!("s{}", s.0), |s| s.label.clone()));
    let event = |e: EventId| {
        name(
            &p.events
                .get(e.0)
                .map_or(format!("e{}", e.0), |e| e.label.clone()),
        )
    };
    let buffer = |b: BufferId| name(&p.buffer(b).map_or(format!("b{}", b.0), |b| b.label.clone()));
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
pub fn is_ident(s: &str) -> bool {
    let part = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '\'');
    let mut chars = s.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_');
    first_ok
        && s.split('.')
            .all(|seg| !seg.is_empty() && seg.chars().all(part))
}

/// A name as written: bare when it is an identifier, else quoted.
pub fn name(s: &str) -> String {
    if is_ident(s) {
        s.to_string()
    } else {
        quote(s)
    }
}

/// A quoted string with `\"`, `\\`, `\n`, `\t`, `\r` and `\u{..}` escapes.
pub fn quote(s: &str) -> String {
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

/// `value` in the largest of `units` (listed smallest first) that is not above it, with the
/// decimals it needs: 12 500 ns is `12.5us`.
fn format(value: u64, units: &[(&str, u64)]) -> String {
    let (unit, scale) = units
        .iter()
        .rev()
        .find(|(_, s)| value >= *s)
        .copied()
        .unwrap_or(units[0]);
    let whole = value / scale;
    let rest = value % scale;
    if rest == 0 {
        return format!("{whole}{unit}");
    }
    let digits = scale.ilog10() as usize;
    let frac = format!("{rest:0digits$}");
    format!("{whole}.{}{unit}", frac.trim_end_matches('0'))
}

pub fn format_duration(ns: u64) -> String {
    format(
        ns,
        &[
            ("ns", 1),
            ("us", 1_000),
            ("ms", 1_000_000),
            ("s", 1_000_000_000),
        ],
    )
}

/// `bytes` in the largest unit that divides it: `1536KiB`, `4100B`.
pub fn format_size(bytes: u64) -> String {
    let (unit, scale) = SIZES
        .iter()
        .rev()
        .find(|(_, s)| bytes >= *s && bytes % s == 0)
        .copied()
        .unwrap_or(SIZES[0]);
    format!("{}{unit}", bytes / scale)
}
