//! The sweep analysis on the CPU, with hand-made timelines: which first kernels were held back,
//! what the model predicts, and the launch offsets.

use crate::common;

use stream_litmus::model::Refinement;
use stream_litmus::sweep::{offsets_row, queues_program, queues_row, summary};

fn queues(k: usize) -> stream_litmus::Program {
    queues_program(k, std::time::Duration::from_micros(1))
}
use stream_litmus::{HostCall, OpId, Span, Timeline, Trials};

fn trials(timelines: Vec<Timeline>) -> Trials {
    Trials {
        calibration: common::hand_made::calibration(500),
        wanted: timelines.len(),
        timelines,
        gpu_time_ns: 0,
        warnings: vec![],
        sharing: None,
        timing: None,
        left_out: 0,
    }
}

/// k = 3 streams, A/B pairs; op 2i is Ai, op 2i+1 is Bi. Launches return every 2 µs; each A
/// starts 1 µs after its launch unless `held` says it waited until A1 ended (200 µs).
fn queue_timeline(held: &[usize]) -> Timeline {
    let mut spans = Vec::new();
    let mut calls = Vec::new();
    for i in 0..3usize {
        let (a, b) = (OpId(2 * i), OpId(2 * i + 1));
        let issued_a = (4 * i as u64 + 1) * 1_000;
        calls.push(HostCall {
            op: a,
            begin_ns: issued_a - 1_000,
            end_ns: issued_a,
        });
        calls.push(HostCall {
            op: b,
            begin_ns: issued_a,
            end_ns: issued_a + 2_000,
        });
        let start = if held.contains(&(i + 1)) {
            202_000
        } else {
            issued_a + 1_000
        };
        spans.push(Span::single(a, start, start + 200_000));
        spans.push(Span::single(b, start + 202_000, start + 402_000));
    }
    Timeline::new(spans, calls)
}

#[test]
fn a_first_kernel_that_waits_for_a1_to_end_is_held_back() {
    let t = trials(vec![queue_timeline(&[]), queue_timeline(&[3])]);
    let row = queues_row(&queues(3), &t, Refinement::Queues(2));
    assert_eq!(row.held_back, vec![3]);
    assert_eq!(row.undecided, 0);
    // With 2 queues, stream 3 shares stream 1's queue: its A sits behind B1, which waits for A1.
    assert_eq!(row.predicted, vec![3]);
    let free = queues_row(
        &queues(3),
        &trials(vec![queue_timeline(&[])]),
        Refinement::Queues(8),
    );
    assert!(free.held_back.is_empty() && free.predicted.is_empty());
}

#[test]
fn the_model_predicts_the_ninth_stream_under_eight_queues() {
    let t = trials(vec![]);
    let predicted = |k| queues_row(&queues(k), &t, Refinement::Queues(8)).predicted;
    assert!(predicted(8).is_empty());
    assert_eq!(predicted(9), vec![9]);
    assert_eq!(predicted(16), (9..=16).collect::<Vec<_>>());
    assert!(queues_row(&queues(16), &t, Refinement::Queues(32))
        .predicted
        .is_empty());
    assert_eq!(
        queues_program(3, std::time::Duration::from_micros(1))
            .ops
            .len(),
        6
    );
}

#[test]
fn launch_offsets_are_measured_from_the_first_kernel() {
    let calls = (0..3)
        .map(|i| HostCall {
            op: OpId(i),
            begin_ns: i as u64 * 3_000,
            end_ns: i as u64 * 3_000 + 2_500,
        })
        .collect();
    let spans = vec![
        Span::single(OpId(0), 10_000, 60_000),
        Span::single(OpId(1), 13_500, 63_500),
        Span::single(OpId(2), 16_000, 66_000),
    ];
    let row = offsets_row(3, &trials(vec![Timeline::new(spans, calls)]));
    assert_eq!(row.offsets_ns, vec![3_500, 6_000]);
    assert_eq!(row.launch_gaps_ns, vec![3_000, 3_000]);
    assert_eq!(summary(&row.offsets_ns), Some((3_500, 6_000, 6_000)));
    assert_eq!(summary(&[]), None);
}

#[test]
fn the_queue_table_compresses_runs_of_streams_and_names_the_smallest_k() {
    use stream_litmus::report::sweep_tables::queues_table;
    use stream_litmus::sweep::QueueRow;
    let row = |k: usize, held: Vec<usize>| QueueRow {
        streams: k,
        predicted: held.clone(),
        held_back: held,
        undecided: 0,
    };
    let rows = vec![
        row(8, vec![]),
        row(9, vec![9]),
        row(12, vec![9, 10, 11, 12]),
    ];
    let text = queues_table(&[("default".into(), rows)]);
    assert!(text.contains("9–12 / 9–12"), "{text}");
    assert!(
        text.contains("smallest k with a false dependency: measured 9, model 9"),
        "{text}"
    );
}
