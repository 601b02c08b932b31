//! Timelines: what one trial of a program did, rebuilt from the stamps.
//!
//! Every stamped op becomes a [`Span`] holding the raw per-block stamps (start and end from
//! `%globaltimer`, the SM, the cycles spun); its start is the earliest block start, its end the
//! latest block end. Host-side API calls keep their host-clock interval in [`HostCall`], so
//! later analysis can say how long a call blocked the host. Nothing here touches the driver:
//! timelines are recorded on the GPU, written as JSON, and judged anywhere.
//!
//! Host functions run on a driver thread and leave a [`HostSpan`] in host-clock time. A trial
//! that has host-side work also carries a [`ClockSync`]: the offset from the host clock to
//! `%globaltimer`, measured just before the trial, with its error bound. With it a host span or
//! a host call's return can be placed among the stamps; [`Timeline::interval`] does so, and
//! carries the error bound along so every comparison can widen its tolerance by it.

pub use crate::measured::blocks::{BlockStamp, Blocks, Pause, PAUSE_FLOOR_NS};
use crate::measured::contents::Contents;
pub use crate::measured::host_side::{
    ClockSync, DeviceClock, HostCall, HostSlow, HostSpan, IssuerPace, Reading, SLOW_FACTOR,
};
use crate::measured::witness::{WitnessSpan, WitnessSync};
use crate::program::{BufferId, OpId};
use serde::{Deserialize, Serialize};

/// The device-side life of one op.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub op: OpId,
    /// Written in columns (`columns.rs`); files that list them as objects read too.
    #[serde(with = "crate::measured::columns")]
    pub blocks: Blocks,
    /// The device that ran the op, in programs on several GPUs. The stamps of a device other
    /// than 0 are stored moved onto device 0's `%globaltimer` axis (through both devices'
    /// clock alignments, [`Timeline::devices`]), so every relation compares one axis; the move
    /// is uncertain by both alignments' errors ([`Timeline::device_slack_ns`]).
    #[serde(default, skip_serializing_if = "crate::program::is_zero")]
    pub device: u32,
}

impl Span {
    /// A span of one block, for hand-made timelines in tests and examples.
    pub fn single(op: OpId, start_ns: u64, end_ns: u64) -> Span {
        Span {
            op,
            device: 0,
            blocks: Blocks::from([BlockStamp {
                start_ns,
                end_ns,
                sm: 0,
                cycles: 0,
                pause: None,
            }]),
        }
    }

    /// Earliest block start.
    pub fn start(&self) -> u64 {
        self.blocks.first_ns()
    }

    /// Latest block end.
    pub fn end(&self) -> u64 {
        self.blocks.last_ns()
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

/// Where an op ran, in `%globaltimer` ns, from stamps (`slack_ns` 0), from a host span placed
/// with the clock sync, or from a witnessed span placed with the witness sync (`slack_ns` their
/// error bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    pub op: OpId,
    pub start: i64,
    pub end: i64,
    /// How far the true start and end may lie from these, beyond the timer step.
    pub slack_ns: u64,
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
    /// Sorted by op id: the runs of host functions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_spans: Vec<HostSpan>,
    /// The host clock's offset to `%globaltimer`. Every trial has one since the disturbance rule
    /// needed it (`crate::judge::disturbance`); before, only trials with host-side work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockSync>,
    /// Sorted by op id: spans of copies (and memsets) in the witness's clock.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub witnessed: Vec<WitnessSpan>,
    /// How the witness's clock maps to `%globaltimer`, for trials with witnessed spans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witness: Option<WitnessSync>,
    /// How many times the OS preempted the issuing thread while it issued the trial's ops: host
    /// times measured across a preemption include it (see [`crate::judge::disturbance`]). Absent in
    /// files recorded before it was counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub preempted: u32,
    /// Where the host's CPU ran slow while the trial was issued, for programs whose checks
    /// compare amounts of host time (see `crate::judge::slowdown`). Absent where nobody watched: other programs,
    /// and files recorded before the pace thread.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_slow: Vec<HostSlow>,
    /// The issuing thread's own pace around the trial, where the host was watched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer_pace: Option<IssuerPace>,
    /// Sorted by buffer id: what each buffer was and held after the trial.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contents: Vec<Contents>,
    /// Programs on several GPUs: each device's clock alignment, device 0 first (empty for a
    /// single-device trial, whose stamps need none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceClock>,
    /// A graph launched more than once: its nodes' stamps in each launch after the first (a
    /// node's own span in [`Timeline::spans`] is its first launch's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relaunched: Vec<Relaunch>,
}

/// The stamps a graph's nodes left in one of its later launches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Relaunch {
    /// The [`crate::OpKind::GraphLaunch`] op.
    pub launch: OpId,
    /// One span per stamped node, under the node's op id.
    pub spans: Vec<Span>,
}

