//! Limits on what a user hands us (the reads that count them as they stream are in
//! `bounded_json.rs`).
//!
//! Everything a file or a command line gives the tool is checked against these before use (see
//! `record/check.rs` and the CLI's argument parsers), so that no later arithmetic can wrap, no
//! read can grow without end, and no run can be asked for by a slip of the keyboard. Each limit is
//! generous next to every real run, and each says why it is what it is.

/// The most decompressed bytes one claim of a results file may hold, and the rest of the file
/// (or one child request or reply, or one profiler trace): 2 GiB. Results files are read one claim
/// at a time (`record/reader.rs`), so this bounds memory, not the file: a run of the whole
/// catalogue at 1,000 trials is 6 GB of JSON, its largest claim (`scenario.sleep.grid`, 32,768
/// block stamps a trial) 4.7 GB. [`READ_LIMIT_ENV`] changes it; a run's summary says when one of
/// its claims needs more.
pub const MAX_READ_BYTES: u64 = 2 << 30;

/// What share of the read limit a claim's own text may take, besides its trials' timelines, and
/// the text around the claims: 1/32, 64 MiB of the default 2 GiB. That text is kept whole until
/// the claim closes (the timelines stream), so an unknown field of 1.9 GB inside a claim took
/// 1.9 GB and a minute. The largest claim the lab writes holds 205 KB of it
/// (`graph.launch_cost.1000`, a program of 1,000 ops); one at [`MAX_PROGRAM_OPS`] with
/// [`MAX_TRIALS`] trials' outcomes holds a few MB.
pub const KEPT_TEXT_SHARE: u64 = 32;

/// Environment variable that sets the read limit in MiB, for a claim larger than
/// [`MAX_READ_BYTES`] (thousands of trials of a program of thousands of blocks).
pub const READ_LIMIT_ENV: &str = "STREAM_LITMUS_READ_LIMIT_MIB";

/// The most events a profiler trace's `traceEvents` may hold at the default read limit: a 2 GiB
/// trace holds about ten million; six times that is no real trace.
pub const MAX_TRACE_EVENTS: u64 = 64 << 20;

/// The most events of `traceEvents` under the read limit in force: [`MAX_TRACE_EVENTS`], or one
/// per 32 bytes of a raised limit (a profiler's events are over a hundred bytes; JSON allows
/// shorter ones, which a file of nothing else would be refused for), so that a limit raised
/// for a larger trace reads it whole (issue 51: the docs' benchmark at 100×, 19.4 GiB, holds
/// 88 million).
pub fn max_trace_events() -> u64 {
    trace_events_under(read_limit())
}

fn trace_events_under(read_limit: u64) -> u64 {
    MAX_TRACE_EVENTS.max(read_limit / 32)
}

/// The most trials per claim a run may ask for, or a results file may record as wanted: enough
/// for litmus-style counts ("Sometimes 3/10000"). The study's runs use 5 to 20. A run holds one
/// claim's stamps at a time and writes each claim as it finishes, so memory grows with the
/// largest claim's trials, not the run's: `--trials 10000 --filter fifo.` holds a few MB.
pub const MAX_TRIALS: usize = 10_000;

/// Most trials one claim may take, as a multiple of the trials asked for: room to replace the
/// undecided trials a host hiccup or a neighbour's time slice causes, bounded so an undecidable
/// experiment ends. The lab's time budget (`lab/collect.rs`) usually ends it sooner; short claims
/// beside a busy neighbour use the room (it was 3 before the budget).
pub const MAX_TRIAL_FACTOR: usize = 6;

/// The most timelines one claim of a results file may hold: every trial the lab may run for the
/// most trials a run may want. Counted while the file is read, so a file of a million tiny
/// timelines is refused at the 6001st, not after all of them are built.
pub const MAX_TIMELINES: usize = MAX_TRIAL_FACTOR * MAX_TRIALS;

/// The most GPUs a program may use (device ordinals 0..64): an HGX board has 8, the largest
/// NVLink domains of one host 16. A device ordinal sizes per-device tables and loops, so a
/// file's `device: 4294967295` must end here, not in a 34 GB allocation.
pub const MAX_DEVICES: u32 = 64;

/// The most ops of one program: the catalogue's largest has 2003 (a 1000-node graph and its
/// 1000 launches one by one). The happens-before model holds (2 × ops)² bits per program, so
/// 8192 ops cost it 32 MiB, where a million would cost 500 GB.
pub const MAX_PROGRAM_OPS: usize = 8192;

/// The most streams, events or buffers of one program: the sweeps use 128 streams at most.
pub const MAX_PROGRAM_ITEMS: usize = 8192;

/// The longest string a results file or child message may hold: names, statements and the
/// kernels' PTX (about 100 KiB) are far shorter. Counted while reading, so a 1.8 GiB string
/// in a 2 MB gzip ends at 16 MiB.
pub const MAX_STRING_BYTES: u64 = 16 << 20;

/// The most items of one JSON array: a span of the largest grid ([`crate::MAX_GRID`], 2^20
/// blocks) holds that many stamps; twice that leaves room and still ends a crafted array long
/// before memory does.
pub const MAX_ARRAY_ITEMS: u64 = 2 << 20;

/// The longest run of blanks between two tokens: pretty-printed files indent by two spaces per
/// level (a few hundred bytes at most). A gzip of nothing but spaces ends here.
pub const MAX_BLANK_RUN: u64 = 1 << 20;

/// The most random programs one `fuzz` run may ask for.
pub const MAX_FUZZ_CASES: usize = 1_000_000;

