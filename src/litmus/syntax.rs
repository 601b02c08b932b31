//! The grammar of claim files, written with `winnow`: text to a list of statements with spans.
//!
//! This layer knows only the shape of each line; names, units and limits are checked by
//! `resolve.rs`, which has the whole claim in view and so can say *which* stream is unknown or
//! *why* a duration is refused. Each parser reads one line's statement and never crosses a line
//! end, so an error always points into the line that caused it. After a keyword has been
//! recognised the rest of its line is parsed under `cut_err`: an error there is the error, and
//! the parser does not go back to try something else and report a vaguer one.

use winnow::ascii::{digit1, line_ending};
use winnow::combinator::{alt, cut_err, delimited, eof, fail, opt, peek, preceded, repeat};
use winnow::combinator::{separated, terminated};
use winnow::error::{ContextError, ErrMode, StrContext, StrContextValue};
use winnow::prelude::*;
use winnow::stream::LocatingSlice;
use winnow::token::{none_of, one_of, take_while};

pub(super) type In<'s> = LocatingSlice<&'s str>;
type Res<O> = winnow::ModalResult<O>;
pub(super) use super::ast::*;

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

fn expected(what: &'static str) -> StrContext {
    StrContext::Expected(StrContextValue::Description(what))
}

fn ws(i: &mut In<'_>) -> Res<()> {
    take_while(0.., [' ', '\t']).void().parse_next(i)
}

fn at_line_end(i: &mut In<'_>) -> Res<()> {
    peek(alt(("#".void(), line_ending.void(), eof.void()))).parse_next(i)
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

/// An identifier: a letter or `_`, then letters, digits, `_`, `-`, `'`, and single dots between
/// them (`fifo.legacy-null`, `K1'`); `..` ends it, for ranges.
fn ident<'s>(i: &mut In<'s>) -> Res<&'s str> {
    let part = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '\'');
    (
        one_of(|c: char| c.is_alphabetic() || c == '_'),
        take_while(0.., part),
        repeat(0.., (".", take_while(1.., part))).map(|()| ()),
    )
        .take()
        .parse_next(i)
}

fn string(i: &mut In<'_>) -> Res<String> {
    let escape = preceded(
        "\\",
        cut_err(alt((
            "n".value('\n'),
            "t".value('\t'),
            "r".value('\r'),
            "\"".value('"'),
            "\\".value('\\'),
            delimited(
                "u{",
                take_while(1..=6, |c: char| c.is_ascii_hexdigit()),
                "}",
            )
            .verify_map(|h: &str| u32::from_str_radix(h, 16).ok().and_then(char::from_u32)),
        )))
        .context(expected("an escape: \\n, \\t, \\r, \\\", \\\\ or \\u{hex}")),
    );
    preceded(
        "\"",
        cut_err(terminated(
            repeat(0.., alt((none_of(['"', '\\', '\n', '\r']), escape))),
            "\"",
        ))
        .context(expected("a closing `\"` on the same line")),
    )
    .parse_next(i)
}

/// An identifier or a quoted string, after optional blanks.
fn name(i: &mut In<'_>) -> Res<Name> {
    ws(i)?;
    alt((string, ident.map(str::to_string)))
        .with_span()
        .map(|(text, span)| Name { text, span })
        .parse_next(i)
}

fn need_name(what: &'static str) -> impl FnMut(&mut In<'_>) -> Res<Name> {
    move |i| cut_err(name).context(expected(what)).parse_next(i)
}

/// The keyword `k` as a whole word, after optional blanks.
fn key<'s>(k: &'static str) -> impl FnMut(&mut In<'s>) -> Res<()> {
    move |i| {
        ws(i)?;
        ident.verify(|w: &str| w == k).void().parse_next(i)
    }
}

fn need(k: &'static str, what: &'static str) -> impl FnMut(&mut In<'_>) -> Res<()> {
    move |i| cut_err(key(k)).context(expected(what)).parse_next(i)
}

fn op_ref(i: &mut In<'_>) -> Res<OpRef> {
    ws(i)?;
    alt((
        preceded("#", digit1)
            .with_span()
            .map(|(d, span): (&str, Span)| OpRef::Index(d.parse().unwrap_or(usize::MAX), span)),
        name.map(OpRef::Label),
    ))
    .parse_next(i)
}

fn int(i: &mut In<'_>) -> Res<Int> {
    ws(i)?;
    (opt("-"), digit1)
        .take()
        .with_span()
        .map(|(t, span): (&str, Span)| Int {
            text: t.to_string(),
            span,
        })
        .parse_next(i)
}

fn quantity(i: &mut In<'_>) -> Res<Quantity> {
    ws(i)?;
    // The unit is the word right after the number (`50us`); a known unit after a blank
    // (`50 us`) is read too, but no other word, so `spin 50 on s1` is a number without a unit.
    let known = |u: &str| {
        super::units::DURATIONS
            .iter()
            .chain(&super::units::SIZES)
            .any(|(k, _)| *k == u)
    };
    let attached = take_while(1.., |c: char| c.is_alphabetic());
    let spaced = preceded(
        take_while(1.., [' ', '\t']),
        take_while(1.., |c: char| c.is_alphabetic()).verify(known),
    );
    (
        (digit1, opt((".", digit1))).take(),
        opt(alt((attached, spaced)).with_span()),
    )
        .with_span()
        .map(|((number, unit), span): ((&str, _), Span)| Quantity {
            number: number.to_string(),
            unit: unit.map(|(u, s): (&str, Span)| Name {
                text: u.to_string(),
                span: s,
            }),
            span,
        })
        .parse_next(i)
}

