//! From statements to claims: names looked up, units converted, limits enforced, each error
//! pointing at the word that caused it.
//!
//! Declarations must come before their use, as in the code a claim stands for; ops are issued in
//! the order of their lines; checks may name any op of their claim. After a claim is built, its
//! program goes through [`Program::validate`], the same check the executor makes, and a problem
//! found there is pinned to the first op line whose program prefix shows it.

use super::checks;
use super::error::LitmusError;
use super::syntax::{Line, Name, OpRef, OpSyntax, Quantity, Span, Stmt, Target};
use super::units::{self, UnitError};
use crate::claim::{Claim, EnvVar, Source};
use crate::program::{
    ApiCall, Buffer, BufferId, Event, EventId, HostFnApi, Op, OpId, OpKind, Place, Priority,
    Program, Stream, StreamId, StreamKind, SyncTarget, MAX_BLOCK, MAX_BYTES, MAX_GRID, MAX_SPIN_NS,
};
use crate::relation::Check;
use crate::verdict::Expect;
use std::collections::HashMap;

/// Where errors are reported: the file's name and text.
#[derive(Clone, Copy)]
pub(super) struct Cx<'a> {
    pub path: &'a str,
    pub text: &'a str,
}

impl Cx<'_> {
    pub(super) fn err(&self, span: &Span, msg: impl Into<String>, label: &str) -> LitmusError {
        LitmusError::at(self.path, self.text, span.clone(), msg, label, None)
    }

    pub(super) fn help(
        &self,
        span: &Span,
        msg: impl Into<String>,
        label: &str,
        help: &str,
    ) -> LitmusError {
        LitmusError::at(self.path, self.text, span.clone(), msg, label, Some(help))
    }
}

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

/// A claim being read.
pub(super) struct Draft {
    id: Name,
    span: Span,
    statement: Option<String>,
    source: Option<Source>,
    expect: Option<Expect>,
    rationale: Option<String>,
    name: Option<String>,
    env: Vec<EnvVar>,
    pub(super) program: Program,
    op_spans: Vec<Span>,
    streams: HashMap<String, StreamId>,
    events: HashMap<String, EventId>,
    pub(super) buffers: HashMap<String, BufferId>,
    checks: Vec<(bool, Name, Vec<super::syntax::Arg>)>,
}

