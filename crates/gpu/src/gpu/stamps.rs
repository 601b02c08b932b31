//! From the stamp words a trial left on the device to a [`Timeline`]: pure functions, apart
//! from the executor so that each file stays readable.

use super::kernels::WORDS_PER_BLOCK;
use crate::border::error::Error;
use crate::measured::blocks::Packer;
use crate::measured::timeline::{BlockStamp, HostCall, Pause, Relaunch, Span, Timeline};
use crate::program::{OpKind, Program};

/// The host calls with every captured op's replaced by its graph's launch: a captured op reaches
/// the GPU when its graph is launched, so that is when it was issued for every readiness
/// judgement.
pub fn graph_issue(program: &Program, calls: &[HostCall]) -> Vec<HostCall> {
    let launches = program.graph_launches();
    calls
        .iter()
        .map(|c| match launches.get(c.op.0).copied().flatten() {
            Some(launch) => HostCall {
                op: c.op,
                ..calls[launch.0]
            },
            None => *c,
        })
        .collect()
}

pub fn timeline(
    program: &Program,
    first_record: &[usize],
    host: &[u64],
    host_calls: Vec<HostCall>,
) -> Result<Timeline, Error> {
    let mut spans = Vec::new();
    for (i, op) in program.ops.iter().enumerate() {
        if op.kind.stamped_grid() > 0 {
            spans.push(span(program, i, first_record[i], host)?);
        }
    }
    Ok(Timeline::new(spans, host_calls))
}

/// Per graph launch after its graph's first (by op): each stamped node of the graph and where
/// its records for that launch begin, counted on from `next`, which ends past them.
pub fn relaunch_records(program: &Program, next: &mut usize) -> Vec<Option<Vec<(usize, usize)>>> {
    let captures = program.captures();
    let first = program.graph_launches();
    (program.ops.iter())
        .map(|op| {
            let OpKind::GraphLaunch { graph, .. } = op.kind else {
                return None;
            };
            let is_first = first.contains(&Some(op.id));
            let nodes = (program.ops.iter())
                .filter(|n| captures[n.id.0] == Some(graph) && n.kind.stamped_grid() > 0);
            (!is_first).then(|| {
                nodes
                    .map(|n| {
                        let at = *next;
                        *next += n.kind.stamped_grid() as usize;
                        (n.id.0, at)
                    })
                    .collect()
            })
        })
        .collect()
}

/// The stamps graphs' later launches left, read from `host` at `records`.
pub fn relaunched(
    program: &Program,
    records: &[Option<Vec<(usize, usize)>>],
    host: &[u64],
) -> Result<Vec<Relaunch>, Error> {
    (records.iter().enumerate())
        .filter_map(|(i, r)| Some((i, r.as_ref()?)))
        .map(|(i, nodes)| {
            Ok(Relaunch {
                launch: program.ops[i].id,
                spans: (nodes.iter())
                    .map(|&(n, at)| span(program, n, at, host))
                    .collect::<Result<_, _>>()?,
            })
        })
        .collect()
}

/// Op `i`'s span from its records starting at `first`.
fn span(program: &Program, i: usize, first: usize, host: &[u64]) -> Result<Span, Error> {
    let op = &program.ops[i];
    let grid = op.kind.stamped_grid() as usize;
    // Packed as read, never held as a list of stamps first (32,768 a trial in
    // `scenario.sleep.grid`).
    let mut blocks = Packer::default();
    for b in 0..grid {
        let w = &host[(first + b) * WORDS_PER_BLOCK..][..WORDS_PER_BLOCK];
        if w[0] == 0 || w[1] < w[0] {
            return Err(Error::MissingStamps {
                op: i,
                label: op.label.clone(),
                block: b,
            });
        }
        blocks.push(BlockStamp {
            start_ns: w[0],
            end_ns: w[1],
            sm: w[2] as u32,
            cycles: w[3],
            pause: (w[5] >= Pause::RECORDED_NS).then_some(Pause {
                at_ns: w[4],
                ns: w[5],
            }),
        });
    }
    Ok(Span {
        op: op.id,
        blocks: blocks.finish(),
        device: 0,
    })
}
