//! A model of CUDA stream and event semantics: for any program, what must happen before what, and
//! what may overlap. One model for the lab's own programs and for the programs behind traces.
//!
//! Every op is two events in time, its **start** and its **end**. The rules (`rules.rs`) add edges
//! between them:
//! - `end(x) → start(y)`: y cannot start before x has completed (a dependency);
//! - `start(x) → start(y)`: y cannot start before x has started (dispatch order in a hardware
//!   queue, used only by the [`Refinement::Queues`] refinement).
//!
//! `x` **must precede** `y` when a path leads from `end(x)` to `start(y)`. Two ops **may
//! overlap** when neither must precede the other. Every edge points forward in issue order: no
//! rule lets an op wait for one issued after it. The graph is therefore acyclic.
//!
//! The rules read a program in one form, [`Issued`] (`issued.rs`): a lab [`Program`] is read into
//! it whole ([`Issued::of`]), a trace's program is rebuilt into it (`trace/behind.rs`). Two ways
//! answer questions of it, from the same edges:
//! - [`HappensBefore`]: every pair at once, one reverse pass over bitsets; for the lab's programs
//!   (tens of ops, asked about every pair);
//! - [`Orders`] (`orders.rs`): one pair at a time, by a search back from the later op that never
//!   leaves the ops issued between the two, which returns the chain of rules that orders them;
//!   for traces of a hundred thousand ops, asked about the pairs that waited.
//!
//! The documented semantics ([`Refinement::Documented`]) are what NVIDIA promises. The queue
//! refinement adds what the hardware does with a limited number of connections. It is kept
//! separate, because it is measured behaviour rather than a documented rule. docs/model.md lists
//! the rules, what the model leaves out, and how to read a fuzz report.
//!
//! **May import:** `program`, `border`.

mod issued;
mod orders;
mod rules;

pub use issued::{Act, Issued, StreamFacts, What};
pub use orders::{Link, Orders, Search};
pub use rules::Rule;

use crate::program::{OpId, Program};
use serde::{Deserialize, Serialize};

/// Which semantics to model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refinement {
    /// The documented stream and event semantics only.
    Documented,
    /// The documented semantics on top of `n` hardware queues
    /// (`CUDA_DEVICE_MAX_CONNECTIONS=n`). Stream `i` of the program feeds queue `i mod n`, and a
    /// queue dispatches its kernels and waits in issue order. The driver does not document the
    /// mapping; `stream-litmus sweep` matched it on an H100 for 1–16 streams (docs/model.md).
    Queues(usize),
}

impl Refinement {
    /// The refinement a process sees: `CUDA_DEVICE_MAX_CONNECTIONS` if set, else the driver's
    /// documented default of 8 connections. A value that is not a count of 1 to 32 connections
    /// (the driver's range) is an error, not a guess: `abc`, `0` or `-1` say nothing the model
    /// could rely on.
    pub fn for_connections(
        value: Option<&str>,
    ) -> Result<Refinement, crate::border::error::EnvError> {
        let Some(v) = value else {
            return Ok(Refinement::Queues(DEFAULT_CONNECTIONS));
        };
        match v.parse::<usize>() {
            Ok(n @ 1..=32) if v.bytes().all(|b| b.is_ascii_digit()) => Ok(Refinement::Queues(n)),
            _ => Err(crate::border::error::EnvError::Connections(
                v.chars().take(64).collect(),
            )),
        }
    }
}

/// The driver's documented default of hardware connections per device.
pub const DEFAULT_CONNECTIONS: usize = 8;

/// The happens-before relation of one program, every pair at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HappensBefore {
    ops: usize,
    /// Words per row of [`HappensBefore::reach`].
    words: usize,
    /// Row `node` (`words` words from `node * words`): bitset of the ops whose start is reachable
    /// from `node` (start of op i = node 2i, end = node 2i+1). Every question asks which starts
    /// an end reaches, so a row holds starts only: half the width of all nodes. One block, not
    /// a vector per node: a graph of 1000 launches has 4000 rows, and judging builds the
    /// relation for every claim it judges.
    reach: Vec<u64>,
}

impl HappensBefore {
    /// The documented semantics of `program`.
    pub fn of(program: &Program) -> HappensBefore {
        HappensBefore::with(program, Refinement::Documented)
    }