impl Draft {
    fn new(id: Name, span: Span) -> Draft {
        Draft {
            program: Program {
                name: id.text.clone(),
                streams: Vec::new(),
                events: Vec::new(),
                buffers: Vec::new(),
                ops: Vec::new(),
            },
            id,
            span,
            statement: None,
            source: None,
            expect: None,
            rationale: None,
            name: None,
            env: Vec::new(),
            op_spans: Vec::new(),
            streams: HashMap::new(),
            events: HashMap::new(),
            buffers: HashMap::new(),
            checks: Vec::new(),
        }
    }

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
        match line.stmt {
            Stmt::Claim(_) => {}
            Stmt::Statement(s) => {
                once(self.statement.is_some(), "statement")?;
                self.statement = Some(s.text);
            }
            Stmt::Source { document, section } => {
                once(self.source.is_some(), "source")?;
                self.source = Some(Source::new(document.text, section.text));
            }
            Stmt::Expect(e) => {
                once(self.expect.is_some(), "expect")?;
                self.expect = Some(match e.text.to_ascii_lowercase().as_str() {
                    "holds" => Expect::Holds,
                    "violated" => Expect::Violated,
                    _ => {
                        return Err(cx.err(
                            &e.span,
                            format!("unknown expectation `{}`", e.text),
                            "expected `holds` or `violated`",
                        ))
                    }
                });
            }
            Stmt::Rationale(r) => {
                once(self.rationale.is_some(), "rationale")?;
                self.rationale = Some(r.text);
            }
            Stmt::Program(p) => {
                once(self.name.is_some(), "program")?;
                self.name = Some(p.text);
            }
            Stmt::Env { name, value } => {
                if self.env.iter().any(|v| v.name == name.text) {
                    return Err(cx.err(
                        &name.span,
                        format!("`{}` is set twice", name.text),
                        "second setting",
                    ));
                }
                self.env.push(EnvVar {
                    name: name.text,
                    value: value.map(|v| v.text),
                });
            }
            Stmt::Stream {
                names,
                kind,
                priority,
            } => {
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
                    if self.streams.contains_key(&n.text) {
                        return Err(cx.err(
                            &n.span,
                            format!("stream `{}` is declared twice", n.text),
                            "declared again here",
                        ));
                    }
                    self.streams
                        .insert(n.text.clone(), StreamId(self.program.streams.len()));
                    self.program.streams.push(Stream {
                        kind: k,
                        label: n.text,
                        priority,
                    });
                }
            }
            Stmt::Event(names) => {
                for n in names {
                    if self.events.contains_key(&n.text) {
                        return Err(cx.err(
                            &n.span,
                            format!("event `{}` is declared twice", n.text),
                            "declared again here",
                        ));
                    }
                    self.events
                        .insert(n.text.clone(), EventId(self.program.events.len()));
                    self.program.events.push(Event { label: n.text });
                }
            }
            Stmt::Buffer {
                name,
                place,
                size,
                fill,
                read_back,
            } => {
                if self.buffers.contains_key(&name.text) {
                    return Err(cx.err(
                        &name.span,
                        format!("buffer `{}` is declared twice", name.text),
                        "declared again here",
                    ));
                }
                let place = place_of(cx, &place)?;
                let bytes = bytes(cx, &size)?;
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
                self.buffers
                    .insert(name.text.clone(), BufferId(self.program.buffers.len()));
                self.program.buffers.push(Buffer {
                    label: name.text,
                    bytes,
                    place,
                    fill,
                    read_back,
                });
            }
            Stmt::Op { label, op } => {
                let kind = self.op_kind(cx, &op)?;
                let label = match label {
                    Some(l) => l.text,
                    None => super::default_label(&self.program, &kind).ok_or_else(|| {
                        cx.help(&line.span, "this op needs a label", "no label", "write `LABEL: ` before it (for example `A: spin 50us on s1`); checks name ops by their labels")
                    })?,
                };
                let id = OpId(self.program.ops.len());
                self.program.ops.push(Op { id, label, kind });
                self.op_spans.push(line.span);
            }
            Stmt::Check {
                observe,
                relation,
                args,
            } => self.checks.push((observe, relation, args)),
        }
        Ok(())
    }

    fn stream(&self, cx: Cx<'_>, n: &Name) -> R<StreamId> {
        self.streams.get(&n.text).copied().ok_or_else(|| {
            unknown(
                cx,
                n,
                "stream",
                self.streams.keys(),
                "declare it first, e.g. `stream s1 = non-blocking`",
            )
        })
    }

    fn event(&self, cx: Cx<'_>, n: &Name) -> R<EventId> {
        self.events.get(&n.text).copied().ok_or_else(|| {
            unknown(
                cx,
                n,
                "event",
                self.events.keys(),
                "declare it first, e.g. `event E`",
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
                "declare it first, e.g. `buffer a = device 4KiB fill 1`",
            )
        })
    }

    /// The op `r` names among the ops issued so far.
    pub(super) fn op_ref(&self, cx: Cx<'_>, r: &OpRef) -> R<OpId> {
        match r {
            OpRef::Index(i, _) if *i < self.program.ops.len() => Ok(OpId(*i)),
            OpRef::Index(i, span) => Err(cx.err(
                span,
                format!("there is no op #{i}"),
                &format!(
                    "this claim has {} ops so far, #0 to #{}",
                    self.program.ops.len(),
                    self.program.ops.len().saturating_sub(1)
                ),
            )),
            OpRef::Label(n) => {
                let found: Vec<&Op> = self
                    .program
                    .ops
                    .iter()
                    .filter(|o| o.label == n.text)
                    .collect();
                match found.as_slice() {
                    [one] => Ok(one.id),
                    [] => Err(unknown(cx, n, "op labelled", self.program.ops.iter().map(|o| &o.label), "label an op with `LABEL: ` at the start of its line; an op can only name ops issued before it")),
                    many => Err(cx.help(&n.span, format!("`{}` labels {} ops", n.text, many.len()), "ambiguous", &format!("give them distinct labels, or name one by its index: {}", many.iter().map(|o| format!("#{}", o.id.0)).collect::<Vec<_>>().join(", ")))),
                }
            }
        }
    }

    fn op_kind(&self, cx: Cx<'_>, op: &OpSyntax) -> R<OpKind> {
        let target = |t: &Target| -> R<SyncTarget> {
            Ok(match t {
                Target::Device => SyncTarget::Device,
                Target::Stream(s) => SyncTarget::Stream(self.stream(cx, s)?),
                Target::Event(e) => SyncTarget::Event(self.event(cx, e)?),
            })
        };
        let launch = |l: &Option<super::syntax::Launch>| -> R<(u32, u32)> {
            let Some(l) = l else {
                return Ok((1, crate::program::DEFAULT_BLOCK));
            };
            let n = |i: &super::syntax::Int, max: u32, what: &str| -> R<u32> {
                i.text
                    .parse::<u32>()
                    .ok()
                    .filter(|v| (1..=max).contains(v))
                    .ok_or_else(|| {
                        cx.err(
                            &i.span,
                            format!("the {what} must be 1..={max}"),
                            "out of range",
                        )
                    })
            };
            Ok((
                n(&l.grid, MAX_GRID, "grid")?,
                n(&l.block, MAX_BLOCK, "block")?,
            ))
        };
        Ok(match op {
            OpSyntax::Spin {
                duration,
                launch: l,
                stream,
            } => {
                let (grid, block) = launch(l)?;
                OpKind::Spin {
                    stream: self.stream(cx, stream)?,
                    duration_ns: spin_ns(cx, duration, "spin")?,
                    grid,
                    block,
                }
            }
            OpSyntax::Record { event, stream } => OpKind::Record {
                stream: self.stream(cx, stream)?,
                event: self.event(cx, event)?,
            },
            OpSyntax::Wait { event, stream } => OpKind::Wait {
                stream: self.stream(cx, stream)?,
                event: self.event(cx, event)?,
            },
            OpSyntax::HostSync(t) => OpKind::HostSync { target: target(t)? },
            OpSyntax::Query(t) => OpKind::Query { target: target(t)? },
            OpSyntax::Elapsed { from, to } => OpKind::Elapsed {
                from: self.event(cx, from)?,
                to: self.event(cx, to)?,
            },
            OpSyntax::HostFn {
                duration,
                stream,
                via,
            } => OpKind::HostFn {
                stream: self.stream(cx, stream)?,
                duration_ns: spin_ns(cx, duration, "host function")?,
                api: match via.as_ref().map(|v| v.text.as_str()) {
                    None | Some("cuLaunchHostFunc") => HostFnApi::LaunchHostFunc,
                    Some("cuStreamAddCallback") => HostFnApi::StreamAddCallback,
                    Some(other) => {
                        let span = via.as_ref().map_or(0..0, |v| v.span.clone());
                        return Err(cx.err(
                            &span,
                            format!("unknown host-function call `{other}`"),
                            "expected cuLaunchHostFunc or cuStreamAddCallback",
                        ));
                    }
                },
            },
            OpSyntax::Api { call, size } => {
                let all = [
                    ApiCall::MemAlloc,
                    ApiCall::MemFree,
                    ApiCall::HostAlloc,
                    ApiCall::HostFree,
                    ApiCall::Memset,
                    ApiCall::CopyD2D,
                ];
                let c = all
                    .into_iter()
                    .find(|c| c.name() == call.text)
                    .ok_or_else(|| {
                        cx.err(
                            &call.span,
                            format!("unknown driver call `{}`", call.text),
                            &format!("expected one of {}", all.map(ApiCall::name).join(", ")),
                        )
                    })?;
                OpKind::Api {
                    call: c,
                    bytes: bytes(cx, size)?,
                }
            }
            OpSyntax::AllocAsync { size, stream } => OpKind::AllocAsync {
                stream: self.stream(cx, stream)?,
                bytes: bytes(cx, size)?,
            },
            OpSyntax::FreeAsync { alloc, stream } => OpKind::FreeAsync {
                stream: self.stream(cx, stream)?,
                alloc: self.op_ref(cx, alloc)?,
            },
            OpSyntax::BeginCapture(s) => OpKind::BeginCapture {
                stream: self.stream(cx, s)?,
            },
            OpSyntax::EndCapture(s) => OpKind::EndCapture {
                stream: self.stream(cx, s)?,
            },
            OpSyntax::GraphLaunch { graph, stream } => OpKind::GraphLaunch {
                stream: self.stream(cx, stream)?,
                graph: self.op_ref(cx, graph)?,
            },
            OpSyntax::Copy {
                size,
                src,
                dst,
                stream,
            } => {
                let (src, dst) = (self.buffer(cx, src)?, self.buffer(cx, dst)?);
                let bytes = match size {
                    Some(q) => bytes(cx, q)?,
                    None => self.program.buffers[src.0]
                        .bytes
                        .min(self.program.buffers[dst.0].bytes),
                };
                OpKind::Copy {
                    stream: self.stream(cx, stream)?,
                    src,
                    dst,
                    bytes,
                }
            }
            OpSyntax::Add {
                out,
                a,
                b,
                launch: l,
                stream,
            } => {
                let (a, b, out) = (
                    self.buffer(cx, a)?,
                    self.buffer(cx, b)?,
                    self.buffer(cx, out)?,
                );
                let (grid, block) = launch(l)?;
                OpKind::Add {
                    stream: self.stream(cx, stream)?,
                    a,
                    b,
                    out,
                    grid,
                    block,
                }
            }
        })
    }

    fn finish(mut self, cx: Cx<'_>) -> R<Claim> {
        let missing = |what: &str, example: &str| {
            cx.help(
                &self.id.span,
                format!("claim `{}` has no `{what}` line", self.id.text),
                "this claim",
                &format!("add one, e.g. `{example}`"),
            )
        };
        let statement = self
            .statement
            .take()
            .ok_or_else(|| missing("statement", "statement \"what the notes say\""))?;
        let source = self.source.take().ok_or_else(|| {
            missing(
                "source",
                "source \"002_84e77744080bec39.txt\" section \"4. 流同步\"",
            )
        })?;
        let expect = self
            .expect
            .ok_or_else(|| missing("expect", "expect holds"))?;
        let mut all = Vec::new();
        let mut observations = Vec::new();
        for (observe, relation, args) in std::mem::take(&mut self.checks) {
            let made: Vec<Check> = checks::resolve(&self, cx, &relation, &args)?;
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
            id: self.id.text,
            statement,
            source,
            expect,
            rationale: self.rationale,
            program: self.program,
            checks: all,
            observations,
            env: self.env,
        })
    }

    /// The program's own validation, its first problem pinned to the op line that brings it in.
    fn validate(&self, cx: Cx<'_>) -> R<()> {
        let Err(e) = self.program.validate() else {
            return Ok(());
        };
        let Some(first) = e.problems.first() else {
            return Ok(());
        };
        let prefix = |n: usize| Program {
            ops: self.program.ops[..n].to_vec(),
            ..self.program.clone()
        };
        let at = (0..=self.program.ops.len())
            .find(|&n| {
                prefix(n)
                    .validate()
                    .err()
                    .is_some_and(|p| p.problems.contains(first))
            })
            .and_then(|n| n.checked_sub(1))
            .and_then(|n| self.op_spans.get(n))
            .unwrap_or(&self.span);
        let more = e.problems.len() - 1;
        let help = (more > 0)
            .then(|| format!("and {more} more problem(s): {}", e.problems[1..].join("; ")));
        Err(LitmusError::at(
            cx.path,
            cx.text,
            at.clone(),
            format!("invalid program: {first}"),
            "here",
            help.as_deref(),
        ))
    }
}

