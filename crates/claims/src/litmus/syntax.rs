//! The grammar of claim files, written with `winnow`: text to a list of statements with spans.
//!
//! This layer knows only the shape of each line; names, units and limits are checked by
//! `resolve.rs`, which has the whole claim in view and so can say *which* stream is unknown or
//! *why* a duration is refused. Each parser reads one line's statement and never crosses a line
//! end, so an error always points into the line that caused it. After a keyword has been
//! recognised the rest of its line is parsed under `cut_err`: an error there is the error, and
//! the parser does not go back to try something else and report a vaguer one.

use winnow::ascii::line_ending;
use winnow::combinator::{alt, cut_err, delimited, eof, fail, opt, preceded};
use winnow::combinator::{repeat, separated, terminated};
use winnow::error::{ContextError, ErrMode, StrContext, StrContextValue};
use winnow::prelude::*;
use winnow::stream::LocatingSlice;
use winnow::token::take_while;

pub(super) use super::ast::*;
pub(super) use super::words::In;
use super::words::*;

/// Parses a whole file into its statements.
pub(super) fn file(text: &str) -> Result<Vec<Line>, (usize, String)> {
    let mut input = LocatingSlice::new(text);
    let parsed = (
        separated(0.., line, line_ending),
        cut_err(eof).context(expected("the end of the line")),
    )
        .map(|(lines, _): (Vec<Option<Line>>, _)| lines.into_iter().flatten().collect())
        .parse_next(&mut input);
    match parsed {
        Ok(lines) => Ok(lines),
        Err(e) => {
            let at = text.len() - input.len();
            let err = match e {
                ErrMode::Backtrack(e) | ErrMode::Cut(e) => e,
                ErrMode::Incomplete(_) => ContextError::new(),
            };
            Err((at, describe(&err)))
        }
    }
}

/// "expected X or Y": what the parser wanted where it stopped.
fn describe(err: &ContextError) -> String {
    // The innermost expectation is the precise one; outer ones only repeat it in general terms.
    let wanted = err.context().find_map(|c| match c {
        StrContext::Expected(StrContextValue::Description(d)) => Some(d.to_string()),
        StrContext::Expected(other) => Some(format!("`{other}`")),
        _ => None,
    });
    match wanted {
        Some(w) => format!("expected {w}"),
        None => "this line does not parse".to_string(),
    }
}

fn line(i: &mut In<'_>) -> Res<Option<Line>> {
    ws(i)?;
    let stmt = if opt(at_line_end).parse_next(i)?.is_some() {
        None
    } else {
        let (stmt, span) = cut_err(stmt.with_span()).parse_next(i)?;
        Some(Line { stmt, span })
    };
    ws(i)?;
    opt(("#", take_while(0.., |c| c != '\n' && c != '\r'))).parse_next(i)?;
    cut_err(at_line_end)
        .context(expected("the end of the line"))
        .parse_next(i)?;
    Ok(stmt)
}

/// One statement, by its keyword: a table of the keywords, each line's words read by the
/// function named beside it.
fn stmt(i: &mut In<'_>) -> Res<Stmt> {
    let start = i.checkpoint();
    let labels = (name, opt(preceded((ws, ".."), cut_err(name))));
    if let Some((label, last)) = opt(terminated(labels, (ws, ":"))).parse_next(i)? {
        ws(i)?;
        let kw = cut_err(ident.verify(|w: &str| OPS.contains(&w)))
            .context(expected("an op after the label, such as `spin 50us on s1`"))
            .parse_next(i)?;
        return op(i, kw).map(|op| Stmt::Op {
            label: Some(label),
            last,
            op,
        });
    }
    let Some(kw) = opt(ident).parse_next(i)? else {
        return cut_err(fail).context(expected(STATEMENT)).parse_next(i);
    };
    let text = |what| need_name(what);
    Ok(match kw {
        "claim" => Stmt::Claim(text("the claim's id")(i)?),
        "statement" => Stmt::Statement(text("the statement in quotes")(i)?),
        "source" => {
            let document = text("the source file in quotes")(i)?;
            need("section", "`section \"...\"`")(i)?;
            let section = text("the section in quotes")(i)?;
            Stmt::Source { document, section }
        }
        "expect" => Stmt::Expect(text("`holds` or `violated`")(i)?),
        "rationale" => Stmt::Rationale(text("the rationale in quotes")(i)?),
        "table" => Stmt::Table(text("`sleep`, `pipeline` or `prefetch`")(i)?),
        "program" => Stmt::Program(text("the program's name")(i)?),
        "env" => env_line(i)?,
        "stream" => stream_line(i)?,
        "event" => Stmt::Event(names(i, "an event name")?),
        "peer_access" => Stmt::PeerAccess,
        "buffer" => buffer_line(i)?,
        "check" | "observe" => check_line(i, kw == "observe")?,
        "trace" => {
            let path = text("the trace file in quotes")(i)?;
            let run = match opt(key("as")).parse_next(i)? {
                Some(()) => Some(text("a name for the recording, such as `as PINNED`")(i)?),
                None => None,
            };
            Stmt::Trace { path, run }
        }
        "trial" => {
            need(
                "each",
                "`each \"RANGE\"`, such as `trial each \"ProfilerStep#*\"`",
            )(i)?;
            let kernel = opt(key("kernel")).parse_next(i)?.is_some();
            Stmt::Trial {
                kernel,
                pattern: text("a range or kernel name pattern in quotes")(i)?,
            }
        }
        "select" => select_line(i)?,
        _ if OPS.contains(&kw) => Stmt::Op {
            label: None,
            last: None,
            op: op(i, kw)?,
        },
        _ => {
            i.reset(&start);
            return cut_err(fail).context(expected(STATEMENT)).parse_next(i);
        }
    })
}