impl Timeline {
    pub fn new(mut spans: Vec<Span>, mut host_calls: Vec<HostCall>) -> Timeline {
        spans.sort_by_key(|s| s.op);
        host_calls.sort_by_key(|c| c.op);
        Timeline {
            spans,
            host_calls,
            ..Timeline::default()
        }
    }

    /// The same timeline with host functions' spans and the clock sync they are placed with.
    pub fn with_host(mut self, mut host_spans: Vec<HostSpan>, clock: Option<ClockSync>) -> Self {
        host_spans.sort_by_key(|s| s.op);
        self.host_spans = host_spans;
        self.clock = clock;
        self
    }

    /// The best offset from host time to `%globaltimer` the trial has, for drawing host calls:
    /// the clock sync's where it was measured, else the host-to-GPU offset of
    /// [`Timeline::issue_offset_ns`] (which includes the launch latency).
    pub fn host_offset_ns(&self) -> Option<i64> {
        self.clock
            .map(|c| c.offset_ns)
            .or_else(|| self.issue_offset_ns())
    }

    /// A host-clock instant (ns since the trial's first issue) in `%globaltimer` ns.
    pub fn host_to_gpu(&self, host_ns: u64) -> Option<i64> {
        Some(self.clock?.to_gpu(host_ns))
    }

    /// The host call that issued `op`.
    pub fn host_call(&self, op: OpId) -> Option<&HostCall> {
        self.host_calls
            .binary_search_by_key(&op, |c| c.op)
            .ok()
            .map(|i| &self.host_calls[i])
    }

    /// The host calls of ops `first..=last`, in op order (the calls are kept sorted by op).
    pub fn host_calls_of(&self, first: OpId, last: OpId) -> &[HostCall] {
        let from = self.host_calls.partition_point(|c| c.op < first);
        let to = self.host_calls.partition_point(|c| c.op <= last).max(from);
        &self.host_calls[from..to]
    }

    /// When the GPU began the trial's work: the earliest start of a stamped or witnessed op (host
    /// functions run on the host, and do not count). Nothing of the trial ran on the GPU before
    /// it, so an op issued earlier was pending then, and could not have started sooner: this is
    /// when a trial that a neighbour held back as a whole was let go (see
    /// `crate::judge::disturbance`).
    pub fn gpu_release(&self) -> Option<i64> {
        let stamped = self.spans.iter().map(|s| s.start() as i64);
        let witnessed = self.witness.map(|sync| {
            self.witnessed
                .iter()
                .map(move |w| w.start_ns + sync.offset_ns)
        });
        stamped.chain(witnessed.into_iter().flatten()).min()
    }

    /// Where `op` ran on the `%globaltimer` axis: its stamps, its witnessed span, or its host span
    /// placed with the clock sync.
    pub fn interval(&self, op: OpId) -> Option<Interval> {
        if let Some(s) = self.span(op) {
            return Some(Interval {
                op,
                start: s.start() as i64,
                end: s.end() as i64,
                slack_ns: self.device_slack_ns(s.device),
            });
        }
        if let Some(w) = self.witnessed.iter().find(|w| w.op == op) {
            let sync = self.witness?;
            return Some(Interval {
                op,
                start: w.start_ns + sync.offset_ns,
                end: w.end_ns + sync.offset_ns,
                slack_ns: sync.error_ns,
            });
        }
        let h = self.host_span(op)?;
        Some(Interval {
            op,
            start: self.host_to_gpu(h.begin_ns)?,
            end: self.host_to_gpu(h.end_ns)?,
            slack_ns: self.clock?.error_ns,
        })
    }

