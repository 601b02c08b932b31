//! Measured values, typed by what they measure.
//!
//! A [`Measurement`](super::Measurement) keeps its number as `value_ns` (the results file's
//! field since the first schema), but only time checks measure nanoseconds: an address offset
//! is in bytes, a contents check counts elements, a memory check finds a memory kind. The
//! unit follows from the check ([`Check::unit`](super::Check::unit)), so a file cannot give one
//! that disagrees, and old files load unchanged; [`Value`] is the number with its unit, for
//! formatting and comparing.

use crate::measured::contents::MemoryKind;
use std::fmt;

/// What a check's number counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Nanoseconds: gaps, overlaps, leads, time saved.
    Time,
    /// Bytes: an address offset.
    Bytes,
    /// A count: elements that differ.
    Count,
    /// A memory kind, stored as [`MemoryKind::code`].
    Memory,
}

/// A measured number with its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// Nanoseconds.
    Time(i64),
    Bytes(i64),
    Count(i64),
    /// The memory kind found, `None` for a code no kind has.
    Memory(Option<MemoryKind>),
}

impl Value {
    /// The value a stored number means in `unit`.
    pub fn of(unit: Unit, raw: i64) -> Value {
        match unit {
            Unit::Time => Value::Time(raw),
            Unit::Bytes => Value::Bytes(raw),
            Unit::Count => Value::Count(raw),
            Unit::Memory => Value::Memory(MemoryKind::from_code(raw)),
        }
    }

    pub fn unit(self) -> Unit {
        match self {
            Value::Time(_) => Unit::Time,
            Value::Bytes(_) => Unit::Bytes,
            Value::Count(_) => Unit::Count,
            Value::Memory(_) => Unit::Memory,
        }
    }

    /// The time in ns, for a time.
    pub fn ns(self) -> Option<i64> {
        match self {
            Value::Time(ns) => Some(ns),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    /// "+1.20 µs", "+65536 B", "3", "device".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Time(ns) => f.write_str(&super::micros(*ns)),
            Value::Bytes(b) => write!(f, "{b:+} B"),
            Value::Count(n) => write!(f, "{n}"),
            Value::Memory(k) => f.write_str(k.map_or("unknown", |k| k.short_name())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Unit, Value};
    use crate::judge::relation::Check;
    use crate::measured::contents::MemoryKind;
    use crate::program::{BufferId, OpId};

    #[test]
    fn each_check_has_its_unit_and_formats_by_it() {
        let (a, b) = (OpId(0), OpId(1));
        let buffer = BufferId(0);
        let cases = [
            (
                Check::Precedes {
                    before: a,
                    after: b,
                },
                1_200,
                Unit::Time,
                "+1.20 µs",
            ),
            (
                Check::Reuses {
                    first: a,
                    second: b,
                },
                65_536,
                Unit::Bytes,
                "+65536 B",
            ),
            (Check::Contents { buffer, value: 3 }, 7, Unit::Count, "7"),
            (
                Check::MemoryIs {
                    buffer,
                    place: crate::program::Place::Device,
                },
                MemoryKind::Device.code(),
                Unit::Memory,
                "device",
            ),
        ];
        for (check, raw, unit, shown) in cases {
            assert_eq!(check.unit(), unit, "{check:?}");
            assert_eq!(check.value(raw).unit(), unit);
            assert_eq!(check.format_value(raw), shown);
        }
        assert_eq!(Value::of(Unit::Memory, 99), Value::Memory(None));
        assert_eq!(Value::Memory(None).to_string(), "unknown");
        assert_eq!(Value::Time(5).ns(), Some(5));
        assert_eq!(Value::Bytes(5).ns(), None);
    }
}
