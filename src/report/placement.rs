//! Placement: where every op of one trial is drawn, for all three pictures.
//!
//! The SVG timeline, the terminal picture and the Chrome trace each used to find their own way
//! onto the time axis, and each drew a different subset of the ops: the trace showed copies that
//! the two pictures left out, so a claim about a copy could show a kernel alone. [`placed_ops`]
//! is now the one place that decides, for any timeline, where each op goes: its lane, its
//! interval on the `%globaltimer` axis and which evidence put it there. The renderers only draw
//! what it yields, so they cannot disagree about where an op ran, and an op that is missing from
//! a picture is missing from all three for a reason the picture names.
//!
//! An op is placed by the best source the trial has for it:
//! - **stamps**: a stamped kernel's own `%globaltimer` stamps, exact;
//! - **CUPTI** or **events**: a copy's witnessed span, aligned through stamped anchors (events
//!   give an outer bound);
//! - **host clock**: host functions and host calls, placed with the measured clock sync, or,
//!   where the trial has none, with the host-to-GPU issue offset, which includes the launch
//!   latency (the source says which).
//!
//! Ops the host only enqueues (event records and waits, stream-ordered allocations and frees)
//! leave nothing on the GPU to measure; they are instants on their stream where their call put
//! them in it. A graph launch spans the ops its graph ran, and a captured op is drawn where it
//! ran, when its graph was launched. An op with no placement in the trial is still yielded, with
//! the reason, so a picture can say so rather than leave it out.

use crate::measured::timeline::Timeline;
use crate::measured::witness::WitnessKind;
use crate::program::{ApiCall, CopyDir, OpId, OpKind, Program, StreamId, SyncTarget};
use std::fmt;

/// Where a mark is drawn: on a stream's lane, or on the host's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lane {
    Stream(StreamId),
    Host,
}

/// Which evidence placed a mark on the `%globaltimer` axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// The op's own stamps.
    Stamps,
    /// A CUPTI activity record, aligned through stamped anchors.
    Cupti,
    /// Events recorded around the op, aligned the same way: an outer bound.
    Events,
    /// The host clock, aligned by the trial's measured clock sync.
    ClockSync,
    /// The host clock, aligned by the host-to-GPU issue offset (no clock sync was measured), so
    /// the launch latency is in it.
    IssueOffset,
}

impl Source {
    /// "stamps", "CUPTI", "events", "host clock", "issue offset".
    pub fn name(self) -> &'static str {
        match self {
            Source::Stamps => "stamps",
            Source::Cupti => "CUPTI",
            Source::Events => "events",
            Source::ClockSync => "host clock",
            Source::IssueOffset => "issue offset",
        }
    }

    /// The source with its uncertainty, for hover titles.
    pub fn describe(self, slack_ns: u64) -> String {
        let us = slack_ns as f64 / 1e3;
        match self {
            Source::Stamps => "from stamps".into(),
            Source::Cupti => format!("from CUPTI (±{us:.2} µs alignment)"),
            Source::Events => format!("from events around it, an outer bound (±{us:.2} µs)"),
            Source::ClockSync => format!("host clock, by the clock sync (±{us:.2} µs)"),
            Source::IssueOffset => {
                "host clock, by the issue offset (no clock sync; ± launch latency)".into()
            }
        }
    }
}

/// An interval (or an instant) on the `%globaltimer` axis, in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub start: i64,
    pub end: i64,
    /// How far the true start and end may lie from these.
    pub slack_ns: u64,
    pub source: Source,
    /// Only a moment is known (an op the host enqueued), not how long it took.
    pub instant: bool,
}

impl Mark {
    pub fn duration_ns(&self) -> u64 {
        self.end.saturating_sub(self.start).max(0) as u64
    }
}

/// Why an op has no place in a trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unplaced {
    /// A stamped op without stamps: it did not run.
    NoStamps,
    /// A copy the witness did not see.
    NoWitnessSpan,
    /// The witness saw it but could not be aligned to the stamps.
    NoWitnessSync,
    /// A host function that left no span: it did not run.
    NoHostSpan,
    /// No host call of the op was recorded.
    NoHostCall,
    /// Host times cannot be placed: no clock sync and nothing stamped or witnessed.
    NoClock,
    /// A run of ops drawn as one row ([`super::thin`]), none of which has a place.
    NoneOfRun,
}

