//! Claims on traces: a claim whose lines `select` ops of a recorded program instead of writing
//! one (docs/checking-your-program.md). The same header lines as any claim, then `trace`,
//! `trial each`, `select` and checks with a quantifier.
//!
//! ```text
//! claim ddp.hook_on_compute_stream_blocks_backward
//! statement "..."
//! source "003_2d7c825d6571bec0.txt" section "03_test_graph_block"
//! expect holds
//! trace "traces/ddp_same_stream.rank0.json.gz"
//! trial each "ProfilerStep#*"
//! select AR = kernel "ncclDevKernel_AllReduce*"
//! select GEMM = kernel "nvjet*" in "backward"
//! check ~exists overlaps(AR, GEMM)
//! ```

use super::claim_error::{unknown, Cx};
use super::header::{missing, HeaderLines};
use super::syntax::{Line, Name, Stmt, Word};
use super::traced_checks::check;
use crate::program::CopyDir;
use crate::trace::{Pattern, TrialSpec};
use crate::trace_claims::{Host, KindFilter, Selection, TraceCheck, TraceClaim, TraceRelation};

type R<T> = Result<T, super::LitmusError>;

/// Whether the lines of one claim make a claim on a trace.
pub(super) fn is_traced(lines: &[Line]) -> bool {
    lines.iter().any(|l| {
        matches!(
            l.stmt,
            Stmt::Trace { .. } | Stmt::Trial { .. } | Stmt::Select { .. }
        )
    })
}

/// The claims of one file's lines, each a claim on a trace.
pub(super) fn claims(cx: Cx<'_>, blocks: Vec<Vec<Line>>) -> R<Vec<TraceClaim>> {
    let mut out: Vec<TraceClaim> = Vec::new();
    for block in blocks {
        let claim = claim(cx, block)?;
        out.push(claim);
    }
    Ok(out)
}

fn claim(cx: Cx<'_>, lines: Vec<Line>) -> R<TraceClaim> {
    let Some(Stmt::Claim(id)) = lines.first().map(|l| &l.stmt) else {
        let span = lines.first().map_or(0..0, |l| l.span.clone());
        return Err(cx.help(
            &span,
            "this line comes before any claim",
            "outside a claim",
            "a claim starts with `claim ID`; everything after it belongs to it",
        ));
    };
    let id = id.clone();
    let mut header = HeaderLines::default();
    let mut traces = Vec::new();
    let mut trial = None;
    let mut selections: Vec<Selection> = Vec::new();
    let mut froms: Vec<Option<Name>> = Vec::new();
    let mut checks = Vec::new();
    let twice = |span: &super::syntax::Span, what: &str| {
        cx.err(
            span,
            format!("claim `{}` has a second `{what}` line", id.text),
            "second one",
        )
    };
    for line in lines.into_iter().skip(1) {
        let span = line.span.clone();
        let Some(stmt) = header.read(cx, &id, &span, line.stmt)? else {
            continue;
        };
        match stmt {
            Stmt::Trace { path, run } => traces.push((path.text, run)),
            Stmt::Trial { kernel, pattern } if trial.is_none() => {
                let pattern = glob(cx, &pattern)?;
                trial = Some(match kernel {
                    false => TrialSpec::Each(pattern),
                    true => TrialSpec::EachKernel(pattern),
                })
            }
            Stmt::Trial { .. } => return Err(twice(&span, "trial")),
            Stmt::Select { name, words } => {
                if selections.iter().any(|s| s.name == name.text) {
                    return Err(cx.err(
                        &name.span,
                        format!("selection `{}` is defined twice", name.text),
                        "second definition",
                    ));
                }
                let (s, from) = selection(cx, name, words)?;
                selections.push(s);
                froms.push(from);
            }
            Stmt::Check {
                observe,
                quantifier,
                relation,
                args,
            } => checks.extend(check(cx, &selections, observe, quantifier, relation, args)?),
            Stmt::Claim(_) => {}
            _ => return Err(no_program(cx, &span)),
        }
    }
    let (traces, runs) = recordings(cx, &id, traces, &froms, &checks)?;
    let claim = TraceClaim {
        header: header.finish(cx, &id)?,
        traces,
        runs,
        trial: trial.unwrap_or(TrialSpec::Whole),
        selections,
        checks,
    };
    if claim.checks.iter().all(|c| c.observe) {
        return Err(missing(cx, &id, "check", "check exists overlaps(A, B)"));
    }
    Ok(claim)
}

/// The error for a program's line (at `span`) in a claim on a trace.
fn no_program(cx: Cx<'_>, span: &super::syntax::Span) -> super::LitmusError {
    cx.help(
        span,
        "a claim on a trace has no program",
        "a program's line",
        "streams, events, buffers and ops belong to claims that run on the GPU; a claim on a \
         trace names its ops with `select`",
    )
}