/// `env NAME = VALUE` or `env NAME unset`, after the keyword.
fn env_line(i: &mut In<'_>) -> Res<Stmt> {
    let name = need_name("a variable's name")(i)?;
    ws(i)?;
    let value = cut_err(alt((
        key("unset").map(|()| None),
        preceded((ws, "="), cut_err(name_or_value)).map(Some),
    )))
    .context(expected("`= VALUE` or `unset`"))
    .parse_next(i)?;
    Ok(Stmt::Env { name, value })
}

/// `stream NAMES = KIND [priority P] [on device N]`, after the keyword.
fn stream_line(i: &mut In<'_>) -> Res<Stmt> {
    let names = names(i, "a stream name")?;
    cut_err((ws, "="))
        .context(expected("`= KIND`"))
        .parse_next(i)?;
    let kind = need_name("a stream kind: legacy-null, per-thread, blocking or non-blocking")(i)?;
    let priority = opt(preceded(
        key("priority"),
        need_name("`lowest` or `highest`"),
    ))
    .parse_next(i)?;
    Ok(Stmt::Stream {
        names,
        kind,
        priority,
        device: on_device(i)?,
    })
}

/// `buffer NAME = PLACE SIZE [fill N] [read_back] [on device N]`, after the keyword.
fn buffer_line(i: &mut In<'_>) -> Res<Stmt> {
    let name = need_name("a buffer name")(i)?;
    cut_err((ws, "="))
        .context(expected("`= PLACE SIZE`"))
        .parse_next(i)?;
    let place = need_name("a place: device, pinned or pageable")(i)?;
    let size = need_quantity("a size such as 4KiB")(i)?;
    let fill = opt(preceded(
        key("fill"),
        cut_err(int).context(expected("a number")),
    ))
    .parse_next(i)?;
    let read_back = opt(key("read_back")).parse_next(i)?.is_some();
    Ok(Stmt::Buffer {
        name,
        place,
        size,
        fill,
        read_back,
        device: on_device(i)?,
    })
}

/// `check [QUANTIFIER] RELATION(ARGS)` (or `observe ...`), after the keyword.
fn check_line(i: &mut In<'_>, observe: bool) -> Res<Stmt> {
    let quantifier = opt(alt((
        preceded(
            (ws, "~"),
            cut_err(key("exists")).context(expected("`exists`")),
        )
        .with_span()
        .map(|((), span)| Name {
            text: "~exists".into(),
            span,
        }),
        alt((key("exists"), key("forall")))
            .take()
            .with_span()
            .map(|(t, span): (&str, Span)| Name {
                text: t.trim().to_string(),
                span,
            }),
    )))
    .parse_next(i)?;
    let relation = need_name("a relation such as `precedes(A, B)`")(i)?;
    let args = cut_err(delimited(
        (ws, "("),
        separated(0.., arg, (ws, ",")),
        (ws, ")"),
    ))
    .context(expected("arguments in parentheses, such as `(A, B)`"))
    .parse_next(i)?;
    Ok(Stmt::Check {
        observe,
        quantifier,
        relation,
        args,
    })
}

/// `select NAME = KIND WORDS...`, after the keyword.
fn select_line(i: &mut In<'_>) -> Res<Stmt> {
    let selection = need_name("a selection name")(i)?;
    cut_err((ws, "="))
        .context(expected("`= KIND ...`, such as `= kernel \"*gemm*\"`"))
        .parse_next(i)?;
    let words = repeat(
        1..,
        preceded(ws, alt((int.map(Word::Int), name.map(Word::Name)))),
    )
    .context(expected("a kind: kernel, copy, memset or any"))
    .parse_next(i)
    .map_err(|e: ErrMode<ContextError>| e.cut())?;
    Ok(Stmt::Select {
        name: selection,
        words,
    })
}