impl fmt::Display for Unplaced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unplaced::NoStamps => "no stamps (it did not run)",
            Unplaced::NoWitnessSpan => "the witness saw no span of it",
            Unplaced::NoWitnessSync => "its witness could not be aligned to the stamps",
            Unplaced::NoHostSpan => "the host function left no span (it did not run)",
            Unplaced::NoHostCall => "no host call of it was recorded",
            Unplaced::NoClock => "no clock sync and nothing stamped to place host times",
            Unplaced::NoneOfRun => "none placed",
        })
    }
}

/// One op of the program, placed in one trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedOp {
    pub op: OpId,
    pub lane: Lane,
    /// Where the op ran (or, for an op the host only enqueued, when its call put it in its
    /// stream; for a host-side op, its call); why not, where the trial has no place for it.
    pub at: Result<Mark, Unplaced>,
    /// The host call that issued a stream op, drawn on the host lane. `None` for host-side ops
    /// (their call is `at`) and captured ops (their graph's launch issued them).
    pub call: Option<Mark>,
    /// The end of the capture whose graph ran the op, for captured ops.
    pub graph: Option<OpId>,
}

/// Every op of `program` in `timeline`, in issue order: one [`PlacedOp`] per op.
pub fn placed_ops(program: &Program, timeline: &Timeline) -> Vec<PlacedOp> {
    let host = HostClock::of(timeline);
    let captured = program.captures();
    // Per capture end: the extent of what its graph ran.
    let mut ran: Vec<Option<Mark>> = vec![None; program.ops.len()];
    let mut out = Vec::with_capacity(program.ops.len());
    for op in &program.ops {
        let id = op.id;
        let graph = captured.get(id.0).copied().flatten();
        let call = || host.call(timeline, id);
        let lane = match op.kind {
            OpKind::BeginCapture { .. } | OpKind::EndCapture { .. } => Lane::Host,
            ref k => k.stream().map_or(Lane::Host, Lane::Stream),
        };
        let at = match op.kind {
            OpKind::Spin { .. } | OpKind::Add { .. } => {
                timeline.span(id).map(stamped).ok_or(Unplaced::NoStamps)
            }
            OpKind::Copy { .. } | OpKind::AllReduce { .. } => witnessed(timeline, id),
            OpKind::HostFn { .. } => host.span(timeline, id),
            OpKind::Record { .. }
            | OpKind::Wait { .. }
            | OpKind::AllocAsync { .. }
            | OpKind::FreeAsync { .. } => call().map(instant),
            // A later launch of a graph spans what it ran, from its own stamps.
            OpKind::GraphLaunch { graph: end, .. } => match timeline.relaunch(id) {
                Some(spans) => (spans.iter())
                    .map(stamped)
                    .reduce(widen)
                    .map_or_else(|| call().map(instant), Ok),
                None => match ran.get(end.0).copied().flatten() {
                    Some(m) => Ok(m),
                    None => call().map(instant),
                },
            },
            OpKind::HostSync { .. }
            | OpKind::DeviceSync { .. }
            | OpKind::Elapsed { .. }
            | OpKind::Query { .. }
            | OpKind::Api { .. }
            | OpKind::BeginCapture { .. }
            | OpKind::EndCapture { .. } => call(),
        };
        if let (Some(end), Ok(m)) = (graph, at) {
            if !m.instant {
                if let Some(slot) = ran.get_mut(end.0) {
                    *slot = Some(slot.map_or(m, |r| widen(r, m)));
                }
            }
        }
        let call = match lane {
            Lane::Stream(_) if graph.is_none() => call().ok(),
            _ => None,
        };
        out.push(PlacedOp {
            op: id,
            lane,
            at,
            call,
            graph,
        });
    }
    out
}