/// The claim's trace files and the recording each belongs to (`trace "F" as NAME`), checked
/// against the selections' `from NAME` (`froms`, by selection) and the checks: a name is given
/// to every trace or to none, `from` names a recording of the claim, and only `faster` compares
/// two recordings (their clocks are not one).
fn recordings(
    cx: Cx<'_>,
    id: &Name,
    traces: Vec<(String, Option<Name>)>,
    froms: &[Option<Name>],
    checks: &[TraceCheck],
) -> R<(Vec<String>, Vec<String>)> {
    if let Some((path, _)) = (traces.iter().find(|(_, r)| r.is_none()))
        .filter(|_| traces.iter().any(|(_, r)| r.is_some()))
    {
        return Err(cx.help(
            &id.span,
            format!("claim `{}` names some of its traces, not `{path}`", id.text),
            "this claim",
            "name every trace (`trace \"FILE\" as NAME`, the ranks of one recording alike) or none",
        ));
    }
    let runs: Vec<String> = (traces.iter())
        .filter_map(|(_, r)| r.as_ref().map(|r| r.text.clone()))
        .collect();
    for from in froms.iter().flatten() {
        if !runs.contains(&from.text) {
            // Each name once, though the ranks of a recording repeat it.
            let names: std::collections::BTreeSet<&String> = runs.iter().collect();
            return Err(unknown(
                cx,
                from,
                "recording",
                names.into_iter(),
                ("in this claim", "name its traces: `trace \"FILE\" as NAME`"),
            ));
        }
    }
    for c in checks
        .iter()
        .filter(|c| c.relation != TraceRelation::Faster)
    {
        if let (Some(Some(ra)), Some(Some(rb))) = (froms.get(c.a), froms.get(c.b)) {
            if ra.text != rb.text {
                return Err(cx.help(
                    &rb.span,
                    format!(
                        "`{}` relates ops of two recordings, {} and {}",
                        c.relation.name(),
                        ra.text,
                        rb.text
                    ),
                    "another recording",
                    "their clocks are not one: only `faster(SLOW, FAST)` compares recordings",
                ));
            }
        }
    }
    Ok((traces.into_iter().map(|(p, _)| p).collect(), runs))
}

/// A name pattern, refused where it is too long to be one.
fn glob(cx: Cx<'_>, n: &Name) -> R<Pattern> {
    Pattern::new(n.text.as_str()).map_err(|e| cx.err(&n.span, e.to_string(), "this pattern"))
}

fn quoted(cx: Cx<'_>, n: &Name) -> bool {
    cx.text.as_bytes().get(n.span.start) == Some(&b'"')
}

/// `select NAME = KIND [DIR] [pinned|pageable] ["PATTERN"] [stream N] [device N] [rank N]
/// [in "RANGE"] [during "RANGE"] [call "CALL"] [from RECORDING]`, with the `from` word's name.
fn selection(cx: Cx<'_>, name: Name, words: Vec<Word>) -> R<(Selection, Option<Name>)> {
    let mut from = None;
    let mut seen: Vec<String> = Vec::new();
    let mut s = Selection {
        name: name.text.clone(),
        kind: KindFilter::Any,
        pattern: None,
        stream: None,
        device: None,
        rank: None,
        within: None,
        during: None,
        run: None,
        call: None,
    };
    let mut words = words.into_iter();
    s.kind = selection_kind(cx, &name, words.next())?;
    while let Some(w) = words.next() {
        let n = match w {
            Word::Name(n) => n,
            Word::Int(i) => {
                return Err(cx.help(
                    &i.span,
                    "a number without a word before it",
                    "stream, device or rank?",
                    "write `stream 7`, `device 1` or `rank 0`",
                ))
            }
        };
        if quoted(cx, &n) {
            if s.pattern.is_some() {
                return Err(cx.err(
                    &n.span,
                    "a second name pattern",
                    "one pattern per selection",
                ));
            }
            s.pattern = Some(glob(cx, &n)?);
            continue;
        }
        once_per_selection(cx, &mut seen, &n)?;
        property(cx, &mut s, &n, &mut words, &mut from)?;
    }
    Ok((s, from))
}

/// The first word of a selection, its kind (`name` when there is none).
fn selection_kind(cx: Cx<'_>, name: &Name, first: Option<Word>) -> R<KindFilter> {
    let kind = match first {
        Some(Word::Name(k)) if !quoted(cx, &k) => k,
        Some(Word::Name(k)) => return Err(kind_error(cx, &k.span)),
        Some(Word::Int(k)) => return Err(kind_error(cx, &k.span)),
        None => return Err(kind_error(cx, &name.span)),
    };
    Ok(match kind.text.as_str() {
        "kernel" => KindFilter::Kernel,
        "memset" => KindFilter::Memset,
        "host" => KindFilter::Host,
        "any" => KindFilter::Any,
        "copy" => KindFilter::Copy {
            dir: None,
            host: None,
        },
        _ => return Err(kind_error(cx, &kind.span)),
    })
}