    /// The semantics of `program` under `refinement`.
    pub fn with(program: &Program, refinement: Refinement) -> HappensBefore {
        HappensBefore::of_issued(&Issued::of(program), refinement)
    }

    /// The semantics of a program as the model reads it, under `refinement`.
    pub fn of_issued(issued: &Issued, refinement: Refinement) -> HappensBefore {
        let ops = issued.ops.len();
        let nodes = 2 * ops;
        let words = ops.div_ceil(64).max(1);
        let mut edges: Vec<(usize, usize)> = rules::edges(issued, refinement)
            .into_iter()
            .map(|edge| {
                debug_assert!(edge.from < edge.to, "edges point forward in issue order");
                (edge.from as usize, edge.to as usize)
            })
            .collect();
        edges.sort_unstable();
        let mut reach = vec![0u64; nodes * words];
        // Rows from the last node back: every edge points forward, so the row of its target is
        // complete when its source's is built. What a node reaches through an edge is the
        // edge's target (when it is a start) and all the target reaches.
        let mut next = edges.len();
        for v in (0..nodes).rev() {
            let first = edges[..next].partition_point(|&(from, _)| from < v);
            let (head, tail) = reach.split_at_mut((v + 1) * words);
            let row = &mut head[v * words..];
            for &(_, w) in &edges[first..next] {
                if w % 2 == 0 {
                    let op = w / 2;
                    row[op / 64] |= 1 << (op % 64);
                }
                let target = &tail[(w - v - 1) * words..(w - v) * words];
                for (b, r) in row.iter_mut().zip(target) {
                    *b |= r;
                }
            }
            next = first;
        }
        HappensBefore { ops, words, reach }
    }

    /// The ops whose start `node` reaches.
    fn row(&self, node: usize) -> &[u64] {
        &self.reach[node * self.words..(node + 1) * self.words]
    }

    /// Whether `from` reaches the start of op `to`.
    fn reaches(&self, from: usize, to: usize) -> bool {
        self.row(from)[to / 64] & (1 << (to % 64)) != 0
    }

    /// `b` cannot start before `a` has completed.
    pub fn must_precede(&self, a: OpId, b: OpId) -> bool {
        a.0 < self.ops && b.0 < self.ops && self.reaches(2 * a.0 + 1, b.0)
    }

    /// Neither op must precede the other.
    pub fn may_overlap(&self, a: OpId, b: OpId) -> bool {
        a != b && !self.must_precede(a, b) && !self.must_precede(b, a)
    }

    /// Per op, whether it depends on none of the ops `counts` names: no such op must precede it
    /// (through its stream, a wait, or an implicit synchronization). Asked with the ops that take
    /// time ([`crate::program::OpKind::takes_time`]), an op that depends on none of them starts
    /// within the launch latency of its issue, which makes it a witness of the trial's
    /// host-to-GPU offset.
    pub fn depends_on_none_of(&self, counts: impl Fn(OpId) -> bool) -> Vec<bool> {
        let mut reached = vec![0u64; self.words];
        for op in (0..self.ops).filter(|&i| counts(OpId(i))) {
            for (r, w) in reached.iter_mut().zip(self.row(2 * op + 1)) {
                *r |= w;
            }
        }
        (0..self.ops)
            .map(|i| reached[i / 64] & (1 << (i % 64)) == 0)
            .collect()
    }

    /// Every must-precede pair, in issue order of the first op.
    pub fn must_pairs(&self) -> Vec<(OpId, OpId)> {
        self.pairs(|a, b| self.must_precede(a, b))
    }

    /// Every may-overlap pair `(a, b)` with `a` issued before `b`.
    pub fn may_overlap_pairs(&self) -> Vec<(OpId, OpId)> {
        self.pairs(|a, b| a.0 < b.0 && self.may_overlap(a, b))
    }

    fn pairs(&self, keep: impl Fn(OpId, OpId) -> bool) -> Vec<(OpId, OpId)> {
        let mut out = Vec::new();
        for a in 0..self.ops {
            for b in 0..self.ops {
                if keep(OpId(a), OpId(b)) {
                    out.push((OpId(a), OpId(b)));
                }
            }
        }
        out
    }
}
