//! What the host side of a trial recorded, beside the stamps of [`super::timeline`]: each
//! call's interval ([`HostCall`]), host functions' runs ([`HostSpan`]), values ops read
//! ([`Reading`]), where the host's CPU ran slow ([`HostSlow`], [`IssuerPace`]), and how the host
//! clock maps to `%globaltimer` ([`ClockSync`], [`DeviceClock`]). All in host-clock nanoseconds
//! since the trial's first issue.

use crate::program::OpId;
use serde::{Deserialize, Serialize};

/// How long one host-side call took, in host-clock nanoseconds since the trial's first issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCall {
    pub op: OpId,
    pub begin_ns: u64,
    pub end_ns: u64,
}

/// A unit of the pace's fixed CPU work that takes more than this many times the fastest unit
/// seen ran slow (on either thread). Twice the fastest is well clear of an idle core's spread
/// (the median unit is within 10–15 % of the fastest on the H100 VMs) and well below the tenfold
/// slowdowns that turned verdicts.
pub const SLOW_FACTOR: u64 = 2;

/// A stretch in which the host's CPU ran slow, as the pace thread saw it
/// ([`crate::gpu`]'s `pace.rs`): consecutive units of fixed CPU work that each took over
/// twice the fastest unit, in host-clock ns since the trial's first issue. `stolen_ns` sums what
/// each unit took beyond the fastest: the CPU time the host lost in the stretch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostSlow {
    pub begin_ns: u64,
    pub end_ns: u64,
    pub stolen_ns: u64,
}

/// The issuing thread's own pace around a trial: one unit of the pace thread's fixed CPU work
/// timed on the issuing thread right before the first issue and right after the last, and the
/// fastest unit seen (see `crate::judge::slowdown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuerPace {
    pub before_ns: u64,
    pub after_ns: u64,
    pub fastest_ns: u64,
}

/// A value an op read on the host, such as an event's elapsed time, in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reading {
    pub op: OpId,
    pub value_ns: i64,
}

/// A host function's run, in host-clock nanoseconds since the trial's first issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostSpan {
    pub op: OpId,
    pub begin_ns: u64,
    pub end_ns: u64,
}

/// How the trial's host clock maps to `%globaltimer`: `gpu = host + offset_ns`, within
/// `±error_ns`. Measured by ping-pong through mapped host memory just before the trial: the
/// error bound is half the shortest round trip (see `gpu/clock.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockSync {
    pub offset_ns: i64,
    pub error_ns: u64,
    /// The host and GPU times share one clock, whatever the error (a profiler trace: CUPTI puts
    /// GPU times on the host's clock, within the trace's clock error). Such a sync places ready
    /// times however large its error: there is no other clock to fall back on, and inventing
    /// one from the trial's own ops (the shortest start − issue) would move every call by the
    /// queueing of those ops. A lab trial's sync of large error does not place them (see
    /// `judge::relation::ready`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
}

/// One device's clock in a program on several GPUs: `%globaltimer` of `device` = host +
/// `offset_ns` (host ns since the trial's first issue), within `±error_ns`, measured by the same
/// ping-pong as [`ClockSync`], each device through its own mapped mailbox, right before the
/// trial. Spans of device `d` are moved onto device 0's axis by `offset(0) − offset(d)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceClock {
    pub device: u32,
    pub offset_ns: i64,
    pub error_ns: u64,
}

impl ClockSync {
    /// A host-clock instant (ns since the trial's first issue) in `%globaltimer` ns.
    pub fn to_gpu(&self, host_ns: u64) -> i64 {
        host_ns as i64 + self.offset_ns
    }
}