    /// The same timeline with the issuing thread's preemptions counted.
    pub fn with_preempted(mut self, preempted: u32) -> Self {
        self.preempted = preempted;
        self
    }

    /// The same timeline with the host's slow stretches and the issuing thread's pace.
    pub fn with_host_slow(mut self, slow: Vec<HostSlow>, issuer: Option<IssuerPace>) -> Self {
        self.host_slow = slow;
        self.issuer_pace = issuer;
        self
    }

    /// How far a stamp of `device`, moved onto device 0's axis, may lie from where it is
    /// stored: the sum of both devices' alignment errors (0 for device 0). A relation between a
    /// span of device 0 and one of device 1 thus widens by both errors; two spans of device 1
    /// widen by twice that, more than they need (their own clock is one), which only makes
    /// such a verdict more cautious.
    pub fn device_slack_ns(&self, device: u32) -> u64 {
        if device == 0 {
            return 0;
        }
        let error = |d: u32| {
            self.devices
                .iter()
                .find(|c| c.device == d)
                .map(|c| c.error_ns)
        };
        match (error(0), error(device)) {
            (Some(a), Some(b)) => a + b,
            // A span of another device without its alignment cannot be placed: widen by a
            // second, which decides nothing (load checks keep tolerances below one second).
            _ => 1_000_000_000,
        }
    }

    /// The same timeline with witnessed spans and their alignment.
    pub fn with_witness(mut self, mut spans: Vec<WitnessSpan>, sync: Option<WitnessSync>) -> Self {
        spans.sort_by_key(|s| s.op);
        self.witnessed = spans;
        self.witness = sync;
        self
    }

    /// The same timeline with buffer contents.
    pub fn with_contents(mut self, mut contents: Vec<Contents>) -> Self {
        contents.sort_by_key(|c| c.buffer);
        self.contents = contents;
        self
    }

    /// What buffer `b` was and held after the trial.
    pub fn contents_of(&self, b: BufferId) -> Option<&Contents> {
        self.contents.iter().find(|c| c.buffer == b)
    }

    /// The same timeline with the stamps of graphs' later launches.
    pub fn with_relaunched(mut self, relaunched: Vec<Relaunch>) -> Self {
        self.relaunched = relaunched;
        self
    }

