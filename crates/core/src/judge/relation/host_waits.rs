//! What judging knows of the program beyond the timeline: the host calls that block the host,
//! what each of them waits for, and the labels to name ops with in reasons.
//!
//! A host call that waits for device work (a stream, event or device sync, or the event sync of
//! an elapsed-time read) covers an op when the documented [model](crate::model) orders the op
//! before the call: the same coverage that makes the model order everything issued after the call
//! behind the op. Blocking driver calls ([`OpKind::Api`]) block the host for their own work; no
//! document says they wait for any op, so they cover none (docs/design.md, decision 13).

use super::Check;
use crate::measured::timeline::{Interval, Timeline};
use crate::model::HappensBefore;
use crate::program::{OpId, OpKind, Program, SyncTarget};

/// How an op's host call holds the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// The host only enqueues it.
    No,
    /// The call returns only once the work it covers has completed (by documentation).
    Waits { covers: Vec<bool> },
    /// A blocking driver call with no documented wait for other work.
    Undocumented,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostOp {
    pub label: String,
    /// The call named for reasons: "sync s1", "device sync", "cuMemFree".
    pub call: String,
    /// The op whose host call issued this one: itself, or the graph launch of a captured op.
    pub issuer: usize,
    pub block: Block,
    /// Depends on no op that takes time ([`HappensBefore::depends_on_none_of`]); a captured op,
    /// when its launch depends on nothing and it on no op captured before it. Its start minus
    /// its issue is the trial's launch delay, not a wait.
    pub free: bool,
}

impl HostOp {
    /// Whether the call waits for device work by documentation (a sync or an elapsed read).
    pub fn documented_wait(&self) -> bool {
        matches!(self.block, Block::Waits { .. })
    }
}

/// The program's host calls, for judging orders made by the host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostWaits {
    /// Whether the program is known (else nothing can be said of the calls between two ops).
    pub known: bool,
    ops: Vec<HostOp>,
    /// Per graph launch (its first launch of its graph), the captured ops that take time: the
    /// launch stands for their span in checks.
    /// With whether it is its graph's first launch.
    nodes: Vec<(OpId, Vec<OpId>, bool)>,
    /// Per op, whether it takes time ([`OpKind::takes_time`]); empty without the program.
    timed: Vec<bool>,
}

impl HostWaits {
    /// Nothing known: no labels, no host waits (a check measured without its program).
    pub fn unknown() -> HostWaits {
        HostWaits::default()
    }

    /// Ops known by their labels and streams alone, each issued by a call that blocks nothing:
    /// the GPU ops of a recorded trace (`crate::trace`). `free`: the op depended on nothing (its
    /// stream was idle when it was issued), so its start minus its issue is launch delay.
    pub fn listed(ops: impl IntoIterator<Item = (String, bool)>) -> HostWaits {
        let ops = ops
            .into_iter()
            .enumerate()
            .map(|(i, (label, free))| HostOp {
                call: label.clone(),
                label,
                issuer: i,
                block: Block::No,
                free,
            })
            .collect();
        HostWaits {
            known: true,
            ops,
            nodes: Vec::new(),
            timed: Vec::new(),
        }
    }

    pub fn of(program: &Program) -> HostWaits {
        HostWaits::with(program, &HappensBefore::of(program))
    }

    /// [`HostWaits::of`] with the program's documented model already at hand (`fuzz` builds
    /// it once per program for every use).
    pub fn with(program: &Program, hb: &HappensBefore) -> HostWaits {
        let stream = |s: crate::program::StreamId| {
            program
                .stream(s)
                .map_or_else(|| format!("stream {}", s.0), |s| s.label.clone())
        };
        let event = |e: crate::program::EventId| {
            program
                .events
                .get(e.0)
                .map_or_else(|| format!("event {}", e.0), |e| e.label.clone())
        };
        let launches = program.graph_launches();
        // Free of what takes time: a direct op (or a graph launch, which runs its graph) of the
        // direct ops before it; a captured op of the ops captured before it (its stream's, and
        // those it waits for through events), since it runs only when its graph is launched.
        let captures = program.captures();
        let counts = |o: OpId, captured: bool| {
            let kind = &program.ops[o.0].kind;
            captures[o.0].is_some() == captured
                && (kind.takes_time() || matches!(kind, OpKind::GraphLaunch { .. }))
        };
        let free_of_direct = hb.depends_on_none_of(|o| counts(o, false));
        let free_of_captured = hb.depends_on_none_of(|o| counts(o, true));
        let ops = program
            .ops
            .iter()
            .map(|op| {
                let i = op.id.0;
                let covers = || Block::Waits {
                    covers: (0..program.ops.len())
                        .map(|a| hb.must_precede(OpId(a), op.id))
                        .collect(),
                };
                let (call, block) = match op.kind {
                    OpKind::HostSync { target } => (
                        match target {
                            SyncTarget::Stream(s) => format!("sync {}", stream(s)),
                            SyncTarget::Event(e) => format!("sync {}", event(e)),
                            SyncTarget::Device => "device sync".to_string(),
                        },
                        covers(),
                    ),
                    OpKind::Elapsed { to, .. } => {
                        (format!("{} (sync {})", op.label, event(to)), covers())
                    }
                    OpKind::Api { call, .. } => (call.name().to_string(), Block::Undocumented),
                    _ => (op.label.clone(), Block::No),
                };
                let issuer = launches.get(i).copied().flatten().map_or(i, |l| l.0);
                HostOp {
                    label: op.label.clone(),
                    call,
                    issuer,
                    block,
                    free: match issuer == i {
                        true => free_of_direct[i],
                        false => free_of_direct[issuer] && free_of_captured[i],
                    },
                }
            })
            .collect();
        HostWaits {
            known: true,
            ops,
            nodes: launched_nodes(program),
            timed: program.ops.iter().map(|o| o.kind.takes_time()).collect(),
        }
    }

