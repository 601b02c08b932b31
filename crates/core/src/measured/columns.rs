//! How a span's block stamps are written: in columns, each time relative to the span.
//!
//! Block stamps are nearly all of a results file: `scenario.sleep.grid` stamps 32,768 blocks a
//! trial. Written as objects (`{"start_ns":1764182400123456789,"end_ns":…,"sm":131,
//! "cycles":39600}`), a stamp took about 85 bytes, and a run of the catalogue at 1,000 trials
//! was 6.3 GB of JSON, 4.7 GB of it that one claim, more than a claim may hold when read back
//! (`MAX_READ_BYTES`), and 96 s of compressing beside the run. In columns, with each start
//! counted from the span's earliest and each end from its own start, a stamp takes about 20
//! bytes, and compresses better:
//!
//! ```json
//! {"base_ns": 1764182400123456789, "start": [0, 31, 64], "length": [20011, 19987, 20003],
//!  "sm": [0, 2, 4], "cycles": [39600, 39571, 39588], "paused": [[1, 3211, 2048]]}
//! ```
//!
//! `paused` lists the blocks that paused (block index, the pause's `%globaltimer` counted from
//! the block's start, its length), and is left out where none did. Results schema 3 writes it so;
//! schema 2 wrote `pauses` with the pause's `%globaltimer` whole, 19 digits that made a third of
//! `scenario.sleep.grid`'s text (six in ten of its blocks pause); such files read as before, as
//! do files with stamps as objects (schema 1). Nothing is lost: lengths and pause offsets are
//! signed, so a stamp whose end precedes its start reads back as it was (and is refused by the
//! checks, `record/check.rs`, as before).

use crate::measured::blocks::{BlockStamp, Blocks, Packer, Pause};
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Serialize, Deserialize)]
struct Columns {
    base_ns: u64,
    start: Vec<u64>,
    length: Vec<i64>,
    sm: Vec<u32>,
    cycles: Vec<u64>,
    /// Schema 2: (block, `%globaltimer` at the pause, length).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pauses: Vec<(usize, u64, u64)>,
    /// Schema 3: (block, the pause from the block's start, length).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    paused: Vec<(usize, i64, u64)>,
}

/// `to - from`, where it fits 64 signed bits (it always does for stamps of one span).
fn signed(from: u64, to: u64) -> i64 {
    (i128::from(to) - i128::from(from)) as i64
}

pub fn serialize<S: Serializer>(blocks: &Blocks, s: S) -> Result<S::Ok, S::Error> {
    let base_ns = blocks.first_ns();
    let columns = Columns {
        base_ns,
        start: blocks.iter().map(|b| b.start_ns - base_ns).collect(),
        length: blocks
            .iter()
            .map(|b| signed(b.start_ns, b.end_ns))
            .collect(),
        sm: blocks.iter().map(|b| b.sm).collect(),
        cycles: blocks.iter().map(|b| b.cycles).collect(),
        pauses: Vec::new(),
        paused: (blocks.iter().enumerate())
            .filter_map(|(i, b)| b.pause.map(|p| (i, signed(b.start_ns, p.at_ns), p.ns)))
            .collect(),
    };
    columns.serialize(s)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Blocks, D::Error> {
    struct Either;
    impl<'de> Visitor<'de> for Either {
        type Value = Blocks;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("block stamps: a list of stamps, or their columns")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut packer = Packer::default();
            while let Some(b) = seq.next_element::<BlockStamp>()? {
                packer.push(b);
            }
            Ok(packer.finish())
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            let c = Columns::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
            from_columns(c).map_err(serde::de::Error::custom)
        }
    }
    d.deserialize_any(Either)
}

/// Why block columns do not make blocks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ColumnsError {
    #[error("block columns of different lengths (start {start}, length {length}, sm {sm}, cycles {cycles})")]
    Lengths {
        start: usize,
        length: usize,
        sm: usize,
        cycles: usize,
    },
    /// Block `0`'s start or end, from the base and its columns, is not a clock value.
    #[error("block {0}: its start or end lies outside the clock's range")]
    OutOfRange(usize),
    /// Block `0`'s pause, from its start, is not a clock value.
    #[error("block {0}: its pause lies outside the clock's range")]
    PauseOutOfRange(usize),
    #[error("a pause names block {block} of {of}")]
    NoSuchBlock { block: usize, of: usize },
}

