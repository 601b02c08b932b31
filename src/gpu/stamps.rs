//! From the stamp words a trial left on the device to a [`Timeline`]: pure functions, apart
//! from the executor so that each file stays readable.

use super::kernels::WORDS_PER_BLOCK;
use crate::border::error::Error;
use crate::measured::timeline::{BlockStamp, HostCall, Pause, Span, Timeline};
use crate::program::Program;

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
        let grid = op.kind.stamped_grid();
        if grid == 0 {
            continue;
        }
        let mut blocks = Vec::with_capacity(grid as usize);
        for b in 0..grid as usize {
            let w = &host[(first_record[i] + b) * WORDS_PER_BLOCK..][..WORDS_PER_BLOCK];
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
        spans.push(Span {
            op: op.id,
            blocks,
            device: 0,
        });
    }
    Ok(Timeline::new(spans, host_calls))
}
