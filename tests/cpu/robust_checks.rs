//! Load checks that a check names ops and buffers that exist, not that they are of the kind the
//! check is about (a `ReturnsBefore` whose call is a kernel, say). Such a claim must still judge
//! and draw without a panic or an overflow: every kind of check on every pair of a recorded
//! program's first and last ops, through the verdict, the terminal, HTML and trace reports and
//! the scenario tables.

use crate::common;

use stream_litmus::{BufferId, Check, OpId, Place, RunRecord};

fn every_check(a: OpId, b: OpId, c: OpId) -> Vec<Check> {
    let (lo, hi) = (a.min(b), a.max(b));
    vec![
        Check::Precedes {
            before: a,
            after: b,
        },
        Check::Overlaps { a, b },
        Check::Interleaves { low: a, high: b },
        Check::Behind { low: a, high: b },
        Check::Uninterrupted { op: a, by: b },
        Check::ElapsedCovers {
            elapsed: a,
            span: b,
        },
        Check::ReturnsBefore { call: a, span: b },
        Check::ReturnsAfter { call: a, span: b },
        Check::Answers { query: a, span: b },
        Check::Separates {
            call: a,
            before: b,
            after: c,
        },
        Check::Reuses {
            first: a,
            second: b,
        },
        Check::LaunchCheaper {
            graph: c,
            first: lo,
            last: hi,
        },
        Check::Serializes { a, b },
        Check::Blocks { call: a, span: b },
        Check::Faster {
            slow: (lo, hi),
            fast: (c.min(b), c.max(b)),
        },
    ]
}

#[test]
fn checks_on_ops_of_any_kind_judge_and_draw_without_panic() {
    for name in ["core-h100.json", "nocupti-h100.json.gz"] {
        let run = RunRecord::load(&common::fixture(name)).unwrap();
        for rec in &run.claims {
            let ops = rec.claim.program.ops.len();
            let ids: Vec<OpId> = [0, 1, ops - 1]
                .iter()
                .map(|&i| OpId(i.min(ops - 1)))
                .collect();
            let mut checks = Vec::new();
            for &a in &ids {
                for &b in &ids {
                    checks.extend(every_check(a, b, ids[1]));
                }
            }
            if !rec.claim.program.buffers.is_empty() {
                checks.push(Check::Contents {
                    buffer: BufferId(0),
                    value: 3,
                });
                checks.push(Check::MemoryIs {
                    buffer: BufferId(0),
                    place: Place::Pinned,
                });
            }
            let mut r = rec.clone();
            r.claim.checks = checks;
            let r = r.rejudge();
            let one = RunRecord {
                claims: vec![r.clone()],
                ..run.clone()
            };
            let _ = stream_litmus::report::html::html_report(&one);
            let _ = stream_litmus::report::chrome_trace::chrome_trace(&one);
            let _ = stream_litmus::report::terminal::details(&r);
            let _ = stream_litmus::report::compare::compare(&one, &one);
            let _ = stream_litmus::report::scenario::tables(&one.claims);
        }
    }
}