    /// The ops a graph launch stands for (its graph's nodes that take time), if `op` is the
    /// launch of a graph that has any.
    pub fn launched(&self, op: OpId) -> Option<&[OpId]> {
        self.nodes
            .iter()
            .find(|(l, _, _)| *l == op)
            .map(|(_, n, _)| n.as_slice())
    }

    /// Where `op` ran ([`Timeline::interval`]); a graph launch, from the first start to the last
    /// end of its graph's nodes in that launch, with their largest slack, and only when every
    /// node was placed.
    pub fn interval(&self, timeline: &Timeline, op: OpId) -> Option<Interval> {
        let Some((_, nodes, first)) = self.nodes.iter().find(|(l, _, _)| *l == op) else {
            return timeline.interval(op);
        };
        let placed: Option<Vec<Interval>> = match first {
            true => nodes.iter().map(|&n| timeline.interval(n)).collect(),
            false => {
                let spans = timeline.relaunch(op)?;
                (nodes.iter())
                    .map(|&n| {
                        let s = spans.iter().find(|s| s.op == n)?;
                        Some(Interval {
                            op: n,
                            start: s.start() as i64,
                            end: s.end() as i64,
                            slack_ns: timeline.device_slack_ns(s.device),
                        })
                    })
                    .collect()
            }
        };
        let placed = placed?;
        Some(Interval {
            op,
            start: placed.iter().map(|i| i.start).min()?,
            end: placed.iter().map(|i| i.end).max()?,
            slack_ns: placed.iter().map(|i| i.slack_ns).max()?,
        })
    }

    /// The op's label, or "op i" without the program.
    pub fn label(&self, op: OpId) -> String {
        self.ops
            .get(op.0)
            .map_or_else(|| format!("op {}", op.0), |o| o.label.clone())
    }

    /// Whether `op` depends on nothing (see [`HostOp::free`]); without the program, every op.
    pub fn free(&self, op: OpId) -> bool {
        !self.known || self.ops.get(op.0).is_some_and(|o| o.free)
    }

    /// The ops that take time, when the program is known and every op was issued directly (no
    /// graph): what a mid-trial release must account for ([`super::releases`]).
    pub fn timed_direct(&self) -> Option<impl Iterator<Item = OpId> + '_> {
        let direct = self.ops.iter().enumerate().all(|(i, o)| o.issuer == i);
        (self.known && direct && self.timed.len() == self.ops.len()).then(|| {
            (self.timed.iter().enumerate())
                .filter(|(_, t)| **t)
                .map(|(i, _)| OpId(i))
        })
    }

    /// Whether `op` was captured into a graph, and so issued by its graph's launch.
    pub fn captured(&self, op: OpId) -> bool {
        self.ops.get(op.0).is_some_and(|o| o.issuer != op.0)
    }

    /// The blocking host calls issued after `before` and before `after`, in issue order, with
    /// whether each waits for `before`.
    pub fn between(&self, before: OpId, after: OpId) -> Vec<(OpId, &HostOp, bool)> {
        let (Some(a), Some(b)) = (self.ops.get(before.0), self.ops.get(after.0)) else {
            return Vec::new();
        };
        (a.issuer + 1..b.issuer)
            .filter_map(|h| {
                let op = &self.ops[h];
                match &op.block {
                    Block::No => None,
                    Block::Waits { covers } => Some((OpId(h), op, covers[before.0])),
                    Block::Undocumented => Some((OpId(h), op, false)),
                }
            })
            .collect()
    }

    /// For a check that places a graph launch on the time axis: "; L stands for the span of its
    /// graph's nodes K1, K2" (the first and last of a long graph: "G0 … G999, 1000 nodes").
    pub fn launch_note(&self, check: Check) -> String {
        if !check.places_ops() {
            return String::new();
        }
        check
            .ops()
            .into_iter()
            .filter_map(|op| {
                let nodes = self.launched(op)?;
                let names = match nodes {
                    [first, .., last] if nodes.len() > 4 => format!(
                        "{} … {}, {} nodes",
                        self.label(*first),
                        self.label(*last),
                        nodes.len()
                    ),
                    _ => (nodes.iter().map(|&n| self.label(n)))
                        .collect::<Vec<_>>()
                        .join(", "),
                };
                Some(format!(
                    "; {} stands for the span of its graph's nodes {names}",
                    self.label(op)
                ))
            })
            .collect()
    }
}

/// Each graph launch with the nodes of its graph that take time, and whether it is the graph's
/// first launch. Every launch of a graph stands for the same nodes; the first launch's are the
/// nodes' own spans, a later one's the timeline's `relaunched` stamps.
fn launched_nodes(program: &Program) -> Vec<(OpId, Vec<OpId>, bool)> {
    let captures = program.captures();
    let mut nodes: Vec<(OpId, Vec<OpId>, bool)> = Vec::new();
    for op in &program.ops {
        let OpKind::GraphLaunch { graph, .. } = op.kind else {
            continue;
        };
        let ran: Vec<OpId> = (program.ops.iter())
            .filter(|o| captures[o.id.0] == Some(graph) && o.kind.takes_time())
            .map(|o| o.id)
            .collect();
        let first = !nodes.iter().any(|(l, _, _)| {
            matches!(program.ops[l.0].kind, OpKind::GraphLaunch { graph: g, .. } if g == graph)
        });
        if !ran.is_empty() {
            nodes.push((op.id, ran, first));
        }
    }
    nodes
}