/// The blocks of `c`, packed as they are made (a million blocks never sit in memory as
/// [`BlockStamp`]s). Every block is checked first, then every pause in the file's order
/// (`pauses`, then `paused`), so that a damaged file is told what it was told when the blocks
/// were built whole; where two pauses name one block, the later stands.
fn from_columns(c: Columns) -> Result<Blocks, ColumnsError> {
    let n = c.start.len();
    if [c.length.len(), c.sm.len(), c.cycles.len()] != [n; 3] {
        return Err(ColumnsError::Lengths {
            start: n,
            length: c.length.len(),
            sm: c.sm.len(),
            cycles: c.cycles.len(),
        });
    }
    let span = |i: usize| -> Result<(u64, u64), ColumnsError> {
        let start_ns = c.base_ns.checked_add(c.start[i]);
        let end_ns =
            start_ns.and_then(|s| u64::try_from(i128::from(s) + i128::from(c.length[i])).ok());
        match (start_ns, end_ns) {
            (Some(start_ns), Some(end_ns)) => Ok((start_ns, end_ns)),
            _ => Err(ColumnsError::OutOfRange(i)),
        }
    };
    for i in 0..n {
        span(i)?;
    }
    let mut named = Vec::with_capacity(c.pauses.len() + c.paused.len());
    for (i, at_ns, ns) in c.pauses.iter().copied() {
        if i >= n {
            return Err(ColumnsError::NoSuchBlock { block: i, of: n });
        }
        named.push((i, Pause { at_ns, ns }));
    }
    for (i, from_start, ns) in c.paused.iter().copied() {
        if i >= n {
            return Err(ColumnsError::NoSuchBlock { block: i, of: n });
        }
        let Ok(at_ns) = u64::try_from(i128::from(span(i)?.0) + i128::from(from_start)) else {
            return Err(ColumnsError::PauseOutOfRange(i));
        };
        named.push((i, Pause { at_ns, ns }));
    }
    // Stable: the pauses of one block stay in the file's order.
    named.sort_by_key(|(i, _)| *i);
    let mut named = named.into_iter().peekable();
    let mut packer = Packer::default();
    for i in 0..n {
        let (start_ns, end_ns) = span(i)?;
        let mut pause = None;
        while let Some((_, p)) = named.next_if(|(j, _)| *j == i) {
            pause = Some(p);
        }
        packer.push(BlockStamp {
            start_ns,
            end_ns,
            sm: c.sm[i],
            cycles: c.cycles[i],
            pause,
        });
    }
    Ok(packer.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct S {
        #[serde(with = "super")]
        blocks: Blocks,
    }

    fn stamp(start_ns: u64, end_ns: u64, pause: Option<Pause>) -> BlockStamp {
        BlockStamp {
            start_ns,
            end_ns,
            sm: 7,
            cycles: 99,
            pause,
        }
    }

    #[test]
    fn columns_read_back_exactly_and_objects_still_read() {
        let pause = Pause {
            at_ns: 1_000_500,
            ns: 2_000,
        };
        let s = S {
            blocks: Blocks::from(vec![
                stamp(1_000_300, 1_020_000, None),
                stamp(1_000_000, 1_020_100, Some(pause)),
                // An end before its start reads back as it was (the checks refuse it later).
                stamp(u64::MAX - 5, u64::MAX - 9, None),
            ]),
        };
        let text = serde_json::to_string(&s).unwrap();
        assert!(
            text.contains(r#""base_ns":1000000,"start":[300,0,"#),
            "{text}"
        );
        assert!(text.contains(r#""paused":[[1,500,2000]]"#), "{text}");
        assert_eq!(serde_json::from_str::<S>(&text).unwrap(), s);
        // Schema 2 wrote each pause's `%globaltimer` whole.
        let schema2 = text.replace(
            r#""paused":[[1,500,2000]]"#,
            r#""pauses":[[1,1000500,2000]]"#,
        );
        assert_eq!(serde_json::from_str::<S>(&schema2).unwrap(), s);
        let objects = r#"{"blocks":[{"start_ns":5,"end_ns":9,"sm":1,"cycles":2}]}"#;
        assert_eq!(
            serde_json::from_str::<S>(objects).unwrap().blocks.to_vec(),
            [BlockStamp {
                start_ns: 5,
                end_ns: 9,
                sm: 1,
                cycles: 2,
                pause: None
            }]
        );
        assert_eq!(
            serde_json::from_str::<S>(r#"{"blocks":[]}"#)
                .unwrap()
                .blocks
                .to_vec(),
            []
        );
    }

    #[test]
    fn damaged_columns_are_refused_with_a_reason() {
        for (text, why) in [
            (
                r#"{"blocks":{"base_ns":0,"start":[1],"length":[],"sm":[1],"cycles":[1]}}"#,
                "different lengths",
            ),
            (
                r#"{"blocks":{"base_ns":18446744073709551615,"start":[1],"length":[1],"sm":[1],"cycles":[1]}}"#,
                "outside the clock's range",
            ),
            (
                r#"{"blocks":{"base_ns":0,"start":[1],"length":[1],"sm":[1],"cycles":[1],"pauses":[[3,0,5]]}}"#,
                "names block 3 of 1",
            ),
            (
                r#"{"blocks":{"base_ns":0,"start":[1],"length":[1],"sm":[1],"cycles":[1],"paused":[[0,-2,5]]}}"#,
                "its pause lies outside the clock's range",
            ),
        ] {
            let err = serde_json::from_str::<S>(text).unwrap_err().to_string();
            assert!(err.contains(why), "{text}: {err}");
        }
    }
}
