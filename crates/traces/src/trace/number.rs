//! Numbers in a profiler trace's `args`, which profilers write as integers, floats or strings.

use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::fmt;

/// A number that may be written as an integer, a float or a string, or be something else
/// (then `None`): the profiler's `args` mix them.
#[derive(Default, Clone, Copy)]
pub(super) struct Num(pub(super) Option<i64>);

/// A finite number of any form, fractions kept (`"blocks per SM": 124.12`); anything else none.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Real(pub(super) Option<f64>);

/// What a value of `args` is, read once for both kinds of number: an integer kept exact.
enum Parsed {
    Int(i64),
    Float(f64),
    Other,
}

impl<'de> Deserialize<'de> for Parsed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Parsed, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Parsed;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E>(self, v: i64) -> Result<Parsed, E> {
                Ok(Parsed::Int(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Parsed, E> {
                Ok(i64::try_from(v).map_or(Parsed::Float(v as f64), Parsed::Int))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Parsed, E> {
                Ok(if v.is_finite() {
                    Parsed::Float(v)
                } else {
                    Parsed::Other
                })
            }
            fn visit_str<E>(self, _: &str) -> Result<Parsed, E> {
                Ok(Parsed::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Parsed, E> {
                Ok(Parsed::Other)
            }
            fn visit_unit<E>(self) -> Result<Parsed, E> {
                Ok(Parsed::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Parsed, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Parsed::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Parsed, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Parsed::Other)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        Ok(Num(match Parsed::deserialize(d)? {
            Parsed::Int(v) => Some(v),
            // A whole float (a number written "12.0") within the exact range of an f64.
            Parsed::Float(v) => (v.fract() == 0.0 && v.abs() < 9e15).then_some(v as i64),
            Parsed::Other => None,
        }))
    }
}

impl<'de> Deserialize<'de> for Real {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Real, D::Error> {
        Ok(Real(match Parsed::deserialize(d)? {
            Parsed::Int(v) => Some(v as f64),
            Parsed::Float(v) => Some(v),
            Parsed::Other => None,
        }))
    }
}

/// A number of µs from a trace, for a message: as written where it is of a sensible size, else
/// with an exponent (a duration of 1e300 printed 301 digits).
pub(super) fn shown_us(v: f64) -> String {
    match v.is_finite() && v.abs() < 1e12 {
        true => format!("{v}"),
        false => format!("{v:e}"),
    }
}
