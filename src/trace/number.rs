//! Numbers in a profiler trace's `args`, which profilers write as integers, floats or strings.

use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::fmt;

/// A number that may be written as an integer, a float or a string, or be something else
/// (then `None`): the profiler's `args` mix them.
#[derive(Default, Clone, Copy)]
pub(super) struct Num(pub(super) Option<i64>);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E>(self, v: i64) -> Result<Num, E> {
                Ok(Num(Some(v)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Num, E> {
                Ok(Num(i64::try_from(v).ok()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Num, E> {
                Ok(Num(
                    (v.is_finite() && v.fract() == 0.0 && v.abs() < 9e15).then_some(v as i64)
                ))
            }
            fn visit_str<E>(self, _: &str) -> Result<Num, E> {
                Ok(Num(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Num, E> {
                Ok(Num(None))
            }
            fn visit_unit<E>(self) -> Result<Num, E> {
                Ok(Num(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Num, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Num(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Num, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Num(None))
            }
        }
        d.deserialize_any(V)
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
