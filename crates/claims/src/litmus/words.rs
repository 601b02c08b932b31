//! The words of the claim-file grammar: names, strings, numbers with units, op references,
//! launch shapes and targets. `syntax.rs` builds lines and statements from them.

use super::ast::*;
use winnow::ascii::{digit1, line_ending};
use winnow::combinator::{
    alt, cut_err, delimited, eof, fail, opt, peek, preceded, repeat, terminated,
};
use winnow::error::{StrContext, StrContextValue};
use winnow::prelude::*;
use winnow::token::{none_of, one_of, take_while};

pub(super) type In<'s> = winnow::stream::LocatingSlice<&'s str>;
pub(super) type Res<O> = winnow::ModalResult<O>;

pub(super) fn expected(what: &'static str) -> StrContext {
    StrContext::Expected(StrContextValue::Description(what))
}

pub(super) fn ws(i: &mut In<'_>) -> Res<()> {
    take_while(0.., [' ', '\t']).void().parse_next(i)
}

pub(super) fn at_line_end(i: &mut In<'_>) -> Res<()> {
    peek(alt(("#".void(), line_ending.void(), eof.void()))).parse_next(i)
}

/// An identifier: a letter or `_`, then letters, digits, `_`, `-`, `'`, and single dots between
/// them (`fifo.legacy-null`, `K1'`); `..` ends it, for ranges.
pub(super) fn ident<'s>(i: &mut In<'s>) -> Res<&'s str> {
    let part = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '\'');
    (
        one_of(|c: char| c.is_alphabetic() || c == '_'),
        take_while(0.., part),
        repeat(0.., (".", take_while(1.., part))).map(|()| ()),
    )
        .take()
        .parse_next(i)
}

pub(super) fn string(i: &mut In<'_>) -> Res<String> {
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
pub(super) fn name(i: &mut In<'_>) -> Res<Name> {
    ws(i)?;
    alt((string, ident.map(str::to_string)))
        .with_span()
        .map(|(text, span)| Name { text, span })
        .parse_next(i)
}

pub(super) fn need_name(what: &'static str) -> impl FnMut(&mut In<'_>) -> Res<Name> {
    move |i| cut_err(name).context(expected(what)).parse_next(i)
}

/// The keyword `k` as a whole word, after optional blanks.
pub(super) fn key<'s>(k: &'static str) -> impl FnMut(&mut In<'s>) -> Res<()> {
    move |i| {
        ws(i)?;
        ident.verify(|w: &str| w == k).void().parse_next(i)
    }
}

pub(super) fn need(k: &'static str, what: &'static str) -> impl FnMut(&mut In<'_>) -> Res<()> {
    move |i| cut_err(key(k)).context(expected(what)).parse_next(i)
}

pub(super) fn op_ref(i: &mut In<'_>) -> Res<OpRef> {
    ws(i)?;
    alt((
        preceded("#", digit1)
            .with_span()
            .map(|(d, span): (&str, Span)| OpRef::Index(d.parse().unwrap_or(usize::MAX), span)),
        name.map(OpRef::Label),
    ))
    .parse_next(i)
}

pub(super) fn int(i: &mut In<'_>) -> Res<Int> {
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

pub(super) fn quantity(i: &mut In<'_>) -> Res<Quantity> {
    ws(i)?;
    // The unit is the word right after the number (`50us`); a known unit after a blank
    // (`50 us`) is read too, but no other word, so `spin 50 on s1` is a number without a unit.
    let known = |u: &str| {
        super::units::DURATIONS
            .iter()
            .chain(&super::units::SIZES)
            .any(|(k, _)| *k == u)
            || u == super::units::SPIN
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

pub(super) fn need_quantity(what: &'static str) -> impl FnMut(&mut In<'_>) -> Res<Quantity> {
    move |i| cut_err(quantity).context(expected(what)).parse_next(i)
}

pub(super) fn launch(i: &mut In<'_>) -> Res<Launch> {
    preceded(
        (ws, "<<<"),
        cut_err((int, preceded((ws, ","), int), preceded(ws, ">>>")))
            .context(expected("a launch configuration `<<<GRID, BLOCK>>>`")),
    )
    .map(|(grid, block, _)| Launch { grid, block })
    .parse_next(i)
}

/// `[device N]`: the GPU a stream or buffer belongs to, when not the first.
pub(super) fn on_device(i: &mut In<'_>) -> Res<Option<Int>> {
    opt(preceded(
        key("device"),
        cut_err(int).context(expected("a device number")),
    ))
    .parse_next(i)
}

pub(super) fn on_stream(i: &mut In<'_>) -> Res<Name> {
    need("on", "`on STREAM`")(i)?;
    need_name("a stream name")(i)
}

/// `[<<<G, B>>>] on STREAM`, or `on STREAM <<<G, B>>>` as a CUDA programmer may write it.
pub(super) fn launch_on_stream(i: &mut In<'_>) -> Res<(Option<Launch>, Name)> {
    let before = opt(launch).parse_next(i)?;
    let stream = on_stream(i)?;
    let launch = match before {
        Some(l) => Some(l),
        None => opt(launch).parse_next(i)?,
    };
    Ok((launch, stream))
}

pub(super) fn target(i: &mut In<'_>) -> Res<Target> {
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
