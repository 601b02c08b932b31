//! Durations and sizes with units, read and written exactly.
//!
//! A claim file must say `50us`, never a bare `50`: a unit mixed up is the likeliest mistake in
//! a timing experiment, and the program limits (`MAX_SPIN_NS`) exist to catch it. Values are
//! converted with integer arithmetic, so `12.5us` is exactly 12 500 ns, and the printer writes
//! each value in the largest unit that keeps it exact, so printing and parsing round-trip.

/// Duration units and their length in nanoseconds.
pub(super) const DURATIONS: [(&str, u64); 6] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
];

/// Size units and their length in bytes (the printer's: `program::text`).
pub(super) use crate::program::text::SIZES;
pub(super) use crate::program::text::{format_duration, format_size};

/// The unit of a duration relative to the run's spin length (`--spin-us`, 50 µs by default):
/// `0.25spin` is a quarter of it, so a claim written in it scales with `--spin-us` (the
/// catalogue's claims are). The value is rounded down to whole nanoseconds.
pub(super) const SPIN: &str = "spin";

/// Why a number and unit do not make a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum UnitError {
    Missing,
    Unknown,
    /// More decimals than the smallest unit has (`1.5ns`, `0.3B`).
    Inexact,
    Overflow,
}

/// `number` (digits, optionally `.digits`) times the unit's scale, exactly.
pub(super) fn scaled(
    number: &str,
    unit: Option<&str>,
    units: &[(&str, u64)],
) -> Result<u64, UnitError> {
    let unit = unit.ok_or(UnitError::Missing)?;
    let scale = units
        .iter()
        .find(|(u, _)| *u == unit)
        .map(|(_, s)| *s)
        .ok_or(UnitError::Unknown)?;
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    let whole: u128 = whole.parse().map_err(|_| UnitError::Overflow)?;
    let frac_digits = frac.trim_end_matches('0');
    if frac_digits.len() > 18 {
        return Err(UnitError::Inexact);
    }
    let frac_value: u128 = if frac_digits.is_empty() {
        0
    } else {
        frac_digits.parse().map_err(|_| UnitError::Overflow)?
    };
    let denominator = 10u128.pow(frac_digits.len() as u32);
    let frac_scaled = frac_value * scale as u128;
    if frac_scaled % denominator != 0 {
        return Err(UnitError::Inexact);
    }
    let total = whole
        .checked_mul(scale as u128)
        .and_then(|w| w.checked_add(frac_scaled / denominator))
        .ok_or(UnitError::Overflow)?;
    u64::try_from(total).map_err(|_| UnitError::Overflow)
}

/// `number` spin lengths of `spin_ns` nanoseconds each, rounded down to whole nanoseconds:
/// `0.25` of 50 µs is 12 500 ns. Exact for up to 9 decimals (more are [`UnitError::Inexact`]).
pub(super) fn spins(number: &str, spin_ns: u64) -> Result<u64, UnitError> {
    const BILLION: u64 = 1_000_000_000;
    let billionths = scaled(number, Some(SPIN), &[(SPIN, BILLION)])?;
    let ns = u128::from(billionths) * u128::from(spin_ns) / u128::from(BILLION);
    u64::try_from(ns).map_err(|_| UnitError::Overflow)
}

pub(super) fn names(units: &[(&str, u64)]) -> String {
    units.iter().map(|(u, _)| *u).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_trip_exactly() {
        for ns in [
            1,
            250,
            1_000,
            1_750,
            12_500,
            81_250,
            50_000,
            1_500_000,
            1_000_000_000,
            1_234_567,
            u64::MAX,
        ] {
            let text = format_duration(ns);
            let split = text.find(|c: char| c.is_alphabetic()).unwrap();
            let (number, unit) = text.split_at(split);
            assert_eq!(scaled(number, Some(unit), &DURATIONS), Ok(ns), "{text}");
        }
        assert_eq!(format_duration(12_500), "12.5us");
    }

    #[test]
    fn sizes_round_trip_exactly() {
        for b in [1, 4, 1024, 4096, 1 << 20, 3 << 19, (1 << 20) + 4, 1 << 30] {
            let text = format_size(b);
            let split = text.find(|c: char| c.is_alphabetic()).unwrap();
            let (number, unit) = text.split_at(split);
            assert_eq!(scaled(number, Some(unit), &SIZES), Ok(b), "{text}");
        }
    }

    #[test]
    fn spins_scale_the_spin_length_and_round_down() {
        assert_eq!(spins("1", 50_000), Ok(50_000));
        assert_eq!(spins("0.25", 50_000), Ok(12_500));
        assert_eq!(spins("1.625", 1_000), Ok(1_625));
        assert_eq!(spins("0.04", 1_000), Ok(40));
        // 13/8 of 1 001 ns is 1 626.625 ns: rounded down, as `Duration * 13 / 8` is.
        assert_eq!(spins("1.625", 1_001), Ok(1_626));
        assert_eq!(spins("120", 8_000_000), Ok(960_000_000));
        assert_eq!(spins("0.0000000001", 50_000), Err(UnitError::Inexact));
        assert_eq!(
            spins("99999999999999999999", 50_000),
            Err(UnitError::Overflow)
        );
    }

    #[test]
    fn units_are_required_and_exact() {
        assert_eq!(scaled("50", None, &DURATIONS), Err(UnitError::Missing));
        assert_eq!(
            scaled("50", Some("sec"), &DURATIONS),
            Err(UnitError::Unknown)
        );
        assert_eq!(
            scaled("1.5", Some("ns"), &DURATIONS),
            Err(UnitError::Inexact)
        );
        assert_eq!(scaled("1.5", Some("ms"), &DURATIONS), Ok(1_500_000));
        assert_eq!(
            scaled("99999999999999999999999", Some("s"), &DURATIONS),
            Err(UnitError::Overflow)
        );
    }
}
