//! From statements to claims: names looked up, units converted, limits enforced, each error
//! pointing at the word that caused it.
//!
//! Declarations must come before their use, as in the code a claim stands for; ops are issued in
//! the order of their lines; checks may name any op of their claim. After a claim is built, its
//! program goes through [`Program::validate`], the same check the executor makes, and a problem
//! found there is pinned to the first op line whose program prefix shows it.

use super::check_lines;
use super::claim_error::LitmusError;
use super::claim_error::{unknown, Cx};
use super::draft::Draft;
use super::ops::bytes;
use super::syntax::{Line, Name, OpRef, OpSyntax, Quantity, Span, Stmt};
use crate::judge::claim::{Claim, EnvVar};
use crate::judge::relation::Check;
use crate::program::{
    Buffer, BufferId, Event, EventId, Op, OpId, Place, Priority, Stream, StreamId, StreamKind,
};

type R<T> = Result<T, LitmusError>;

/// Every claim of a file, in order.
pub(super) fn claims(cx: Cx<'_>, lines: Vec<Line>) -> R<Vec<Claim>> {
    let mut out: Vec<Claim> = Vec::new();
    let mut draft: Option<Draft> = None;
    for line in lines {
        if let Stmt::Claim(id) = &line.stmt {
            if let Some(d) = draft.take() {
                out.push(d.finish(cx)?);
            }
            if out.iter().any(|c| c.id == id.text) {
                return Err(cx.err(
                    &id.span,
                    format!("claim `{}` is defined twice in this file", id.text),
                    "second definition",
                ));
            }
            draft = Some(Draft::new(id.clone(), line.span.clone()));
            continue;
        }
        let Some(d) = draft.as_mut() else {
            return Err(cx.help(
                &line.span,
                "this line comes before any claim",
                "outside a claim",
                "a claim starts with `claim ID`; everything after it belongs to it",
            ));
        };
        d.add(cx, line)?;
    }
    if let Some(d) = draft.take() {
        out.push(d.finish(cx)?);
    }
    if out.is_empty() {
        let end = cx.text.len();
        return Err(cx.help(&(end..end), "no claim in this file", "expected `claim ID`", "a claim file holds one or more claims, each starting with `claim ID`; see docs/writing-claims.md"));
    }
    Ok(out)
}

impl Draft {
    /// One line of the claim: its header, a declaration, an op or a check.
    fn add(&mut self, cx: Cx<'_>, line: Line) -> R<()> {
        let once = |set: bool, what: &str| {
            if set {
                Err(cx.err(
                    &line.span,
                    format!("claim `{}` has a second `{what}` line", self.id.text),
                    "second one",
                ))
            } else {
                Ok(())
            }
        };
        let Some(stmt) = self.header.read(cx, &self.id, &line.span, line.stmt)? else {
            return Ok(());
        };
        match stmt {
            Stmt::Claim(_) => {}
            Stmt::Statement(_) | Stmt::Source { .. } | Stmt::Expect(_) | Stmt::Rationale(_) => {
                unreachable!("read by the header")
            }
            Stmt::Table(t) => {
                once(self.table.is_some(), "table")?;
                let table = t
                    .text
                    .parse()
                    .map_err(|e: crate::judge::claim::UnknownTable| {
                        cx.err(
                            &t.span,
                            e.to_string(),
                            "expected `sleep`, `pipeline` or `prefetch`",
                        )
                    })?;
                self.table = Some(table);
            }
            Stmt::Program(p) => {
                once(self.name.is_some(), "program")?;
                self.name = Some(p.text);
            }
            Stmt::Env { name, value } => self.env_line(cx, name, value)?,
            Stmt::Stream {
                names,
                kind,
                priority,
                device,
            } => self.streams_line(cx, names, &kind, priority.as_ref(), device.as_ref())?,
            Stmt::Event(names) => self.events_line(cx, names)?,
            Stmt::Buffer {
                name,
                place,
                size,
                fill,
                read_back,
                device,
            } => {
                let contents = (&place, &size, fill.as_ref());
                self.buffer_line(cx, name, contents, read_back, device.as_ref())?
            }
            Stmt::PeerAccess => self.program.peer_access = true,
            Stmt::Op {
                label: Some(first),
                last: Some(last),
                op,
            } => {
                for label in numbered_run(cx, &first, &last)? {
                    self.op_line(
                        cx,
                        Some(Name {
                            text: label,
                            span: first.span.clone(),
                        }),
                        &op,
                        line.span.clone(),
                    )?;
                }
            }
            Stmt::Op { label, op, .. } => self.op_line(cx, label, &op, line.span)?,
            Stmt::Check {
                observe,
                relation,
                args,
                quantifier,
            } => match quantifier {
                None => self.checks.push((observe, relation, args)),
                Some(q) => return Err(quantified(cx, &q)),
            },
            Stmt::Trace { path: n, .. }
            | Stmt::Trial { pattern: n, .. }
            | Stmt::Select { name: n, .. } => {
                return Err(cx.help(
                    &n.span,
                    "a claim on a trace cannot also have a program",
                    "a line of claims on traces",
                    "judge claims on traces with `stream-litmus check --trace TRACE FILE` \
                     (docs/checking-your-program.md)",
                ))
            }
        }
        Ok(())
    }