/// The most streams the hardware-queue sweep may use: 4× the hardware queues CUDA exposes (32).
pub const MAX_SWEEP_STREAMS: usize = 128;

/// Every stamp and clock offset in a results file lies below this in magnitude (i64::MAX / 4,
/// about 73 years of nanoseconds), so that the sum or difference of any two, plus a tolerance,
/// fits in an i64.
pub const MAX_STAMP_NS: u64 = (i64::MAX / 4) as u64;

/// Every instant of one trial, placed on the `%globaltimer` axis, lies within this window (one
/// hour) of the trial's earliest one. A trial lasts milliseconds: a larger spread is a damaged
/// file, and would make every gap meaningless.
pub const TRIAL_WINDOW_NS: u64 = 3_600_000_000_000;

/// The largest tolerance (timer step, launch jitter, dependent gap, a clock's error bound) a file
/// may carry: one second, against measured values of tens of nanoseconds to a few microseconds.
pub const MAX_TOLERANCE_NS: u64 = 1_000_000_000;

/// Plausible `clock64` rates, in cycles per `%globaltimer` ns: GPUs clock between about 0.3 and
/// 3 GHz, so 0.05 to 20 leaves room for every GPU to come while refusing zero and units mixed up.
pub const CYCLES_PER_NS: std::ops::RangeInclusive<f64> = 0.05..=20.0;

/// What the reports of `judge`, `render` and `compare` may keep of all the claims of a results
/// file, re-judged (every trial's outcome, the first trials' stamps): 256 MiB. A run of the
/// catalogue at 1,000 trials keeps about 50 MB (77 claims × 1,000 trials × some 600 bytes, an
/// estimate); 200 claims of 60,000 empty trials (a gzip of 1.1 MB) took 14.7 GB before it was
/// counted. Apart from the read limit, which bounds one claim's text: a file may be far larger
/// than a claim and still fit.
pub const MAX_KEPT_BYTES: u64 = 256 << 20;

/// The variable that raises [`MAX_KEPT_BYTES`], in MiB.
pub const KEPT_LIMIT_ENV: &str = "STREAM_LITMUS_KEPT_MIB";

/// The kept limit in force: [`KEPT_LIMIT_ENV`] when it holds a positive number of MiB, else
/// [`MAX_KEPT_BYTES`].
pub fn kept_limit() -> u64 {
    positive_env(KEPT_LIMIT_ENV).map_or(MAX_KEPT_BYTES, |mib| mib.saturating_mul(1 << 20))
}

/// The variable that sets what one `check` run judges in all (`trace_claims::RunBudget`).
pub const RUN_WORK_ENV: &str = "STREAM_LITMUS_RUN_WORK";

/// The variables that hold a count: the limits above. A value that is not one is an error that
/// names the variable ([`check_env`]), never a silent default.
pub const COUNT_ENVS: [&str; 3] = [READ_LIMIT_ENV, KEPT_LIMIT_ENV, RUN_WORK_ENV];

/// The positive whole number `value` is: ASCII digits alone (no sign, unit, point or base), at
/// least 1.
pub fn positive_count(value: &str) -> Option<u64> {
    let v = value.trim();
    let digits = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
    digits
        .then(|| v.parse::<u64>().ok())
        .flatten()
        .filter(|&n| n > 0)
}

/// The positive whole number variable `name` holds, if it holds one; a value that is not one is
/// refused by [`check_env`] before any command reads it.
pub fn positive_env(name: &str) -> Option<u64> {
    positive_count(&std::env::var(name).ok()?)
}

/// Every count variable ([`COUNT_ENVS`]) that is set holds a positive whole number; else why not,
/// naming it (`STREAM_LITMUS_READ_LIMIT_MIB=1MiB`, `1.0`, `0x1`, `0`, `-1` were once taken for
/// the default without a word).
pub fn check_env() -> Result<(), super::error::EnvError> {
    for name in COUNT_ENVS {
        let Some(v) = std::env::var_os(name) else {
            continue;
        };
        let v = v.to_string_lossy();
        if positive_count(&v).is_none() {
            return Err(super::error::EnvError::NotACount {
                name,
                value: super::shown::one_line(&v.chars().take(64).collect::<String>()).into_owned(),
            });
        }
    }
    Ok(())
}

/// The read limit in force: [`READ_LIMIT_ENV`] when it holds a positive number of MiB, else
/// [`MAX_READ_BYTES`].
pub fn read_limit() -> u64 {
    positive_env(READ_LIMIT_ENV).map_or(MAX_READ_BYTES, |mib| mib.saturating_mul(1 << 20))
}

/// "2.0 GiB" or "64.0 MiB", for messages.
pub fn describe_bytes(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_under_the_cap_add_and_subtract_without_wrapping() {
        let m = MAX_STAMP_NS as i64;
        assert!(m.checked_add(m).and_then(|s| s.checked_add(m)).is_some());
        assert!((-m).checked_sub(m).and_then(|s| s.checked_sub(m)).is_some());
    }

    #[test]
    fn the_events_of_a_trace_grow_with_a_raised_read_limit_only() {
        assert_eq!(trace_events_under(MAX_READ_BYTES), MAX_TRACE_EVENTS);
        assert_eq!(trace_events_under(1 << 20), MAX_TRACE_EVENTS);
        // The 100x benchmark (19.4 GiB, 88 million events) under three times its size.
        assert!(trace_events_under((3 * 19_899) << 20) > 88_000_000);
    }
}