fn unknown<'a>(
    cx: Cx<'_>,
    n: &Name,
    what: &str,
    known: impl Iterator<Item = &'a String>,
    hint: &str,
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
        &format!("no {what} `{}` declared before this line", n.text),
        &help,
    )
}

fn place_of(cx: Cx<'_>, n: &Name) -> R<Place> {
    [Place::Device, Place::Pinned, Place::Pageable]
        .into_iter()
        .find(|p| p.name() == n.text)
        .ok_or_else(|| {
            cx.err(
                &n.span,
                format!("unknown place `{}`", n.text),
                "expected device, pinned or pageable",
            )
        })
}

pub(super) fn place(cx: Cx<'_>, n: &Name) -> R<Place> {
    place_of(cx, n)
}

fn unit_error(
    cx: Cx<'_>,
    q: &Quantity,
    e: UnitError,
    what: &str,
    units: &[(&str, u64)],
    example: &str,
) -> LitmusError {
    let unit_span = q.unit.as_ref().map_or(q.span.clone(), |u| u.span.clone());
    match e {
        UnitError::Missing => cx.help(
            &q.span,
            format!("{what} without a unit"),
            "add a unit",
            &format!(
                "write it with its unit ({}), e.g. `{example}`",
                units::names(units)
            ),
        ),
        UnitError::Unknown => cx.err(
            &unit_span,
            format!(
                "unknown unit `{}`",
                q.unit.as_ref().map_or("", |u| u.text.as_str())
            ),
            &format!("expected one of {}", units::names(units)),
        ),
        UnitError::Inexact => cx.err(
            &q.span,
            format!("{what} finer than its smallest unit"),
            "too many decimals",
        ),
        UnitError::Overflow => cx.err(&q.span, format!("{what} too large"), "does not fit"),
    }
}

