//! Limits on what a user hands us, and the bounded read that enforces the size limit.
//!
//! Everything a file or a command line gives the tool is checked against these before use (see
//! `record_check.rs` and the CLI's argument parsers), so that no later arithmetic can wrap, no
//! read can grow without end, and no run can be asked for by a slip of the keyboard. Each limit is
//! generous next to every real run, and each says why it is what it is.

use std::io::Read;

/// The most decompressed bytes one results file (or one child request or reply) may hold:
/// 2 GiB. A run of the whole catalogue, raw stamps of 4096-block kernels included, is about 25 MB
/// of JSON, so this is 80× the largest real file, while a file of zeros, a device or a gzip
/// bomb ends with a message instead of filling memory. [`READ_LIMIT_ENV`] changes it.
pub const MAX_READ_BYTES: u64 = 2 << 30;

/// Environment variable that sets the read limit in MiB, for a real file larger than
/// [`MAX_READ_BYTES`] (a run of thousands of trials).
pub const READ_LIMIT_ENV: &str = "STREAM_LITMUS_READ_LIMIT_MIB";

/// The most trials per claim a run may ask for, or a results file may record as wanted. The
/// study's runs use 5 to 20; a whole-catalogue run writes about 5 MB of stamps per trial, so a
/// thousand trials already make a file near the read limit.
pub const MAX_TRIALS: usize = 1000;

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

/// The read limit in force: [`READ_LIMIT_ENV`] when it holds a positive number of MiB, else
/// [`MAX_READ_BYTES`].
pub fn read_limit() -> u64 {
    std::env::var(READ_LIMIT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&mib| mib > 0)
        .map_or(MAX_READ_BYTES, |mib| mib.saturating_mul(1 << 20))
}

/// "2.0 GiB" or "64.0 MiB", for messages.
pub fn describe_bytes(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    }
}

/// Reads all of `reader` that is JSON text of one object, up to `limit` bytes; the message says
/// what was wrong. A source that does not start with `{` is refused after its first bytes (so
/// `/dev/zero` ends at once), and one longer than `limit` when the limit is reached.
pub fn read_json_bounded(reader: impl Read, limit: u64) -> Result<Vec<u8>, String> {
    const HEAD: u64 = 64 * 1024;
    let mut taken = reader.take(limit.saturating_add(1));
    let mut buf = Vec::new();
    (&mut taken)
        .take(HEAD)
        .read_to_end(&mut buf)
        .map_err(|e| e.to_string())?;
    match buf.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => {}
        None if (buf.len() as u64) < HEAD => {} // empty or blank: serde says so
        _ => return Err("it does not start with a JSON object ('{')".into()),
    }
    taken.read_to_end(&mut buf).map_err(|e| e.to_string())?;
    if buf.len() as u64 > limit {
        return Err(format!(
            "larger than the {} read limit (after decompression), far beyond any real run; if \
             it is real, raise the limit with {READ_LIMIT_ENV}=<MiB>",
            describe_bytes(limit)
        ));
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_that_is_not_json_ends_at_its_first_bytes() {
        let zeros = std::io::repeat(0).take(1 << 40);
        let err = read_json_bounded(zeros, MAX_READ_BYTES).unwrap_err();
        assert!(err.contains("does not start with a JSON object"), "{err}");
    }

    #[test]
    fn a_source_over_the_limit_is_refused_with_the_limit() {
        let long = b"{".chain(std::io::repeat(b' ').take(3 << 20));
        let err = read_json_bounded(long, 2 << 20).unwrap_err();
        assert!(err.contains("2.0 MiB read limit"), "{err}");
        let fits = read_json_bounded(&b"{ }"[..], 3).unwrap();
        assert_eq!(fits, b"{ }");
    }

    #[test]
    fn stamps_under_the_cap_add_and_subtract_without_wrapping() {
        let m = MAX_STAMP_NS as i64;
        assert!(m.checked_add(m).and_then(|s| s.checked_add(m)).is_some());
        assert!((-m).checked_sub(m).and_then(|s| s.checked_sub(m)).is_some());
    }
}
