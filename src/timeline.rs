//! Timelines: what one trial of a program did, rebuilt from the stamps.
//!
//! Every stamped op becomes a [`Span`] holding the raw per-block stamps (start and end from
//! `%globaltimer`, the SM, the cycles spun); its start is the earliest block start, its end the
//! latest block end. Host-side API calls keep their host-clock interval in [`HostCall`], so
//! later analysis can say how long a call blocked the host. Nothing here touches the driver:
//! timelines are recorded on the GPU, written as JSON, and judged anywhere.

use crate::program::OpId;
use serde::{Deserialize, Serialize};

/// One block's stamps. Times are `%globaltimer` nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockStamp {
    pub start_ns: u64,
    pub end_ns: u64,
    pub sm: u32,
    pub cycles: u64,
}

/// The device-side life of one op.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub op: OpId,
    pub blocks: Vec<BlockStamp>,
}

impl Span {
    /// A span of one block, for hand-made timelines in tests and examples.
    pub fn single(op: OpId, start_ns: u64, end_ns: u64) -> Span {
        Span {
            op,
            blocks: vec![BlockStamp {
                start_ns,
                end_ns,
                sm: 0,
                cycles: 0,
            }],
        }
    }

    /// Earliest block start.
    pub fn start(&self) -> u64 {
        self.blocks.iter().map(|b| b.start_ns).min().unwrap_or(0)
    }

    /// Latest block end.
    pub fn end(&self) -> u64 {
        self.blocks.iter().map(|b| b.end_ns).max().unwrap_or(0)
    }

    pub fn duration_ns(&self) -> u64 {
        self.end().saturating_sub(self.start())
    }

    /// The SMs the blocks ran on, sorted, without repeats.
    pub fn sms(&self) -> Vec<u32> {
        let mut sms: Vec<u32> = self.blocks.iter().map(|b| b.sm).collect();
        sms.sort_unstable();
        sms.dedup();
        sms
    }
}

/// How long one host-side call took, in host-clock nanoseconds since the trial's first issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCall {
    pub op: OpId,
    pub begin_ns: u64,
    pub end_ns: u64,
}

/// A value an op read on the host, such as an event's elapsed time, in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reading {
    pub op: OpId,
    pub value_ns: i64,
}

/// One trial: a span per stamped op and a host interval per op.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    /// Sorted by op id.
    pub spans: Vec<Span>,
    /// Sorted by op id: every op, stamped or not, in issue order.
    pub host_calls: Vec<HostCall>,
    /// Values read by host-side ops ([`crate::OpKind::Elapsed`]), by op id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readings: Vec<Reading>,
}

impl Timeline {
    pub fn new(mut spans: Vec<Span>, mut host_calls: Vec<HostCall>) -> Timeline {
        spans.sort_by_key(|s| s.op);
        host_calls.sort_by_key(|c| c.op);
        Timeline {
            spans,
            host_calls,
            readings: Vec::new(),
        }
    }

    /// The same timeline with the values host ops read.
    pub fn with_readings(mut self, readings: Vec<Reading>) -> Timeline {
        self.readings = readings;
        self
    }

    /// The value `op` read, if it read one.
    pub fn reading(&self, op: OpId) -> Option<i64> {
        self.readings
            .iter()
            .find(|r| r.op == op)
            .map(|r| r.value_ns)
    }

    pub fn span(&self, op: OpId) -> Option<&Span> {
        self.spans
            .binary_search_by_key(&op, |s| s.op)
            .ok()
            .map(|i| &self.spans[i])
    }

    /// When the host call that issued `op` returned, in host-clock ns since the trial's start:
    /// by then the op was in its stream.
    pub fn issued_ns(&self, op: OpId) -> Option<u64> {
        self.host_calls
            .binary_search_by_key(&op, |c| c.op)
            .ok()
            .map(|i| self.host_calls[i].end_ns)
    }

    /// The trial's host-to-GPU offset: the smallest `start - issued` of any stamped op, in ns.
    ///
    /// The first op a trial issues waits for nothing, so this is (to within the launch jitter)
    /// the offset between the host clock plus launch latency and `%globaltimer`. Adding it to an
    /// op's issue time gives the earliest moment the op could have started on the GPU.
    pub fn issue_offset_ns(&self) -> Option<i64> {
        self.spans
            .iter()
            .filter_map(|s| Some(s.start() as i64 - self.issued_ns(s.op)? as i64))
            .min()
    }

    /// When `op` could have started at the earliest, in `%globaltimer` ns: its issue time plus
    /// the trial's offset. An op that depends on nothing starts within the launch jitter of it.
    pub fn ready_ns(&self, op: OpId) -> Option<i64> {
        Some(self.issued_ns(op)? as i64 + self.issue_offset_ns()?)
    }

    /// The earliest start of any span: subtract it to print times relative to the trial.
    pub fn origin_ns(&self) -> u64 {
        self.spans.iter().map(Span::start).min().unwrap_or(0)
    }

    /// From the first start to the last end, in nanoseconds.
    pub fn makespan_ns(&self) -> u64 {
        let end = self.spans.iter().map(Span::end).max().unwrap_or(0);
        end.saturating_sub(self.origin_ns())
    }
}