/// Time zero of a picture: the first stamped start, else the first witnessed one, else the
/// first placed mark, else 0.
pub fn origin(ops: &[PlacedOp]) -> i64 {
    let first = |keep: &dyn Fn(Source) -> bool| {
        ops.iter()
            .filter_map(|p| p.at.ok())
            .filter(|m| keep(m.source))
            .map(|m| m.start)
            .min()
    };
    first(&|s| s == Source::Stamps)
        .or_else(|| first(&|s| matches!(s, Source::Cupti | Source::Events)))
        .or_else(|| first(&|_| true))
        .unwrap_or(0)
}

/// The earliest start and latest end of every mark, calls included if `calls`.
pub fn extent(ops: &[PlacedOp], calls: bool) -> Option<(i64, i64)> {
    let marks = ops
        .iter()
        .flat_map(|p| [p.at.ok(), if calls { p.call } else { None }])
        .flatten();
    marks.fold(None, |acc, m| match acc {
        None => Some((m.start, m.end)),
        Some((lo, hi)) => Some((lo.min(m.start), hi.max(m.end))),
    })
}

/// What an op is, in a word or two ("kernel", "copy", "event wait"), for titles and for naming
/// a thinned run ("1000 kernels").
pub fn kind_name(kind: &OpKind) -> &'static str {
    match kind {
        OpKind::Spin { .. } => "kernel",
        OpKind::Add { .. } => "vector add",
        OpKind::Copy { .. } => "copy",
        OpKind::HostFn { .. } => "host function",
        OpKind::Record { .. } => "event record",
        OpKind::Wait { .. } => "event wait",
        OpKind::HostSync { .. } => "host sync",
        OpKind::Elapsed { .. } => "elapsed-time read",
        OpKind::Query { .. } => "query",
        OpKind::Api { .. } => "API call",
        OpKind::AllocAsync { .. } => "async allocation",
        OpKind::FreeAsync { .. } => "async free",
        OpKind::BeginCapture { .. } => "begin capture",
        OpKind::EndCapture { .. } => "end capture",
        OpKind::GraphLaunch { .. } => "graph launch",
        OpKind::DeviceSync { .. } => "device sync",
        OpKind::AllReduce { .. } => "all-reduce",
    }
}

/// The plural of a [`kind_name`], `count` of them: "1 kernel", "999 kernels", "2 copies".
pub fn count_of(kind: &str, count: usize) -> String {
    match (count, kind) {
        (1, _) => format!("1 {kind}"),
        (_, "copy") => format!("{count} copies"),
        (_, "query") => format!("{count} queries"),
        (_, "host sync") => format!("{count} host syncs"),
        _ => format!("{count} {kind}s"),
    }
}

/// The op in a few words with its arguments: "copy H2D 1.0 MiB", "wait for E", "cuMemAlloc
/// 1.0 MiB", "graph launch of end capture".
pub fn describe(program: &Program, op: OpId) -> String {
    let Some(o) = program.op(op) else {
        return format!("op {} (not in the program)", op.0);
    };
    let event = |e: crate::program::EventId| {
        program
            .events
            .get(e.0)
            .map_or_else(|| format!("e{}", e.0), |e| e.label.clone())
    };
    let stream = |s: StreamId| {
        program
            .stream(s)
            .map_or_else(|| format!("s{}", s.0), |s| s.label.clone())
    };
    let target = |t: SyncTarget| match t {
        SyncTarget::Stream(s) => stream(s),
        SyncTarget::Event(e) => event(e),
        SyncTarget::Device => "the device".into(),
    };
    match o.kind {
        OpKind::Copy { bytes, .. } => format!(
            "copy {} {}",
            program.copy_dir(op).map_or("?", CopyDir::name),
            size(bytes)
        ),
        OpKind::Record { event: e, .. } => format!("event record of {}", event(e)),
        OpKind::Wait { event: e, .. } => format!("event wait for {}", event(e)),
        OpKind::HostSync { target: t } => format!("host sync of {}", target(t)),
        OpKind::Query { target: t } => format!("query of {}", target(t)),
        OpKind::Elapsed { from, to } => {
            format!("elapsed-time read {} → {}", event(from), event(to))
        }
        OpKind::Api { call, bytes } if call != ApiCall::MemFree && call != ApiCall::HostFree => {
            format!("API call {} {}", call.name(), size(bytes))
        }
        OpKind::Api { call, .. } => format!("API call {}", call.name()),
        OpKind::AllocAsync { bytes, .. } => format!("async allocation {}", size(bytes)),
        OpKind::FreeAsync { alloc, .. } => format!("async free of {}", program.label(alloc)),
        OpKind::GraphLaunch { graph, .. } => format!(
            "graph launch of the graph made by {} (op {})",
            program.label(graph),
            graph.0
        ),
        ref k => kind_name(k).into(),
    }
}

