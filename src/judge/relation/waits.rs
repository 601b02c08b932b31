//! What judging knows of the program beyond the timeline: the host calls that block the host,
//! what each of them waits for, and the labels to name ops with in reasons.
//!
//! A host call that waits for device work (a stream, event or device sync, or the event sync of
//! an elapsed-time read) covers an op when the documented [model](crate::judge::model) orders the op
//! before the call: the same coverage that makes the model order everything issued after the call
//! behind the op. Blocking driver calls ([`OpKind::Api`]) block the host for their own work; no
//! document says they wait for any op, so they cover none (docs/design.md, decision 13).

use crate::judge::model::HappensBefore;
use crate::program::{OpId, OpKind, Program, SyncTarget};

/// How an op's host call holds the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Block {
    /// The host only enqueues it.
    No,
    /// The call returns only once the work it covers has completed (by documentation).
    Waits { covers: Vec<bool> },
    /// A blocking driver call with no documented wait for other work.
    Undocumented,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostOp {
    pub label: String,
    /// The call named for reasons: "sync s1", "device sync", "cuMemFree".
    pub call: String,
    /// The op whose host call issued this one: itself, or the graph launch of a captured op.
    pub issuer: usize,
    pub block: Block,
}

impl HostOp {
    /// Whether the call waits for device work by documentation (a sync or an elapsed read).
    pub fn documented_wait(&self) -> bool {
        matches!(self.block, Block::Waits { .. })
    }
}

/// The program's host calls, for judging orders made by the host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HostWaits {
    /// Whether the program is known (else nothing can be said of the calls between two ops).
    pub known: bool,
    ops: Vec<HostOp>,
}

impl HostWaits {
    /// Nothing known: no labels, no host waits (a check measured without its program).
    pub fn unknown() -> HostWaits {
        HostWaits::default()
    }

    pub fn of(program: &Program) -> HostWaits {
        let hb = HappensBefore::of(program);
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
                }
            })
            .collect();
        HostWaits { known: true, ops }
    }

    /// The op's label, or "op i" without the program.
    pub fn label(&self, op: OpId) -> String {
        self.ops
            .get(op.0)
            .map_or_else(|| format!("op {}", op.0), |o| o.label.clone())
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
}
