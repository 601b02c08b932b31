//! Buffers come from a pool kept for the whole run (issue 16), so a buffer a claim gets may be
//! one another claim wrote. On the GPU: after the racing-writers claim leaves its output full of
//! the second writer's values, a program with buffers of the same place and size, that writes
//! nothing, reads back its own fill value in every trial; and the race claim, run again on reused
//! buffers, keeps its verdict.

use crate::common::{assert_claim, catalogue_claim, lab};
use serial_test::serial;
use std::time::Duration;
use stream_litmus::{Place, ProgramBuilder, StreamKind};

/// The f32 elements of each of the race claims' buffers (4 MiB in claims/catalogue/copies.litmus).
const RACE_ELEMENTS: u64 = 1 << 20;

#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn a_pooled_buffer_starts_every_trial_from_its_fill_value() {
    let race = catalogue_claim("race.event_orders_writers");
    assert_claim(&race); // leaves `out` (the 4th buffer) holding 2s, then gives it back

    let bytes = RACE_ELEMENTS * 4;
    let mut p = ProgramBuilder::new("pool.reset");
    for (label, fill) in [("a", 5), ("b", 6), ("c", 7)] {
        p.buffer(label, Place::Device, bytes, fill);
    }
    let out = p.buffer("out", Place::Device, bytes, 9);
    p.read_back(out);
    let s = p.stream(StreamKind::NonBlocking);
    p.spin(s, "K", Duration::from_micros(10));
    let trials = lab().run(&p.build()).expect("the program runs");

    let timing = trials.timing.expect("the executor times every run");
    assert!(
        timing.buffers_reused >= 4,
        "the race claim's buffers were not reused, so this test shows nothing: {timing:?}"
    );
    for (i, t) in trials.timelines.iter().enumerate() {
        let c = t
            .contents
            .iter()
            .find(|c| c.buffer == out)
            .expect("read back");
        assert_eq!(c.elements, RACE_ELEMENTS, "trial {i}");
        assert_eq!(c.other, 0, "trial {i}: {c:?}");
        assert_eq!(c.values.len(), 1, "trial {i}: {c:?}");
        assert_eq!(
            (c.values[0].value, c.values[0].count),
            (9, RACE_ELEMENTS),
            "trial {i}"
        );
    }

    // Both race claims again, on reused buffers: the same verdicts.
    assert_claim(&catalogue_claim("race.unsynchronized_writers"));
    assert_claim(&race);
}

/// Within one program too, every trial starts from the fill values: `acc = one + acc` reads the
/// buffer it writes, so a trial that found the previous one's result would read back 2, 3, …
/// rather than 1 (the fill kernel's reset before each trial; the warm-up ran first).
#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn a_buffer_an_op_reads_and_writes_is_reset_before_every_trial() {
    let bytes = RACE_ELEMENTS * 4;
    let mut p = ProgramBuilder::new("pool.accumulate");
    let one = p.buffer("one", Place::Device, bytes, 1);
    let acc = p.buffer("acc", Place::Device, bytes, 0);
    p.read_back(acc);
    let s = p.stream(StreamKind::NonBlocking);
    p.add(s, "acc += one", (one, acc), acc, 64, 256);
    let trials = lab().run(&p.build()).expect("the program runs");
    assert!(trials.timelines.len() >= 2, "needs two trials or more");
    for (i, t) in trials.timelines.iter().enumerate() {
        let c = t
            .contents
            .iter()
            .find(|c| c.buffer == acc)
            .expect("read back");
        assert!(c.all(1), "trial {i}: {c:?}");
        assert_eq!(c.elements, RACE_ELEMENTS, "trial {i}");
    }
}
