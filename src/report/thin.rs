//! Thinning: dense lanes drawn as runs, so a picture stays small and readable.
//!
//! The graph-launch claims issue 1000 kernels one by one and 1000 more in a graph: a bar, a hover
//! title and a host call each would make the page megabytes long and the lane a solid block. So
//! a lane with more marks than a picture allows has its consecutive marks of one kind merged
//! into a [`Run`] ("D0..D999: 1000 kernels"), which names the range of ops it covers; where
//! runs of one kind are not enough (kinds alternate), consecutive marks are merged in equal
//! chunks regardless of kind. Lanes within the limit are drawn op by op. The SVG and the terminal
//! picture both thin through [`thin`], each with its own limit; the Chrome trace keeps every op,
//! since its viewer zooms.

use super::placement::{kind_name, Lane, Mark, PlacedOp, Source, Unplaced};
use crate::program::{OpId, Program};
use std::collections::BTreeMap;

/// Consecutive marks of one kind merged only from this many on.
const MIN_RUN: usize = 3;

/// What a mark shows of its op: where the op ran, or the host call that issued it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Op,
    Call,
}

/// Consecutive marks of one lane merged into one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub role: Role,
    pub first: OpId,
    pub last: OpId,
    pub count: usize,
    /// The [`kind_name`] of every op in the run, or "op" where they differ.
    pub kind: &'static str,
    /// From the earliest start to the latest end of the placed marks; `None` if none is placed.
    pub start: Option<i64>,
    pub end: Option<i64>,
    /// The source of every placed mark, if they share one.
    pub source: Option<Source>,
    /// The largest slack of any placed mark.
    pub slack_ns: u64,
    /// The sum of the placed marks' durations.
    pub busy_ns: u64,
    /// How many of the ops have no placement.
    pub unplaced: usize,
}

/// One thing to draw on a lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drawn<'a> {
    One { placed: &'a PlacedOp, role: Role },
    Run(Run),
}

/// The mark to draw for a single op: where it ran, or its call.
pub fn mark(placed: &PlacedOp, role: Role) -> Result<Mark, Unplaced> {
    match role {
        Role::Op => placed.at,
        Role::Call => placed.call.ok_or(Unplaced::NoHostCall),
    }
}

/// Every lane with its marks, streams in id order and the host last; host calls of stream ops
/// on the host lane too if `calls`. A lane with more than `per_lane` marks is thinned.
pub fn thin<'a>(
    program: &Program,
    ops: &'a [PlacedOp],
    calls: bool,
    per_lane: usize,
) -> Vec<(Lane, Vec<Drawn<'a>>)> {
    let mut lanes: BTreeMap<Lane, Vec<(&PlacedOp, Role)>> = BTreeMap::new();
    for p in ops {
        lanes.entry(p.lane).or_default().push((p, Role::Op));
        if calls && p.call.is_some() {
            lanes.entry(Lane::Host).or_default().push((p, Role::Call));
        }
    }
    lanes
        .into_iter()
        .map(|(lane, items)| (lane, thin_lane(program, &items, per_lane.max(1))))
        .collect()
}

fn thin_lane<'a>(
    program: &Program,
    items: &[(&'a PlacedOp, Role)],
    per_lane: usize,
) -> Vec<Drawn<'a>> {
    if items.len() <= per_lane {
        return items
            .iter()
            .map(|&(placed, role)| Drawn::One { placed, role })
            .collect();
    }
    let key = |&(p, role): &(&PlacedOp, Role)| {
        (
            role,
            program.op(p.op).map(|o| kind_name(&o.kind)),
            mark(p, role).is_ok(),
            p.graph,
        )
    };
    let mut by_kind = Vec::new();
    for group in items.chunk_by(|a, b| key(a) == key(b)) {
        if group.len() >= MIN_RUN {
            by_kind.push(run(program, group));
        } else {
            by_kind.extend(
                group
                    .iter()
                    .map(|&(placed, role)| Drawn::One { placed, role }),
            );
        }
    }
    if by_kind.len() <= per_lane {
        return by_kind;
    }
    items
        .chunks(items.len().div_ceil(per_lane))
        .map(|group| match group {
            &[(placed, role)] => Drawn::One { placed, role },
            _ => run(program, group),
        })
        .collect()
}

fn run<'a>(program: &Program, group: &[(&PlacedOp, Role)]) -> Drawn<'a> {
    let kinds = group
        .iter()
        .map(|(p, _)| program.op(p.op).map_or("op", |o| kind_name(&o.kind)));
    let first_kind = kinds.clone().next().unwrap_or("op");
    let kind = if kinds.clone().all(|k| k == first_kind) {
        first_kind
    } else {
        "op"
    };
    let marks: Vec<Mark> = group
        .iter()
        .filter_map(|&(p, role)| mark(p, role).ok())
        .collect();
    let source = marks.first().map(|m| m.source);
    Drawn::Run(Run {
        role: group[0].1,
        first: group[0].0.op,
        last: group[group.len() - 1].0.op,
        count: group.len(),
        kind,
        start: marks.iter().map(|m| m.start).min(),
        end: marks.iter().map(|m| m.end).max(),
        source: source.filter(|&s| marks.iter().all(|m| m.source == s)),
        slack_ns: marks.iter().map(|m| m.slack_ns).max().unwrap_or(0),
        busy_ns: marks
            .iter()
            .fold(0u64, |sum, m| sum.saturating_add(m.duration_ns())),
        unplaced: group.len() - marks.len(),
    })
}
