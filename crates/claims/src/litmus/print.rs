//! Claims written out in the claim-file format, so that reading the text back gives the same
//! claim: labels are written only where they differ from the default one, numbers in the largest
//! exact unit, names quoted only where they are not identifiers.

use crate::judge::claim::Claim;
use crate::judge::relation::Check;
use crate::program::text::{declarations, default_label, is_ident, name, op_ref, op_text, quote};
use crate::program::BufferId;
use crate::program::{OpId, Program};
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
        if default_label(p, &op.kind).as_deref() != Some(op.label.as_str()) {
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

/// An environment variable's value: bare when it is a plain word or number.
fn value_text(s: &str) -> String {
    if is_ident(s) || (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit())) {
        s.to_string()
    } else {
        quote(s)
    }
}