    /// `env NAME = VALUE` or `env NAME unset`: a variable the claim file may set, once.
    fn env_line(&mut self, cx: Cx<'_>, name: Name, value: Option<Name>) -> R<()> {
        if self.env.iter().any(|v| v.name == name.text) {
            return Err(cx.err(
                &name.span,
                format!("`{}` is set twice", name.text),
                "second setting",
            ));
        }
        crate::border::allowed_env::check(&name.text, value.as_ref().map(|v| v.text.as_str()))
            .map_err(|e| match (&value, &e) {
                (Some(v), crate::border::error::EnvError::BadValue { .. }) => cx.err(
                    &v.span,
                    e.to_string(),
                    "a value this variable does not take",
                ),
                _ => cx.err(&name.span, e.to_string(), "not allowed in a claim file"),
            })?;
        self.env.push(EnvVar {
            name: name.text,
            value: value.map(|v| v.text),
        });
        Ok(())
    }

    /// `stream NAMES = KIND [priority P] [on device N]`.
    fn streams_line(
        &mut self,
        cx: Cx<'_>,
        names: Vec<Name>,
        kind: &Name,
        priority: Option<&Name>,
        device: Option<&super::syntax::Int>,
    ) -> R<()> {
        let device = super::ops::device(cx, device)?;
        let k = StreamKind::ALL
            .into_iter()
            .find(|k| k.name() == kind.text)
            .ok_or_else(|| {
                cx.err(
                    &kind.span,
                    format!("unknown stream kind `{}`", kind.text),
                    "expected legacy-null, per-thread, blocking or non-blocking",
                )
            })?;
        let priority = match priority {
            None => None,
            Some(p) => Some(match p.text.as_str() {
                "lowest" => Priority::Lowest,
                "highest" => Priority::Highest,
                _ => {
                    return Err(cx.err(
                        &p.span,
                        format!("unknown priority `{}`", p.text),
                        "expected `lowest` or `highest`",
                    ))
                }
            }),
        };
        for n in names {
            declared_twice(cx, self.streams.contains_key(&n.text), &n, "stream")?;
            self.streams
                .insert(n.text.clone(), StreamId(self.program.streams.len()));
            self.program.streams.push(Stream {
                kind: k,
                label: n.text,
                priority,
                device,
            });
        }
        Ok(())
    }

    /// `event NAMES`.
    fn events_line(&mut self, cx: Cx<'_>, names: Vec<Name>) -> R<()> {
        for n in names {
            declared_twice(cx, self.events.contains_key(&n.text), &n, "event")?;
            self.events
                .insert(n.text.clone(), EventId(self.program.events.len()));
            self.program.events.push(Event { label: n.text });
        }
        Ok(())
    }

