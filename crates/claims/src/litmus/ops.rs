//! Op lines to ops: each op's names looked up, its durations and sizes converted with their
//! units and held to the program limits, with the error on the word at fault.

use super::claim_error::Cx;
use super::claim_error::LitmusError;
use super::draft::Draft;
use super::syntax::{Launch, Name, OpSyntax, Quantity, Target};
use super::units::{self, UnitError};
use crate::program::{
    ApiCall, HostFnApi, OpKind, Place, Program, SyncTarget, DEFAULT_BLOCK, MAX_BLOCK, MAX_BYTES,
    MAX_GRID, MAX_SPIN_NS,
};

type R<T> = Result<T, LitmusError>;

impl Draft {
    /// The program's own validation, its first problem pinned to the op line that brings it in.
    pub(super) fn validate(&self, cx: Cx<'_>) -> R<()> {
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
        // Validation reads the ops in order and a problem, once there, stays for longer
        // prefixes: the first prefix that shows it is found by bisection.
        let shows = |n: usize| {
            prefix(n)
                .validate()
                .err()
                .is_some_and(|p| p.problems.contains(first))
        };
        let ops: Vec<usize> = (0..=self.program.ops.len()).collect();
        let at = Some(ops.partition_point(|&n| !shows(n)))
            .and_then(|n| n.checked_sub(1))
            .and_then(|n| self.op_spans.get(n))
            .unwrap_or(&self.span);
        let more = e.problems.len() - 1;
        let help = (more > 0).then(|| {
            let shown: Vec<&str> = e.problems[1..].iter().take(3).map(String::as_str).collect();
            format!("and {more} more problem(s): {}", shown.join("; "))
        });
        Err(LitmusError::at(
            cx.path,
            cx.text,
            at.clone(),
            format!("invalid program: {first}"),
            "here",
            help.as_deref(),
        ))
    }

