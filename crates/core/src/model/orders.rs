//! The model one pair at a time: whether a chain of its edges orders op `a` before op `b`, and
//! which chain, for programs too large for every pair at once (a trace of 150,000 ops would need
//! 22 GB of bitsets).
//!
//! Every edge points forward in issue order, so a chain from `end(a)` to `start(b)` passes only
//! through ops issued between the two: a search back from `start(b)` never leaves that window,
//! and stops once it has looked at more nodes than its caller allows (the answer is then
//! [`Search::Undecided`], never a guess). The search is breadth-first, so the chain it finds is
//! one of the shortest: "the NCCL stream waited for an event recorded on stream 21 after waiting
//! for one recorded on stream 7 after the copy" rather than a detour through every op between.

use super::issued::Issued;
use super::rules::{each_edge, Rule};
use super::Refinement;
use std::collections::HashMap;

/// The edges of one program, by the node they lead to.
#[derive(Debug, Clone, Default)]
pub struct Orders {
    ops: usize,
    /// `preds[offsets[v]..offsets[v + 1]]`: the edges into node `v`, as (from, rule).
    offsets: Vec<u32>,
    preds: Vec<(u32, Rule)>,
}

/// One step of a chain: an instant of an op (its start or its end) and the rule of the edge
/// that led to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    pub op: usize,
    pub end: bool,
    pub rule: Rule,
}

/// What a search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Search {
    /// A chain from `end(a)` to `start(b)`: the instants after `end(a)`, in order, each with the
    /// rule of the edge into it; the last is `start(b)`.
    Ordered(Vec<Link>),
    /// No chain of the rules allowed.
    Not,
    /// The search looked at as many nodes as it was allowed and found none.
    Undecided,
}

impl Orders {
    /// The edges of `issued` under `refinement`.
    pub fn of(issued: &Issued, refinement: Refinement) -> Orders {
        let ops = issued.ops.len();
        let nodes = 2 * ops;
        // The rules run twice, counting the edges into each node and then placing them, rather
        // than listing them all first: the list (12 bytes an edge) beside the places (8) was
        // the peak of reading a 200 MB trace (issue 51).
        let mut offsets = vec![0u32; nodes + 1];
        let mut edges = 0usize;
        each_edge(issued, refinement, &mut |e| {
            offsets[e.to as usize + 1] += 1;
            edges += 1;
        });
        for v in 0..nodes {
            offsets[v + 1] += offsets[v];
        }
        // `offsets[v]` is the next place of an edge into `v` while they are placed, in the order
        // the rules give them, and ends where `v + 1`'s begin: moved back up by one after.
        let mut preds = vec![(0u32, Rule::Duration); edges];
        each_edge(issued, refinement, &mut |e| {
            let at = &mut offsets[e.to as usize];
            preds[*at as usize] = (e.from, e.rule);
            *at += 1;
        });
        offsets.copy_within(0..nodes, 1);
        offsets[0] = 0;
        Orders {
            ops,
            offsets,
            preds,
        }
    }

    pub fn ops(&self) -> usize {
        self.ops
    }

    fn edges_into(&self, v: usize) -> &[(u32, Rule)] {
        let (lo, hi) = (self.offsets[v] as usize, self.offsets[v + 1] as usize);
        &self.preds[lo..hi]
    }

    /// Whether a chain of edges whose rules `allow` takes leads from the end of op `a` to the
    /// start of op `b`, looking at no more than `limit` nodes.
    pub fn chain(&self, a: usize, b: usize, allow: &dyn Fn(Rule) -> bool, limit: usize) -> Search {
        if a >= self.ops || b >= self.ops || a >= b {
            return Search::Not;
        }
        let (from, to) = (2 * a + 1, 2 * b);
        // Each node reached, with the node after it on the way to `to` and that edge's rule.
        let mut next: HashMap<u32, (u32, Rule)> = HashMap::new();
        let mut queue = std::collections::VecDeque::from([to as u32]);
        let mut seen = 0usize;
        while let Some(v) = queue.pop_front() {
            seen += 1;
            if seen > limit {
                return Search::Undecided;
            }
            for &(u, rule) in self.edges_into(v as usize) {
                if (u as usize) < from || !allow(rule) || next.contains_key(&u) {
                    continue;
                }
                next.insert(u, (v, rule));
                if u as usize == from {
                    return Search::Ordered(walk(from as u32, to as u32, &next));
                }
                queue.push_back(u);
            }
        }
        Search::Not
    }

    /// The ops `observed` takes that precede op `b` with nothing observed between: searched back
    /// from `b`'s start through the ops `observed` leaves out (records, waits, the join of a
    /// launch) and never through `stop` (a host sync: what came before it is checked against
    /// the sync itself). Each comes with the rules of the chain that found it. Only edges that
    /// `allow` takes are followed; at most `limit` nodes are looked at.
    pub fn nearest(
        &self,
        b: usize,
        observed: &dyn Fn(usize) -> bool,
        stop: &dyn Fn(usize) -> bool,
        allow: &dyn Fn(Rule) -> bool,
        limit: usize,
    ) -> Vec<(usize, Vec<Rule>)> {
        if b >= self.ops {
            return Vec::new();
        }
        // Each node reached with the rules of its chain so far.
        let mut rules_of: HashMap<u32, Vec<Rule>> = HashMap::new();
        let mut found: Vec<(usize, Vec<Rule>)> = Vec::new();
        let mut queue = std::collections::VecDeque::from([(2 * b) as u32]);
        rules_of.insert((2 * b) as u32, Vec::new());
        let mut seen = 0usize;
        while let Some(v) = queue.pop_front() {
            seen += 1;
            if seen > limit {
                break;
            }
            let so_far = rules_of.get(&v).cloned().unwrap_or_default();
            for &(u, rule) in self.edges_into(v as usize) {
                if !allow(rule) || rules_of.contains_key(&u) {
                    continue;
                }
                let mut rules = so_far.clone();
                if rule != Rule::Duration && !rules.contains(&rule) {
                    rules.push(rule);
                }
                let op = u as usize / 2;
                let is_end = u % 2 == 1;
                rules_of.insert(u, rules.clone());
                if observed(op) && is_end {
                    found.push((op, rules));
                } else if !stop(op) && !observed(op) {
                    queue.push_back(u);
                }
            }
        }
        found.sort_unstable_by_key(|f| f.0);
        found
    }
}

/// The chain from `from` to `to` that `next` records, as links after `from`.
fn walk(from: u32, to: u32, next: &HashMap<u32, (u32, Rule)>) -> Vec<Link> {
    let mut links = Vec::new();
    let mut at = from;
    while at != to {
        let Some(&(v, rule)) = next.get(&at) else {
            break;
        };
        links.push(Link {
            op: v as usize / 2,
            end: v % 2 == 1,
            rule,
        });
        at = v;
    }
    links
}
