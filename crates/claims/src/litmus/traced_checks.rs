//! The checks of a claim on a trace: `check [QUANTIFIER] RELATION(A, [next] B)` and `[forall]
//! chain(A, B, …)` over the claim's selections (docs/checking-your-program.md).

use super::claim_error::{unknown, Cx};
use super::syntax::{Arg, Name, OpRef};
use crate::trace_claims::{Quantifier, Selection, TraceCheck, TraceRelation};

type R<T> = Result<T, super::LitmusError>;

pub(super) fn check(
    cx: Cx<'_>,
    selections: &[Selection],
    observe: bool,
    quantifier: Option<Name>,
    relation: Name,
    args: Vec<Arg>,
) -> R<Vec<TraceCheck>> {
    if relation.text == "chain" {
        return chain(cx, selections, observe, quantifier, relation, args);
    }
    let Some(rel) = TraceRelation::by_name(&relation.text) else {
        let known: Vec<String> = TraceRelation::ALL
            .iter()
            .map(|(n, _)| n.to_string())
            .collect();
        return Err(unknown(
            cx,
            &relation,
            "relation on a trace",
            known.iter(),
            ("here", "a trace has spans and calls: block order, readings and contents need the lab's own programs"),
        ));
    };
    let q = match quantifier.as_ref().map(|q| q.text.as_str()) {
        None => Quantifier::One,
        Some("exists") => Quantifier::Exists,
        Some("forall") => Quantifier::Forall,
        Some(_) => Quantifier::NotExists,
    };
    if let (TraceRelation::Faster, Some(qn)) = (rel, &quantifier) {
        return Err(cx.err(
            &qn.span,
            "`faster` compares two selections as phases, with no quantifier",
            "drop it",
        ));
    }
    let [a, b] = args.as_slice() else {
        return Err(cx.err(
            &relation.span,
            format!("`{}` takes two selections", relation.text),
            "e.g. `(AR, GEMM)`",
        ));
    };
    let find = |arg: &Arg| selection(cx, selections, arg);
    let (b, next) = match b {
        Arg::Next(r, span) => {
            if rel == TraceRelation::Faster {
                return Err(cx.err(
                    span,
                    "`faster` compares two phases, not pairs of ops",
                    "drop `next`",
                ));
            }
            (find(&Arg::Ref(r.clone()))?, true)
        }
        b => (find(b)?, false),
    };
    Ok(vec![TraceCheck {
        quantifier: q,
        relation: rel,
        a: find(a)?,
        b,
        observe,
        next,
    }])
}

/// The index of the selection `arg` names.
fn selection(cx: Cx<'_>, selections: &[Selection], arg: &Arg) -> R<usize> {
    match arg {
        Arg::Ref(OpRef::Label(n)) => {
            selections
                .iter()
                .position(|s| s.name == n.text)
                .ok_or_else(|| {
                    let known: Vec<String> = selections.iter().map(|s| s.name.clone()).collect();
                    unknown(
                        cx,
                        n,
                        "selection",
                        known.iter(),
                        (
                            "before this line",
                            "declare it first with `select NAME = KIND ...`",
                        ),
                    )
                })
        }
        Arg::Ref(OpRef::Index(_, span)) | Arg::Range(_, _, span) => Err(cx.err(
            span,
            "a check on a trace names selections",
            "not a selection",
        )),
        Arg::Int(i) => Err(cx.err(
            &i.span,
            "a check on a trace names selections",
            "not a selection",
        )),
        Arg::Next(_, span) => Err(cx.help(
            span,
            "`next` comes second",
            "here",
            "`forall precedes(A, next B)`: each op of A with the first op of B issued after it",
        )),
    }
}

/// `[forall] chain(A, B, C…)`: `precedes` between each selection and the next, as the lab's
/// `chain` (`forall chain(A, next B, next C)`: each A, the B issued next, the C after that B).
/// `exists` and `~exists` would judge each link apart, not one path through them: refused.
fn chain(
    cx: Cx<'_>,
    selections: &[Selection],
    observe: bool,
    quantifier: Option<Name>,
    relation: Name,
    args: Vec<Arg>,
) -> R<Vec<TraceCheck>> {
    if let Some(q) = quantifier.as_ref().filter(|q| q.text != "forall") {
        return Err(cx.help(
            &q.span,
            format!("`{} chain` would judge each link apart", q.text),
            "not one path",
            "write `forall chain(…)`, or the links one by one: `check exists precedes(A, B)`",
        ));
    }
    if args.len() < 2 {
        return Err(cx.err(
            &relation.span,
            "`chain` takes two selections or more",
            "e.g. `chain(H2D, K, D2H)`",
        ));
    }
    let precedes = Name {
        text: "precedes".into(),
        span: relation.span.clone(),
    };
    let mut links = Vec::new();
    for w in args.windows(2) {
        let first = match &w[0] {
            Arg::Next(r, _) => Arg::Ref(r.clone()),
            a => a.clone(),
        };
        links.extend(check(
            cx,
            selections,
            observe,
            quantifier.clone(),
            precedes.clone(),
            vec![first, w[1].clone()],
        )?);
    }
    Ok(links)
}
