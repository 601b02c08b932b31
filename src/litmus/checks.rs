//! Checks in claim files: `check RELATION(ARGS)`, one relation per [`Check`] variant, named as
//! its serde tag and taking its fields in order. Both directions live here, so that a new
//! variant fails to compile in one place until it is readable and printable.

use super::error::LitmusError;
use super::ops::place;
use super::resolve::{Cx, Draft};
use super::syntax::{Arg, Name, OpRef};
use crate::program::{BufferId, OpId, Program};
use crate::relation::Check;

/// Every relation with its arguments, as the docs and errors show them.
pub const RELATIONS: [&str; 18] = [
    "precedes(BEFORE, AFTER)",
    "overlaps(A, B)",
    "interleaves(LOW, HIGH)",
    "behind(LOW, HIGH)",
    "uninterrupted(OP, BY)",
    "elapsed_covers(ELAPSED, SPAN)",
    "returns_before(CALL, SPAN)",
    "returns_after(CALL, SPAN)",
    "answers(QUERY, SPAN)",
    "separates(CALL, BEFORE, AFTER)",
    "reuses(FIRST, SECOND)",
    "launch_cheaper(GRAPH, FIRST..LAST)",
    "serializes(A, B)",
    "faster(SLOW_FIRST..SLOW_LAST, FAST_FIRST..FAST_LAST)",
    "blocks(CALL, SPAN)",
    "contents(BUFFER, VALUE)",
    "memory_is(BUFFER, PLACE)",
    "chain(OP, OP, ...)",
];

type R<T> = Result<T, LitmusError>;