fn need_quantity(what: &'static str) -> impl FnMut(&mut In<'_>) -> Res<Quantity> {
    move |i| cut_err(quantity).context(expected(what)).parse_next(i)
}

fn launch(i: &mut In<'_>) -> Res<Launch> {
    preceded(
        (ws, "<<<"),
        cut_err((int, preceded((ws, ","), int), preceded(ws, ">>>")))
            .context(expected("a launch configuration `<<<GRID, BLOCK>>>`")),
    )
    .map(|(grid, block, _)| Launch { grid, block })
    .parse_next(i)
}

/// `[device N]`: the GPU a stream or buffer belongs to, when not the first.
fn on_device(i: &mut In<'_>) -> Res<Option<Int>> {
    opt(preceded(
        key("device"),
        cut_err(int).context(expected("a device number")),
    ))
    .parse_next(i)
}

fn on_stream(i: &mut In<'_>) -> Res<Name> {
    need("on", "`on STREAM`")(i)?;
    need_name("a stream name")(i)
}

/// `[<<<G, B>>>] on STREAM`, or `on STREAM <<<G, B>>>` as a CUDA programmer may write it.
fn launch_on_stream(i: &mut In<'_>) -> Res<(Option<Launch>, Name)> {
    let before = opt(launch).parse_next(i)?;
    let stream = on_stream(i)?;
    let launch = match before {
        Some(l) => Some(l),
        None => opt(launch).parse_next(i)?,
    };
    Ok((launch, stream))
}

fn target(i: &mut In<'_>) -> Res<Target> {
    let what = "`device`, `stream NAME` or `event NAME`";
    ws(i)?;
    let kind = cut_err(ident).context(expected(what)).parse_next(i)?;
    match kind {
        "device" => Ok(Target::Device),
        "stream" => need_name("a stream name")(i).map(Target::Stream),
        "event" => need_name("an event name")(i).map(Target::Event),
        _ => cut_err(fail).context(expected(what)).parse_next(i),
    }
}

fn stmt(i: &mut In<'_>) -> Res<Stmt> {
    let start = i.checkpoint();
    if let Some(label) = opt(terminated(name, (ws, ":"))).parse_next(i)? {
        ws(i)?;
        let kw = cut_err(ident.verify(|w: &str| OPS.contains(&w)))
            .context(expected("an op after the label, such as `spin 50us on s1`"))
            .parse_next(i)?;
        return op(i, kw).map(|op| Stmt::Op {
            label: Some(label),
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
        "env" => {
            let name = text("a variable's name")(i)?;
            ws(i)?;
            let value = cut_err(alt((
                key("unset").map(|()| None),
                preceded((ws, "="), cut_err(name_or_value)).map(Some),
            )))
            .context(expected("`= VALUE` or `unset`"))
            .parse_next(i)?;
            Stmt::Env { name, value }
        }
        "stream" => {
            let names = names(i, "a stream name")?;
            cut_err((ws, "="))
                .context(expected("`= KIND`"))
                .parse_next(i)?;
            let kind = text("a stream kind: legacy-null, per-thread, blocking or non-blocking")(i)?;
            let priority =
                opt(preceded(key("priority"), text("`lowest` or `highest`"))).parse_next(i)?;
            Stmt::Stream {
                names,
                kind,
                priority,
                device: on_device(i)?,
            }
        }
        "event" => Stmt::Event(names(i, "an event name")?),
        "peer_access" => Stmt::PeerAccess,
        "buffer" => {
            let name = text("a buffer name")(i)?;
            cut_err((ws, "="))
                .context(expected("`= PLACE SIZE`"))
                .parse_next(i)?;
            let place = text("a place: device, pinned or pageable")(i)?;
            let size = need_quantity("a size such as 4KiB")(i)?;
            let fill = opt(preceded(
                key("fill"),
                cut_err(int).context(expected("a number")),
            ))
            .parse_next(i)?;
            let read_back = opt(key("read_back")).parse_next(i)?.is_some();
            Stmt::Buffer {
                name,
                place,
                size,
                fill,
                read_back,
                device: on_device(i)?,
            }
        }
        "check" | "observe" => {
            let relation = text("a relation such as `precedes(A, B)`")(i)?;
            let args = cut_err(delimited(
                (ws, "("),
                separated(0.., arg, (ws, ",")),
                (ws, ")"),
            ))
            .context(expected("arguments in parentheses, such as `(A, B)`"))
            .parse_next(i)?;
            Stmt::Check {
                observe: kw == "observe",
                relation,
                args,
            }
        }
        _ if OPS.contains(&kw) => Stmt::Op {
            label: None,
            op: op(i, kw)?,
        },
        _ => {
            i.reset(&start);
            return cut_err(fail).context(expected(STATEMENT)).parse_next(i);
        }
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
        (op_ref, opt(preceded((ws, ".."), cut_err(op_ref))))
            .with_span()
            .map(|((a, b), span)| match b {
                Some(b) => Arg::Range(a, b, span),
                None => Arg::Ref(a),
            }),
    ))
    .parse_next(i)
}

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