/// Word `n` of a selection, whose group (a direction, a host memory, or the word itself) must
/// not be in `seen` yet; it is then.
fn once_per_selection(cx: Cx<'_>, seen: &mut Vec<String>, n: &Name) -> R<()> {
    // Each word once: `stream 13 stream 14` would take stream 14 alone, silently.
    let group = match n.text.as_str() {
        "h2d" | "d2h" | "d2d" | "p2p" => "direction",
        "pinned" | "pageable" => "host memory",
        w => w,
    }
    .to_string();
    if seen.contains(&group) {
        return Err(cx.help(
            &n.span,
            format!("a second {group} word in one selection"),
            "an op has one",
            "a selection takes ops that have every property it names: select the others \
             apart (`select A = kernel stream 13`, `select B = kernel stream 14`)",
        ));
    }
    seen.push(group);
    Ok(())
}

/// The property word `n` names, with the words after it that it takes, set on `s`; `from` takes
/// the recording's name of a `from` word.
fn property(
    cx: Cx<'_>,
    s: &mut Selection,
    n: &Name,
    words: &mut impl Iterator<Item = Word>,
    from: &mut Option<Name>,
) -> R<()> {
    match (n.text.as_str(), &mut s.kind) {
        (w @ ("stream" | "device"), KindFilter::Host) => {
            return Err(cx.help(
                &n.span,
                format!("`{w}` after `host`"),
                "a host function runs on the host",
                "a trace does not say which stream enqueued it: select its runs by their \
                 range's name, `rank` or `in \"RANGE\"`",
            ))
        }
        ("stream", _) => s.stream = Some(number(cx, n, words.next(), "stream")?),
        ("device", _) => s.device = Some(small(cx, n, number(cx, n, words.next(), "device")?)?),
        ("rank", _) => s.rank = Some(small(cx, n, number(cx, n, words.next(), "rank")?)?),
        ("from", _) => match words.next() {
            Some(Word::Name(r)) if !quoted(cx, &r) => {
                s.run = Some(r.text.clone());
                *from = Some(r);
            }
            _ => {
                return Err(cx.err(
                    &n.span,
                    "`from` needs a recording's name",
                    "e.g. `from PINNED` after `trace \"FILE\" as PINNED`",
                ))
            }
        },
        (w @ ("in" | "during" | "call"), _) => match words.next() {
            Some(Word::Name(r)) if quoted(cx, &r) => match w {
                "in" => s.within = Some(glob(cx, &r)?),
                "during" => s.during = Some(glob(cx, &r)?),
                _ => s.call = Some(glob(cx, &r)?),
            },
            _ => {
                return Err(cx.err(
                    &n.span,
                    format!("`{w}` needs a name in quotes"),
                    "e.g. `in \"backward\"`, `call \"cudaMemcpyAsync\"`",
                ))
            }
        },
        (d @ ("h2d" | "d2h" | "d2d" | "p2p"), KindFilter::Copy { dir, .. }) => {
            *dir = Some(match d {
                "h2d" => CopyDir::H2D,
                "d2h" => CopyDir::D2H,
                "d2d" => CopyDir::D2D,
                _ => CopyDir::P2P,
            })
        }
        (h @ ("pinned" | "pageable"), KindFilter::Copy { host, .. }) => {
            *host = Some(match h {
                "pinned" => Host::Pinned,
                _ => Host::Pageable,
            })
        }
        _ => {
            return Err(cx.help(
                &n.span,
                format!("unknown word `{}` in a selection", n.text),
                "not understood here",
                "after the kind come a name pattern in quotes, `stream N`, `device N`, \
                 `rank N`, `in \"RANGE\"`, `during \"RANGE\"`, `call \"CALL\"`, `from RECORDING`, and for copies `h2d`, `d2h`, `d2d`, `p2p`, \
                 `pinned`, `pageable`",
            ))
        }
    }
    Ok(())
}

/// The number after word `n` (`next`), of a stream, a device or a rank (`what`).
fn number(cx: Cx<'_>, n: &Name, next: Option<Word>, what: &str) -> R<u64> {
    match next {
        Some(Word::Int(i)) => i.text.parse::<u64>().map_err(|_| {
            cx.err(
                &i.span,
                format!("`{}` is no {what} number", i.text),
                "too large",
            )
        }),
        _ => Err(cx.err(
            &n.span,
            format!("`{}` needs a number after it", n.text),
            "e.g. `stream 7`",
        )),
    }
}

fn small(cx: Cx<'_>, n: &Name, v: u64) -> R<u32> {
    u32::try_from(v).map_err(|_| {
        cx.err(
            &n.span,
            format!("{} {v} is out of range", n.text),
            "too large",
        )
    })
}

fn kind_error(cx: Cx<'_>, span: &super::syntax::Span) -> super::LitmusError {
    cx.help(
        span,
        "a selection starts with the kind of op",
        "expected a kind",
        "one of `kernel`, `copy`, `memset`, `host` (a host function's range), `any`, e.g. \
         `select AR = kernel \"nccl*AllReduce*\"`",
    )
}