fn name_or_value(i: &mut In<'_>) -> Res<Name> {
    ws(i)?;
    alt((
        name,
        take_while(1.., |c: char| {
            c.is_alphanumeric() || matches!(c, '_' | '-' | '.')
        })
        .with_span()
        .map(|(t, span): (&str, Span)| Name {
            text: t.to_string(),
            span,
        }),
    ))
    .parse_next(i)
}

fn names(i: &mut In<'_>, what: &'static str) -> Res<Vec<Name>> {
    cut_err(separated(1.., name, (ws, ",")))
        .context(expected(what))
        .parse_next(i)
}

fn arg(i: &mut In<'_>) -> Res<Arg> {
    ws(i)?;
    alt((
        int.map(Arg::Int),
        // `next B`: of selection B, the first op issued after each op of the other (traces).
        preceded(("next", take_while(1.., [' ', '\t'])), op_ref)
            .with_span()
            .map(|(r, span)| Arg::Next(r, span)),
        (op_ref, opt(preceded((ws, ".."), cut_err(op_ref))))
            .with_span()
            .map(|((a, b), span)| match b {
                Some(b) => Arg::Range(a, b, span),
                None => Arg::Ref(a),
            }),
    ))
    .parse_next(i)
}

/// The words of an op after its keyword `kw`. A table: one arm per op keyword, kept whole on
/// purpose.
fn op(i: &mut In<'_>, kw: &str) -> Res<OpSyntax> {
    let dur = "a duration with its unit, such as 50us or 1.5ms";
    let size = "a size with its unit, such as 4KiB";
    Ok(match kw {
        "spin" => {
            let duration = need_quantity(dur)(i)?;
            let (launch, stream) = launch_on_stream(i)?;
            OpSyntax::Spin {
                duration,
                launch,
                stream,
            }
        }
        "record" | "wait" => {
            let event = need_name("an event name")(i)?;
            let stream = on_stream(i)?;
            if kw == "record" {
                OpSyntax::Record { event, stream }
            } else {
                OpSyntax::Wait { event, stream }
            }
        }
        "host_sync" => OpSyntax::HostSync(target(i)?),
        "query" => OpSyntax::Query(target(i)?),
        "elapsed" => {
            let from = need_name("the start event")(i)?;
            need("to", "`to EVENT`")(i)?;
            OpSyntax::Elapsed {
                from,
                to: need_name("the end event")(i)?,
            }
        }
        "host_fn" => OpSyntax::HostFn {
            duration: need_quantity(dur)(i)?,
            stream: on_stream(i)?,
            via: opt(preceded(
                key("via"),
                need_name("cuLaunchHostFunc or cuStreamAddCallback"),
            ))
            .parse_next(i)?,
        },
        "api" => OpSyntax::Api {
            call: need_name("a driver call such as cuMemAlloc")(i)?,
            size: need_quantity(size)(i)?,
        },
        "alloc_async" => OpSyntax::AllocAsync {
            size: need_quantity(size)(i)?,
            stream: on_stream(i)?,
        },
        "free_async" | "graph_launch" => {
            let target = cut_err(op_ref)
                .context(expected("an op's label or #INDEX"))
                .parse_next(i)?;
            let stream = on_stream(i)?;
            if kw == "free_async" {
                OpSyntax::FreeAsync {
                    alloc: target,
                    stream,
                }
            } else {
                OpSyntax::GraphLaunch {
                    graph: target,
                    stream,
                }
            }
        }
        "begin_capture" => OpSyntax::BeginCapture(need_name("a stream name")(i)?),
        "device_sync" => OpSyntax::DeviceSync(
            cut_err(int)
                .context(expected("a device number"))
                .parse_next(i)?,
        ),
        "all_reduce" => OpSyntax::AllReduce {
            buffer: need_name("a device buffer")(i)?,
            stream: on_stream(i)?,
        },
        "end_capture" => OpSyntax::EndCapture(need_name("a stream name")(i)?),
        "copy" => {
            let size = opt(quantity).parse_next(i)?;
            let src = need_name("the source buffer")(i)?;
            need("to", "`to BUFFER`")(i)?;
            OpSyntax::Copy {
                size,
                src,
                dst: need_name("the destination buffer")(i)?,
                stream: on_stream(i)?,
            }
        }
        "add" => {
            let out = need_name("the output buffer")(i)?;
            cut_err((ws, "="))
                .context(expected("`= A + B`"))
                .parse_next(i)?;
            let a = need_name("a buffer")(i)?;
            cut_err((ws, "+"))
                .context(expected("`+ B`"))
                .parse_next(i)?;
            let b = need_name("a buffer")(i)?;
            let (launch, stream) = launch_on_stream(i)?;
            OpSyntax::Add {
                out,
                a,
                b,
                launch,
                stream,
            }
        }
        _ => return cut_err(fail).context(expected("an op")).parse_next(i),
    })
}