    /// The op an op line writes. A table, kept whole on purpose: one arm per kind of op, each
    /// looking its names up in the order they are written, so that the first error is the first
    /// word at fault.
    pub(super) fn op_kind(&self, cx: Cx<'_>, op: &OpSyntax) -> R<OpKind> {
        Ok(match op {
            OpSyntax::Spin {
                duration,
                launch: l,
                stream,
            } => {
                let (grid, block) = launch(cx, l)?;
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
            OpSyntax::HostSync(t) => OpKind::HostSync {
                target: self.target(cx, t)?,
            },
            OpSyntax::Query(t) => OpKind::Query {
                target: self.target(cx, t)?,
            },
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
                api: host_fn_api(cx, via.as_ref())?,
            },
            OpSyntax::Api { call, size } => OpKind::Api {
                call: api_call(cx, call)?,
                bytes: bytes(cx, size)?,
            },
            OpSyntax::AllocAsync { size, stream } => OpKind::AllocAsync {
                stream: self.stream(cx, stream)?,
                bytes: bytes(cx, size)?,
            },
            OpSyntax::FreeAsync { alloc, stream } => OpKind::FreeAsync {
                stream: self.stream(cx, stream)?,
                alloc: self.op_ref(cx, alloc)?,
            },
            OpSyntax::DeviceSync(n) => OpKind::DeviceSync {
                device: device(cx, Some(n))?,
            },
            OpSyntax::AllReduce { buffer, stream } => OpKind::AllReduce {
                stream: self.stream(cx, stream)?,
                buffer: self.buffer(cx, buffer)?,
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
            } => self.copy(cx, size.as_ref(), [src, dst], stream)?,
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
                let (grid, block) = launch(cx, l)?;
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

    /// What a host sync or a query waits for.
    fn target(&self, cx: Cx<'_>, t: &Target) -> R<SyncTarget> {
        Ok(match t {
            Target::Device => SyncTarget::Device,
            Target::Stream(s) => SyncTarget::Stream(self.stream(cx, s)?),
            Target::Event(e) => SyncTarget::Event(self.event(cx, e)?),
        })
    }

    /// A copy from `ends[0]` to `ends[1]`: of `size`, or else of the smaller buffer.
    fn copy(
        &self,
        cx: Cx<'_>,
        size: Option<&Quantity>,
        ends: [&Name; 2],
        stream: &Name,
    ) -> R<OpKind> {
        let (src, dst) = (self.buffer(cx, ends[0])?, self.buffer(cx, ends[1])?);
        let bytes = match size {
            Some(q) => bytes(cx, q)?,
            None => self.program.buffers[src.0]
                .bytes
                .min(self.program.buffers[dst.0].bytes),
        };
        Ok(OpKind::Copy {
            stream: self.stream(cx, stream)?,
            src,
            dst,
            bytes,
        })
    }
}

/// A kernel's `<<<grid, block>>>`, each in its range; one block of [`DEFAULT_BLOCK`] threads
/// when none is written.
fn launch(cx: Cx<'_>, l: &Option<Launch>) -> R<(u32, u32)> {
    let Some(l) = l else {
        return Ok((1, DEFAULT_BLOCK));
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
}

/// The call a host function is enqueued with: `cuLaunchHostFunc` unless `via` names another.
fn host_fn_api(cx: Cx<'_>, via: Option<&Name>) -> R<HostFnApi> {
    match via.map(|v| v.text.as_str()) {
        None | Some("cuLaunchHostFunc") => Ok(HostFnApi::LaunchHostFunc),
        Some("cuStreamAddCallback") => Ok(HostFnApi::StreamAddCallback),
        Some(other) => {
            let span = via.map_or(0..0, |v| v.span.clone());
            Err(cx.err(
                &span,
                format!("unknown host-function call `{other}`"),
                "expected cuLaunchHostFunc or cuStreamAddCallback",
            ))
        }
    }
}

/// A driver call by its name.
fn api_call(cx: Cx<'_>, call: &Name) -> R<ApiCall> {
    let all = [
        ApiCall::MemAlloc,
        ApiCall::MemFree,
        ApiCall::HostAlloc,
        ApiCall::HostFree,
        ApiCall::Memset,
        ApiCall::CopyD2D,
    ];
    all.into_iter()
        .find(|c| c.name() == call.text)
        .ok_or_else(|| {
            cx.err(
                &call.span,
                format!("unknown driver call `{}`", call.text),
                &format!("expected one of {}", all.map(ApiCall::name).join(", ")),
            )
        })
}

pub(super) fn place(cx: Cx<'_>, n: &Name) -> R<Place> {
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

fn unit_error(
    cx: Cx<'_>,
    q: &Quantity,
    e: UnitError,
    what: &str,
    units: &str,
    example: &str,
) -> LitmusError {
    let unit_span = q.unit.as_ref().map_or(q.span.clone(), |u| u.span.clone());
    match e {
        UnitError::Missing => cx.help(
            &q.span,
            format!("{what} without a unit"),
            "add a unit",
            &format!("write it with its unit ({units}), e.g. `{example}`"),
        ),
        UnitError::Unknown => cx.err(
            &unit_span,
            format!(
                "unknown unit `{}`",
                q.unit.as_ref().map_or("", |u| u.text.as_str())
            ),
            &format!("expected one of {units}"),
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
    let unit = q.unit.as_ref().map(|u| u.text.as_str());
    let ns = if unit == Some(units::SPIN) {
        let Some(spin_ns) = cx.spin_ns else {
            return Err(cx.err(
                &q.span,
                "a duration in `spin`s in a claim on traces",
                "no spin length here",
            ));
        };
        units::spins(&q.number, spin_ns)
    } else {
        units::scaled(&q.number, unit, &units::DURATIONS)
    }
    .map_err(|e| {
        let names = format!(
            "{}, or {} for the run's spin length",
            units::names(&units::DURATIONS),
            units::SPIN
        );
        unit_error(cx, q, e, "a duration", &names, "50us")
    })?;
    if ns == 0 {
        return Err(cx.err(&q.span, format!("a {what} must last at least 1ns"), "zero"));
    }
    if ns > MAX_SPIN_NS {
        return Err(cx.help(&q.span, format!("a {what} of {} is over the limit of {}", units::format_duration(ns), units::format_duration(MAX_SPIN_NS)), "too long", "claims need microseconds to milliseconds; a longer one is taken for a unit mixed up (MAX_SPIN_NS)"));
    }
    Ok(ns)
}

pub(super) fn bytes(cx: Cx<'_>, q: &Quantity) -> R<u64> {
    let b = units::scaled(
        &q.number,
        q.unit.as_ref().map(|u| u.text.as_str()),
        &units::SIZES,
    )
    .map_err(|e| unit_error(cx, q, e, "a size", &units::names(&units::SIZES), "4KiB"))?;
    if b == 0 || b > MAX_BYTES {
        return Err(cx.err(
            &q.span,
            format!("a size must be 1B..={}", units::format_size(MAX_BYTES)),
            "out of range",
        ));
    }
    Ok(b)
}

/// A device number (`device N`), 0 when not written; within the devices a program may use.
pub(super) fn device(cx: Cx<'_>, n: Option<&super::syntax::Int>) -> Result<u32, LitmusError> {
    let Some(n) = n else { return Ok(0) };
    match n.text.parse::<u32>() {
        Ok(d) if d < crate::border::limits::MAX_DEVICES => Ok(d),
        _ => Err(cx.err(
            &n.span,
            format!(
                "device {} is not one a program may use: 0 to {}",
                n.text,
                crate::border::limits::MAX_DEVICES - 1
            ),
            "no such device",
        )),
    }
}
