//! # stream-litmus-gpu
//!
//! stream-litmus on the GPU: `gpu`, the only user of cudarc (context, stamp kernels, clocks,
//! the executor, CUPTI, NVML, several GPUs and NCCL), and `lab`, which runs claims' programs
//! trial by trial and collects their timelines, in this process or a child.
//!
//! The `stream-litmus` crate re-exports what users need; use that one. The core's layers are
//! named here as they are in the core (`crate::program`, …), so the code reads the same in every
//! crate.

pub use stream_litmus_core::{border, judge, measured, model, program, record};

pub mod gpu;
pub mod lab;
