//! The judge: from timelines to verdicts. Pure analysis, tested on the CPU with timelines recorded
//! on real GPUs.
//!
//! A [`claim`] is what is judged: a program, the checks to make of it, the expected verdict.
//! [`relation`] judges one check on one timeline with named tolerances (what the documented
//! semantics predict comes from [`crate::model`], one floor down); [`disturbance`] and [`slowdown`] set aside trials
//! that something outside the program spoiled; [`verdict`] counts the rest into a three-valued
//! verdict ("Always 5/5"), with [`counts`] as the tally both share.
//!
//! **May import:** `model`, `measured`, `program`, `border`. Never the GPU: a verdict is made the same way
//! from a fresh run and from a file recorded years ago.

pub mod claim;
pub mod counts;
pub mod disturbance;
pub mod relation;
pub mod slowdown;
pub mod verdict;
