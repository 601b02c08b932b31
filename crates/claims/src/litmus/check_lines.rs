//! Checks in claim files: `check RELATION(ARGS)`, one relation per [`Check`] variant, named as
//! its serde tag and taking its fields in order. Both directions live here, so that a new
//! variant fails to compile in one place until it is readable and printable.

use super::claim_error::Cx;
use super::claim_error::LitmusError;
use super::draft::Draft;
use super::ops::place;
use super::syntax::{Arg, Name, OpRef};
use crate::judge::relation::Check;
use crate::program::{BufferId, OpId};

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

/// The checks one `check` or `observe` line makes (`chain` makes several). A table, kept whole
/// on purpose: one arm per relation, its arguments read in order by [`Args`].
pub(super) fn resolve(d: &Draft, cx: Cx<'_>, relation: &Name, args: &[Arg]) -> R<Vec<Check>> {
    let a = Args { d, cx };
    let (op, range) = (|x: &Arg| a.op(x), |x: &Arg| a.range(x));
    let (buffer, value) = (|x: &Arg| a.buffer(x), |x: &Arg| a.value(x));
    let name = |x: &Arg, what: &str| a.name(x, what);
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

/// A check's arguments read as what its relation takes, each wrong kind of argument an error
/// on it.
struct Args<'a, 'c> {
    d: &'a Draft,
    cx: Cx<'c>,
}

impl Args<'_, '_> {
    fn op(&self, a: &Arg) -> R<OpId> {
        let cx = self.cx;
        match a {
            Arg::Ref(r) => self.d.op_ref(cx, r),
            Arg::Range(_, _, span) => {
                Err(cx.err(span, "expected one op, found a range", "a range"))
            }
            Arg::Int(i) => Err(cx.err(&i.span, "expected an op, found a number", "a number")),
            Arg::Next(_, span) => Err(next_on_a_trace(cx, span)),
        }
    }

    fn range(&self, a: &Arg) -> R<(OpId, OpId)> {
        let cx = self.cx;
        match a {
            Arg::Range(x, y, _) => Ok((self.d.op_ref(cx, x)?, self.d.op_ref(cx, y)?)),
            Arg::Ref(r) => Err(cx.err(
                &ref_span(r),
                "expected a range of ops `FIRST..LAST`",
                "one op",
            )),
            Arg::Int(i) => {
                Err(cx.err(&i.span, "expected a range of ops `FIRST..LAST`", "a number"))
            }
            Arg::Next(_, span) => Err(next_on_a_trace(cx, span)),
        }
    }

    /// A name (of a buffer, a place: `what`).
    fn name(&self, a: &Arg, what: &str) -> R<Name> {
        let cx = self.cx;
        match a {
            Arg::Ref(OpRef::Label(n)) => Ok(n.clone()),
            Arg::Ref(r) => Err(cx.err(&ref_span(r), format!("expected a {what}"), "an op index")),
            Arg::Range(_, _, span) => Err(cx.err(span, format!("expected a {what}"), "a range")),
            Arg::Int(i) => Err(cx.err(&i.span, format!("expected a {what}"), "a number")),
            Arg::Next(_, span) => Err(next_on_a_trace(cx, span)),
        }
    }

    fn buffer(&self, a: &Arg) -> R<BufferId> {
        self.d.buffer(self.cx, &self.name(a, "buffer")?)
    }

    fn value(&self, a: &Arg) -> R<i32> {
        let cx = self.cx;
        match a {
            Arg::Int(i) => i
                .text
                .parse()
                .map_err(|_| cx.err(&i.span, "the value does not fit in an i32", "too large")),
            Arg::Ref(r) => Err(cx.err(&ref_span(r), "expected a number", "not a number")),
            Arg::Range(_, _, span) => Err(cx.err(span, "expected a number", "a range")),
            Arg::Next(_, span) => Err(next_on_a_trace(cx, span)),
        }
    }
}

fn ref_span(r: &OpRef) -> std::ops::Range<usize> {
    match r {
        OpRef::Label(n) => n.span.clone(),
        OpRef::Index(_, s) => s.clone(),
    }
}

/// `next B` in a lab claim: its ops are named one by one, in the order the program issues them.
fn next_on_a_trace(cx: Cx<'_>, span: &std::ops::Range<usize>) -> LitmusError {
    cx.help(
        span,
        "`next` pairs the ops of selections on a trace",
        "not an op of this program",
        "a program's ops are named one by one: write the op itself",
    )
}