/// The checks one `check` or `observe` line makes (`chain` makes several).
pub(super) fn resolve(d: &Draft, cx: Cx<'_>, relation: &Name, args: &[Arg]) -> R<Vec<Check>> {
    let op = |a: &Arg| -> R<OpId> {
        match a {
            Arg::Ref(r) => d.op_ref(cx, r),
            Arg::Range(_, _, span) => {
                Err(cx.err(span, "expected one op, found a range", "a range"))
            }
            Arg::Int(i) => Err(cx.err(&i.span, "expected an op, found a number", "a number")),
        }
    };
    let range = |a: &Arg| -> R<(OpId, OpId)> {
        match a {
            Arg::Range(x, y, _) => Ok((d.op_ref(cx, x)?, d.op_ref(cx, y)?)),
            Arg::Ref(r) => Err(cx.err(
                &ref_span(r),
                "expected a range of ops `FIRST..LAST`",
                "one op",
            )),
            Arg::Int(i) => {
                Err(cx.err(&i.span, "expected a range of ops `FIRST..LAST`", "a number"))
            }
        }
    };
    let name = |a: &Arg, what: &str| -> R<Name> {
        match a {
            Arg::Ref(OpRef::Label(n)) => Ok(n.clone()),
            Arg::Ref(r) => Err(cx.err(&ref_span(r), format!("expected a {what}"), "an op index")),
            Arg::Range(_, _, span) => Err(cx.err(span, format!("expected a {what}"), "a range")),
            Arg::Int(i) => Err(cx.err(&i.span, format!("expected a {what}"), "a number")),
        }
    };
    let buffer = |a: &Arg| -> R<BufferId> { d.buffer(cx, &name(a, "buffer")?) };
    let value = |a: &Arg| -> R<i32> {
        match a {
            Arg::Int(i) => i
                .text
                .parse()
                .map_err(|_| cx.err(&i.span, "the value does not fit in an i32", "too large")),
            Arg::Ref(r) => Err(cx.err(&ref_span(r), "expected a number", "not a number")),
            Arg::Range(_, _, span) => Err(cx.err(span, "expected a number", "a range")),
        }
    };
    let one = |c: Check| Ok(vec![c]);
    match (relation.text.as_str(), args) {
        ("precedes", [a, b]) => one(Check::Precedes {
            before: op(a)?,
            after: op(b)?,
        }),
        ("overlaps", [a, b]) => one(Check::Overlaps {
            a: op(a)?,
            b: op(b)?,
        }),
        ("interleaves", [a, b]) => one(Check::Interleaves {
            low: op(a)?,
            high: op(b)?,
        }),
        ("behind", [a, b]) => one(Check::Behind {
            low: op(a)?,
            high: op(b)?,
        }),
        ("uninterrupted", [a, b]) => one(Check::Uninterrupted {
            op: op(a)?,
            by: op(b)?,
        }),
        ("elapsed_covers", [a, b]) => one(Check::ElapsedCovers {
            elapsed: op(a)?,
            span: op(b)?,
        }),
        ("returns_before", [a, b]) => one(Check::ReturnsBefore {
            call: op(a)?,
            span: op(b)?,
        }),
        ("returns_after", [a, b]) => one(Check::ReturnsAfter {
            call: op(a)?,
            span: op(b)?,
        }),
        ("answers", [a, b]) => one(Check::Answers {
            query: op(a)?,
            span: op(b)?,
        }),
        ("separates", [a, b, c]) => one(Check::Separates {
            call: op(a)?,
            before: op(b)?,
            after: op(c)?,
        }),
        ("reuses", [a, b]) => one(Check::Reuses {
            first: op(a)?,
            second: op(b)?,
        }),
        ("launch_cheaper", [a, b]) => {
            let (first, last) = range(b)?;
            one(Check::LaunchCheaper {
                graph: op(a)?,
                first,
                last,
            })
        }
        ("serializes", [a, b]) => one(Check::Serializes {
            a: op(a)?,
            b: op(b)?,
        }),
        ("faster", [a, b]) => one(Check::Faster {
            slow: range(a)?,
            fast: range(b)?,
        }),
        ("blocks", [a, b]) => one(Check::Blocks {
            call: op(a)?,
            span: op(b)?,
        }),
        ("contents", [a, b]) => one(Check::Contents {
            buffer: buffer(a)?,
            value: value(b)?,
        }),
        ("memory_is", [a, b]) => one(Check::MemoryIs {
            buffer: buffer(a)?,
            place: place(cx, &name(b, "place")?)?,
        }),
        ("chain", ops) if ops.len() >= 2 => {
            let ids = ops.iter().map(op).collect::<R<Vec<_>>>()?;
            Ok(ids
                .windows(2)
                .map(|w| Check::Precedes {
                    before: w[0],
                    after: w[1],
                })
                .collect())
        }
        (r, _) => match RELATIONS.iter().find(|s| s.split('(').next() == Some(r)) {
            Some(sig) => Err(cx.err(
                &relation.span,
                format!("wrong arguments for `{r}`"),
                &format!("it takes {sig}"),
            )),
            None => Err(cx.help(
                &relation.span,
                format!("unknown relation `{r}`"),
                "not a relation",
                &format!("the relations are {}", RELATIONS.join(", ")),
            )),
        },
    }
}

fn ref_span(r: &OpRef) -> std::ops::Range<usize> {
    match r {
        OpRef::Label(n) => n.span.clone(),
        OpRef::Index(_, s) => s.clone(),
    }
}

/// `precedes(A, B)`: the check as a claim file writes it, with `op` naming each op.
pub(super) fn print(check: &Check, program: &Program, op: impl Fn(OpId) -> String) -> String {
    let buffer = |b: BufferId| {
        super::print::name(
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

/// The error for a name that is not among `known` (streams, events, buffers, op labels).
pub(super) fn unknown<'a>(
    cx: Cx<'_>,
    n: &Name,
    what: &str,
    known: impl Iterator<Item = &'a String>,
    (place, hint): (&str, &str),
) -> LitmusError {
    let mut known: Vec<&String> = known.collect();
    known.sort();
    known.dedup();
    let help = if known.is_empty() {
        hint.to_string()
    } else {
        let list: Vec<String> = known.iter().take(12).map(|k| format!("`{k}`")).collect();
        format!(
            "known: {}{}; {hint}",
            list.join(", "),
            if known.len() > 12 { ", …" } else { "" }
        )
    };
    cx.help(
        &n.span,
        format!("unknown {what} `{}`", n.text),
        &format!("no {what} `{}` {place}", n.text),
        &help,
    )
}