    /// The spans of the nodes a later launch of a graph ran, if `launch` is one.
    pub fn relaunch(&self, launch: OpId) -> Option<&[Span]> {
        self.relaunched
            .iter()
            .find(|r| r.launch == launch)
            .map(|r| r.spans.as_slice())
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

    /// The run of host function `op` (host spans are sorted by op: `with_host`, and files are
    /// checked for it).
    pub fn host_span(&self, op: OpId) -> Option<&HostSpan> {
        self.host_spans
            .binary_search_by_key(&op, |h| h.op)
            .ok()
            .map(|i| &self.host_spans[i])
    }

    pub fn span(&self, op: OpId) -> Option<&Span> {
        self.spans
            .binary_search_by_key(&op, |s| s.op)
            .ok()
            .map(|i| &self.spans[i])
    }

    /// When `op` was issued, in host-clock ns since the trial's start: when the host call that
    /// issued it returned, by when it was in its stream (the lab's launch latency, and a
    /// trace's, are measured from there). In a trace (one clock, [`Timeline::one_clock`]), a
    /// call that returned only after its op had started (a copy of pageable memory, a
    /// synchronous memcpy, a launch under `CUDA_LAUNCH_BLOCKING=1`) held its thread while the
    /// op ran, and had issued it when it began: taking its return instead once made a copy that
    /// ran 2.9 ms beside a kernel "issued only after the kernel ended".
    pub fn issued_ns(&self, op: OpId) -> Option<u64> {
        let call = self.host_call(op)?;
        let started = self.span(op).map(|s| s.start());
        Some(
            match self.one_clock() && started.is_some_and(|s| call.end_ns > s) {
                true => call.begin_ns,
                false => call.end_ns,
            },
        )
    }

    /// The trial's host-to-GPU offset: the smallest `start - issued` of any stamped or witnessed
    /// op, in ns.
    ///
    /// The first op a trial issues waits for nothing, so this is (to within the launch jitter)
    /// the offset between the host clock plus launch latency and `%globaltimer`. Adding it to an
    /// op's issue time gives the earliest moment the op could have started on the GPU.
    pub fn issue_offset_ns(&self) -> Option<i64> {
        self.issue_offset_without(|_| false)
    }

    /// [`Timeline::issue_offset_ns`] over the ops `skip` leaves: the ops of a graph start before
    /// their launch call returns (a launch of 1000 nodes holds the host for over 100 µs), so
    /// they make every other op look issued early.
    pub fn issue_offset_without(&self, skip: impl Fn(OpId) -> bool) -> Option<i64> {
        self.issue_offset_where(|op| !skip(op), |_| false)
    }

    /// The smallest `start - issue` over the ops `counts` names, an op counting from its call's
    /// begin where `from_begin` says so (and a copy always: it may block the host until it has
    /// nearly finished, with pageable memory), else from its call's end. Counting from the begin
    /// only lengthens the delay, so it suits ops whose call returns late (a graph's launch).
    pub fn issue_offset_where(
        &self,
        counts: impl Fn(OpId) -> bool,
        from_begin: impl Fn(OpId) -> bool,
    ) -> Option<i64> {
        let issued = |op: OpId, begin: bool| {
            let call = self.host_call(op)?;
            Some(if begin { call.begin_ns } else { call.end_ns } as i64)
        };
        let witnessed = self.witness.map(|w| {
            self.witnessed
                .iter()
                .filter(|s| counts(s.op))
                .filter_map(move |s| Some(s.start_ns + w.offset_ns - issued(s.op, true)?))
        });
        self.spans
            .iter()
            .filter(|s| counts(s.op))
            .filter_map(|s| Some(s.start() as i64 - issued(s.op, from_begin(s.op))?))
            .chain(witnessed.into_iter().flatten())
            .min()
    }

    /// When `op` could have started at the earliest, in `%globaltimer` ns: its issue time plus
    /// the trial's offset. An op that depends on nothing starts within the launch jitter of it.
    pub fn ready_ns(&self, op: OpId) -> Option<i64> {
        Some(self.issued_ns(op)? as i64 + self.issue_offset_ns()?)
    }

    /// The earliest start of any span: subtract it to print times relative to the trial.
    /// Whether host and GPU times share one clock (a profiler trace's trial, [`ClockSync::shared`]).
    pub fn one_clock(&self) -> bool {
        self.clock.is_some_and(|c| c.shared)
    }

    pub fn origin_ns(&self) -> u64 {
        self.spans.iter().map(Span::start).min().unwrap_or(0)
    }

    /// From the first start to the last end, in nanoseconds.
    pub fn makespan_ns(&self) -> u64 {
        let end = self.spans.iter().map(Span::end).max().unwrap_or(0);
        end.saturating_sub(self.origin_ns())
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_calls_of_takes_exactly_the_range() {
        let call = |op| HostCall {
            op: OpId(op),
            begin_ns: 0,
            end_ns: 1,
        };
        // Ops 0, 2, 3, 5 have calls (op 1 is, say, a record without one).
        let t = Timeline::new(vec![], vec![call(5), call(0), call(3), call(2)]);
        let ops = |a, b| -> Vec<usize> {
            t.host_calls_of(OpId(a), OpId(b))
                .iter()
                .map(|c| c.op.0)
                .collect()
        };
        assert_eq!(ops(0, 5), [0, 2, 3, 5]);
        assert_eq!(ops(1, 3), [2, 3]);
        assert_eq!(ops(3, 3), [3]);
        assert_eq!(ops(4, 4), Vec::<usize>::new());
        assert_eq!(
            ops(5, 0),
            Vec::<usize>::new(),
            "an empty range, not a panic"
        );
        assert_eq!(ops(6, 9), Vec::<usize>::new());
    }
}