/// "1.0 MiB", "4.0 KiB", "512 B".
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

/// A `%globaltimer` stamp as a signed time; stamps beyond `i64` (corrupt) saturate.
/// Where a stamped span is drawn: its stamps, exactly.
fn stamped(s: &crate::measured::timeline::Span) -> Mark {
    Mark {
        start: clamp(s.start()),
        end: clamp(s.end()),
        slack_ns: 0,
        source: Source::Stamps,
        instant: false,
    }
}

fn clamp(ns: u64) -> i64 {
    i64::try_from(ns).unwrap_or(i64::MAX)
}

fn instant(call: Mark) -> Mark {
    Mark {
        start: call.end,
        instant: true,
        ..call
    }
}

fn widen(a: Mark, b: Mark) -> Mark {
    Mark {
        start: a.start.min(b.start),
        end: a.end.max(b.end),
        slack_ns: a.slack_ns.max(b.slack_ns),
        source: a.source.weaker(b.source),
        instant: false,
    }
}

impl Source {
    /// Of two sources, the one with the weaker evidence, to name a mark derived from both.
    fn weaker(self, other: Source) -> Source {
        let rank = |s: Source| match s {
            Source::Stamps => 0,
            Source::Cupti => 1,
            Source::Events => 2,
            Source::ClockSync => 3,
            Source::IssueOffset => 4,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

fn witnessed(t: &Timeline, op: OpId) -> Result<Mark, Unplaced> {
    if !t.witnessed.iter().any(|w| w.op == op) {
        return Err(Unplaced::NoWitnessSpan);
    }
    let sync = t.witness.ok_or(Unplaced::NoWitnessSync)?;
    let iv = t.interval(op).ok_or(Unplaced::NoWitnessSync)?;
    Ok(Mark {
        start: iv.start,
        end: iv.end,
        slack_ns: iv.slack_ns,
        source: match sync.kind {
            WitnessKind::Cupti => Source::Cupti,
            WitnessKind::Events => Source::Events,
        },
        instant: false,
    })
}

/// How host-clock times reach the `%globaltimer` axis in one trial.
struct HostClock {
    offset: Option<(i64, u64, Source)>,
}

impl HostClock {
    fn of(t: &Timeline) -> HostClock {
        let offset = match t.clock {
            Some(c) => Some((c.offset_ns, c.error_ns, Source::ClockSync)),
            None => t.issue_offset_ns().map(|o| (o, 0, Source::IssueOffset)),
        };
        HostClock { offset }
    }

    fn place(&self, begin: u64, end: u64) -> Result<Mark, Unplaced> {
        let (offset, slack_ns, source) = self.offset.ok_or(Unplaced::NoClock)?;
        let at = |ns: u64| clamp(ns).saturating_add(offset);
        Ok(Mark {
            start: at(begin),
            end: at(end.max(begin)),
            slack_ns,
            source,
            instant: false,
        })
    }

    /// The host call of `op`.
    fn call(&self, t: &Timeline, op: OpId) -> Result<Mark, Unplaced> {
        let c = t.host_call(op).ok_or(Unplaced::NoHostCall)?;
        self.place(c.begin_ns, c.end_ns)
    }

    /// The run of host function `op`.
    fn span(&self, t: &Timeline, op: OpId) -> Result<Mark, Unplaced> {
        let h = t
            .host_spans
            .iter()
            .find(|h| h.op == op)
            .ok_or(Unplaced::NoHostSpan)?;
        self.place(h.begin_ns, h.end_ns)
    }
}