fn spin_ns(cx: Cx<'_>, q: &Quantity, what: &str) -> R<u64> {
    let ns = units::scaled(
        &q.number,
        q.unit.as_ref().map(|u| u.text.as_str()),
        &units::DURATIONS,
    )
    .map_err(|e| unit_error(cx, q, e, "a duration", &units::DURATIONS, "50us"))?;
    if ns == 0 {
        return Err(cx.err(&q.span, format!("a {what} must last at least 1ns"), "zero"));
    }
    if ns > MAX_SPIN_NS {
        return Err(cx.help(&q.span, format!("a {what} of {} is over the limit of {}", units::format_duration(ns), units::format_duration(MAX_SPIN_NS)), "too long", "claims need microseconds to milliseconds; a longer one is taken for a unit mixed up (MAX_SPIN_NS)"));
    }
    Ok(ns)
}

fn bytes(cx: Cx<'_>, q: &Quantity) -> R<u64> {
    let b = units::scaled(
        &q.number,
        q.unit.as_ref().map(|u| u.text.as_str()),
        &units::SIZES,
    )
    .map_err(|e| unit_error(cx, q, e, "a size", &units::SIZES, "4KiB"))?;
    if b == 0 || b > MAX_BYTES {
        return Err(cx.err(
            &q.span,
            format!("a size must be 1B..={}", units::format_size(MAX_BYTES)),
            "out of range",
        ));
    }
    Ok(b)
}