    /// `buffer NAME = PLACE SIZE [fill N] [read_back] [on device N]`.
    fn buffer_line(
        &mut self,
        cx: Cx<'_>,
        name: Name,
        (place, size, fill): (&Name, &Quantity, Option<&super::syntax::Int>),
        read_back: bool,
        device: Option<&super::syntax::Int>,
    ) -> R<()> {
        let device = super::ops::device(cx, device)?;
        declared_twice(cx, self.buffers.contains_key(&name.text), &name, "buffer")?;
        let (place, bytes, fill) = buffer_contents(cx, place, size, fill)?;
        self.buffers
            .insert(name.text.clone(), BufferId(self.program.buffers.len()));
        self.program.buffers.push(Buffer {
            label: name.text,
            bytes,
            place,
            fill,
            read_back,
            device,
        });
        Ok(())
    }

    /// An op line at `span`, labelled or named by its default label.
    fn op_line(&mut self, cx: Cx<'_>, label: Option<Name>, op: &OpSyntax, span: Span) -> R<()> {
        let kind = self.op_kind(cx, op)?;
        let label = match label {
            Some(l) => l.text,
            None => super::default_label(&self.program, &kind).ok_or_else(|| {
                cx.help(&span, "this op needs a label", "no label", "write `LABEL: ` before it (for example `A: spin 50us on s1`); checks name ops by their labels")
            })?,
        };
        let id = OpId(self.program.ops.len());
        self.labels.entry(label.clone()).or_default().push(id);
        self.program.ops.push(Op { id, label, kind });
        self.op_spans.push(span);
        Ok(())
    }

    pub(super) fn stream(&self, cx: Cx<'_>, n: &Name) -> R<StreamId> {
        self.streams.get(&n.text).copied().ok_or_else(|| {
            unknown(
                cx,
                n,
                "stream",
                self.streams.keys(),
                (
                    "before this line",
                    "declare it first, e.g. `stream s1 = non-blocking`",
                ),
            )
        })
    }

    pub(super) fn event(&self, cx: Cx<'_>, n: &Name) -> R<EventId> {
        self.events.get(&n.text).copied().ok_or_else(|| {
            unknown(
                cx,
                n,
                "event",
                self.events.keys(),
                ("before this line", "declare it first, e.g. `event E`"),
            )
        })
    }

    pub(super) fn buffer(&self, cx: Cx<'_>, n: &Name) -> R<BufferId> {
        self.buffers.get(&n.text).copied().ok_or_else(|| {
            unknown(
                cx,
                n,
                "buffer",
                self.buffers.keys(),
                (
                    "before this line",
                    "declare it first, e.g. `buffer a = device 4KiB fill 1`",
                ),
            )
        })
    }

    /// The op `r` names among the ops issued so far.
    pub(super) fn op_ref(&self, cx: Cx<'_>, r: &OpRef) -> R<OpId> {
        match r {
            OpRef::Index(i, _) if *i < self.program.ops.len() => Ok(OpId(*i)),
            OpRef::Index(_, span) => Err(cx.err(
                span,
                // The digits as written: a number past usize is read as usize::MAX.
                format!(
                    "there is no op {}",
                    cx.text.get(span.clone()).unwrap_or("#?")
                ),
                &format!(
                    "this claim has {} ops so far, #0 to #{}",
                    self.program.ops.len(),
                    self.program.ops.len().saturating_sub(1)
                ),
            )),
            OpRef::Label(n) => {
                let found: Vec<&Op> = self
                    .labels
                    .get(&n.text)
                    .into_iter()
                    .flatten()
                    .filter_map(|&id| self.program.op(id))
                    .collect();
                match found.as_slice() {
                    [one] => Ok(one.id),
                    [] => {
                        let labels = self.program.ops.iter().map(|o| &o.label);
                        let hint = if self.all_ops {
                            "label an op with `LABEL: ` at the start of its line"
                        } else {
                            "an op can only name ops issued before it"
                        };
                        let place = if self.all_ops {
                            "in this claim"
                        } else {
                            "before this line"
                        };
                        Err(unknown(cx, n, "op labelled", labels, (place, hint)))
                    }
                    many => {
                        let ids: Vec<String> =
                            many.iter().map(|o| format!("#{}", o.id.0)).collect();
                        let help = format!(
                            "give them distinct labels, or name one by its index: {}",
                            ids.join(", ")
                        );
                        let msg = format!("`{}` labels {} ops", n.text, many.len());
                        Err(cx.help(&n.span, msg, "ambiguous", &help))
                    }
                }
            }
        }
    }

