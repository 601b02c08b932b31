//! Buffers: the memory copies and data kernels work on, declared with the program.
//!
//! A buffer is plain data like everything else in a program: a size, a place (device memory,
//! page-locked host memory, or ordinary pageable host memory) and the value every element holds
//! when a trial starts. The executor allocates every buffer before the first trial and refills
//! it before each trial, outside the timed region, so a copy's time is the copy's alone. Elements
//! are `f32`; the experiments use small whole numbers, which `f32` adds exactly, so a result
//! is either exactly right or visibly wrong.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Index of a buffer in [`crate::Program::buffers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BufferId(pub usize);

/// Where a buffer lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    /// `cuMemAlloc`: device memory.
    Device,
    /// `cuMemHostAlloc`: page-locked host memory the copy engines reach directly.
    Pinned,
    /// An ordinary host allocation (in the lab, an anonymous mapping with its pages present):
    /// pageable, so the driver stages copies through page-locked buffers of its own.
    Pageable,
}

impl Place {
    pub fn is_host(self) -> bool {
        !matches!(self, Place::Device)
    }

    pub fn name(self) -> &'static str {
        match self {
            Place::Device => "device",
            Place::Pinned => "pinned",
            Place::Pageable => "pageable",
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A buffer the program uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Buffer {
    pub label: String,
    pub bytes: u64,
    pub place: Place,
    /// The value of every element when a trial starts (a whole number, stored as `f32`).
    pub fill: i32,
    /// Whether the trial reads the buffer back afterwards, for checks on its contents.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_back: bool,
    /// The device a [`Place::Device`] buffer is allocated on (0 unless the program runs on
    /// several GPUs); a copy between device buffers of two devices is a peer copy. Host buffers
    /// belong to no device and keep 0.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub device: u32,
}

impl Buffer {
    /// Elements of `f32`.
    pub fn elements(&self) -> u64 {
        self.bytes / 4
    }
}

/// The direction of a copy: in a lab program from its two buffers' places, in a trace from the
/// profiler's name for it (`trace::GpuKind::of`). One type for both, so a claim on a trace and
/// a lab program speak of the same directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CopyDir {
    H2D,
    D2H,
    D2D,
    /// Host to host: legal for the driver, never useful here; validation rejects it.
    H2H,
    /// Between two devices' memory ("PtoP" in a trace). A lab program's buffers are on one
    /// device, so [`CopyDir::of`] never gives it.
    P2P,
}

impl CopyDir {
    pub fn of(src: Place, dst: Place) -> CopyDir {
        match (src.is_host(), dst.is_host()) {
            (true, false) => CopyDir::H2D,
            (false, true) => CopyDir::D2H,
            (false, false) => CopyDir::D2D,
            (true, true) => CopyDir::H2H,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CopyDir::H2D => "H2D",
            CopyDir::D2H => "D2H",
            CopyDir::D2D => "D2D",
            CopyDir::H2H => "H2H",
            CopyDir::P2P => "P2P",
        }
    }
}

impl fmt::Display for CopyDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