    fn finish(mut self, cx: Cx<'_>) -> R<Claim> {
        let header = std::mem::take(&mut self.header).finish(cx, &self.id)?;
        let mut all = Vec::new();
        let mut observations = Vec::new();
        self.all_ops = true;
        for (observe, relation, args) in std::mem::take(&mut self.checks) {
            let made: Vec<Check> = check_lines::resolve(&self, cx, &relation, &args)?;
            if observe {
                observations.extend(made)
            } else {
                all.extend(made)
            }
        }
        if let Some(name) = self.name.take() {
            self.program.name = name;
        }
        self.validate(cx)?;
        self.env.sort();
        Ok(Claim {
            header,
            program: self.program,
            checks: all,
            observations,
            env: self.env,
            table: self.table,
        })
    }
}

/// The error for a stream, event or buffer `n` declared again (`twice`).
/// The labels of `D0..D99: …`, a run of ops one per number: the two labels must be one prefix
/// and two numbers without leading zeros, the first not above the last, and the run no longer
/// than a program may be.
fn numbered_run(cx: Cx<'_>, first: &Name, last: &Name) -> R<Vec<String>> {
    let split = |n: &Name| -> R<(String, u64)> {
        let digits = n.text.len() - n.text.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (prefix, number) = n.text.split_at(n.text.len() - digits);
        let value = (!number.is_empty() && (number == "0" || !number.starts_with('0')))
            .then(|| number.parse::<u64>().ok())
            .flatten();
        match value {
            Some(v) => Ok((prefix.to_string(), v)),
            None => Err(cx.help(
                &n.span,
                "a run of ops needs labels that end in a number",
                "no number at the end",
                "write the first and last labels of the run, such as `D0..D99: spin 2us on s1`",
            )),
        }
    };
    let (prefix, from) = split(first)?;
    let (end_prefix, to) = split(last)?;
    if end_prefix != prefix {
        return Err(cx.err(
            &last.span,
            format!(
                "the run starts at `{}` but ends at `{}`",
                first.text, last.text
            ),
            "another prefix",
        ));
    }
    if to < from || to - from >= crate::border::limits::MAX_PROGRAM_OPS as u64 {
        return Err(cx.err(
            &last.span,
            format!(
                "a run of ops from {from} to {to}: the last must be at least the first, and a run at most {} ops",
                crate::border::limits::MAX_PROGRAM_OPS
            ),
            "out of range",
        ));
    }
    Ok((from..=to).map(|n| format!("{prefix}{n}")).collect())
}

fn declared_twice(cx: Cx<'_>, twice: bool, n: &Name, what: &str) -> R<()> {
    if twice {
        return Err(cx.err(
            &n.span,
            format!("{what} `{}` is declared twice", n.text),
            "declared again here",
        ));
    }
    Ok(())
}

/// A buffer's place, size in bytes (whole f32 elements) and fill value (0 unless given).
fn buffer_contents(
    cx: Cx<'_>,
    place: &Name,
    size: &Quantity,
    fill: Option<&super::syntax::Int>,
) -> R<(Place, u64, i32)> {
    let place = super::ops::place(cx, place)?;
    let bytes = bytes(cx, size)?;
    if bytes % 4 != 0 {
        return Err(cx.help(
            &size.span,
            "a buffer's size must be a whole number of f32 elements",
            "not a multiple of 4 bytes",
            "buffers hold f32 elements of 4 bytes",
        ));
    }
    let fill = match fill {
        None => 0,
        Some(f) => f.text.parse().map_err(|_| {
            cx.err(
                &f.span,
                "the fill value does not fit in an i32",
                "too large",
            )
        })?,
    };
    Ok((place, bytes, fill))
}

/// The error for a quantifier `q` on a check of a claim with a program.
fn quantified(cx: Cx<'_>, q: &Name) -> LitmusError {
    cx.help(
        &q.span,
        format!("`{}` ranges over the ops of a trace's selections", q.text),
        "a quantifier in a claim with a program",
        "a program's checks name single ops; quantifiers go with `select` lines in \
         claims on traces (docs/checking-your-program.md)",
    )
}
