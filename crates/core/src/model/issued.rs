//! What the model reads of a program: its streams (kind, device, hardware-queue slot) and its ops
//! in issue order, each reduced to what it does to the order. A lab [`Program`] and the program
//! behind a trace (`trace/behind.rs`) are both read into this one form, so that one set of rules
//! (`rules.rs`) judges both.
//!
//! A trace may not say everything: a stream whose kind it does not record has `kind: None` and
//! makes no implicit order (the legacy default stream's barrier), a stream whose creation it does
//! not record has no queue slot and shares no queue. The model then predicts fewer orders, never
//! a false one; what was unknown is said by whoever built the [`Issued`].

use crate::program::{ApiCall, OpKind, Program, StreamId, StreamKind, SyncTarget};
use serde::Serialize;

/// A stream as the model sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct StreamFacts {
    /// `None` where the source does not say: no implicit order is made for it.
    pub kind: Option<StreamKind>,
    pub device: u32,
    /// Its index among its device's streams, which picks its hardware queue (`slot mod n` under
    /// `Refinement::Queues(n)`); `None` where unknown: it shares no queue.
    pub slot: Option<usize>,
}

/// What an op does to the order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "act", rename_all = "snake_case")]
pub enum What {
    /// Work on a stream: a kernel or a device memset (`queued`: it takes its place in its
    /// stream's hardware queue, as the lab measured kernels do), a copy, a host function (not
    /// measured in a queue: left out of it, so the model predicts less, never a false order).
    Work {
        stream: StreamId,
        queued: bool,
    },
    /// One rank of a collective: consecutive ones form a group; queued like a kernel.
    AllReduce {
        stream: StreamId,
    },
    Record {
        stream: StreamId,
        event: usize,
    },
    Wait {
        stream: StreamId,
        event: usize,
    },
    /// A stream op that takes no time of its own (a stream-ordered allocation or free).
    Enqueue {
        stream: StreamId,
    },
    BeginCapture {
        stream: StreamId,
    },
    EndCapture {
        stream: StreamId,
    },
    /// A launch of the graph that the end-capture op `graph` made.
    GraphLaunch {
        stream: StreamId,
        graph: usize,
    },
    /// The end of a graph launch seen in a trace, issued after its parts ([`Act::part_of`]):
    /// a stream op that takes no time and starts once every part has ended.
    Join {
        stream: StreamId,
    },
    /// The host waits for the target (a sync, or an elapsed-time read's event sync).
    HostSync {
        target: SyncTarget,
    },
    /// The host waits for every op of one device.
    DeviceSync {
        device: u32,
    },
    /// A host call that orders nothing (a query, an API call); `takes_time` for a synchronous
    /// memset.
    Host {
        takes_time: bool,
    },
}

impl What {
    /// The stream it is enqueued on; `None` for host-side ops.
    pub fn stream(&self) -> Option<StreamId> {
        match *self {
            What::Work { stream, .. }
            | What::AllReduce { stream }
            | What::Record { stream, .. }
            | What::Wait { stream, .. }
            | What::Enqueue { stream }
            | What::BeginCapture { stream }
            | What::EndCapture { stream }
            | What::GraphLaunch { stream, .. }
            | What::Join { stream } => Some(stream),
            What::HostSync { .. } | What::DeviceSync { .. } | What::Host { .. } => None,
        }
    }

    /// Whether it occupies the device (or the host on its behalf): what a stream sync waits for.
    pub(super) fn takes_time(&self) -> bool {
        matches!(
            self,
            What::Work { .. } | What::AllReduce { .. } | What::Host { takes_time: true }
        )
    }
}

/// One op in issue order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Act {
    pub what: What,
    /// For a kernel of a graph launch seen in a trace: the [`What::Join`] act that ends the
    /// launch (issued after it). Parts of one launch have no order among themselves; each
    /// starts after the work its stream held before the launch. Four bytes (an act of a
    /// trace is one of at most 2^31 records, `trace::max_kept`): a 200 MB trace's program holds
    /// 150,000 acts (issue 51).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part_of: Option<u32>,
}

/// A program as the model reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Issued {
    pub streams: Vec<StreamFacts>,
    pub events: usize,
    pub ops: Vec<Act>,
}

impl Issued {
    /// What the model reads of a lab program: every stream's kind and device known, its slot its
    /// index among its device's streams.
    pub fn of(program: &Program) -> Issued {
        let mut seen: Vec<usize> = Vec::new();
        let streams = (program.streams.iter())
            .map(|s| {
                let d = s.device as usize;
                if seen.len() <= d {
                    seen.resize(d + 1, 0);
                }
                seen[d] += 1;
                StreamFacts {
                    kind: Some(s.kind),
                    device: s.device,
                    slot: Some(seen[d] - 1),
                }
            })
            .collect();
        let ops = (program.ops.iter())
            .map(|op| Act {
                what: what_of(&op.kind),
                part_of: None,
            })
            .collect();
        Issued {
            streams,
            events: program.events.len(),
            ops,
        }
    }

    /// How many devices it names: one more than the highest (at least 1).
    pub fn device_count(&self) -> u32 {
        let streams = self.streams.iter().map(|s| s.device);
        let syncs = self.ops.iter().filter_map(|a| match a.what {
            What::DeviceSync { device } => Some(device),
            _ => None,
        });
        streams.chain(syncs).max().unwrap_or(0).saturating_add(1)
    }

    /// Per op, the end-capture op that closes the capture it was issued in, if any.
    pub(super) fn captures(&self) -> Vec<Option<usize>> {
        let mut out = vec![None; self.ops.len()];
        let mut open: Option<Vec<usize>> = None;
        for (i, a) in self.ops.iter().enumerate() {
            match a.what {
                What::BeginCapture { .. } => {
                    open.get_or_insert_with(Vec::new);
                }
                What::EndCapture { .. } => {
                    for j in open.take().unwrap_or_default() {
                        out[j] = Some(i);
                    }
                }
                _ => {
                    if let Some(inside) = open.as_mut() {
                        inside.push(i);
                    }
                }
            }
        }
        out
    }

    /// Per op, the first launch of the graph it was captured into, if it was captured and the
    /// graph launched.
    pub(super) fn graph_launches(&self) -> Vec<Option<usize>> {
        let mut first: Vec<Option<usize>> = vec![None; self.ops.len()];
        for (i, a) in self.ops.iter().enumerate() {
            if let What::GraphLaunch { graph, .. } = a.what {
                if let Some(slot) = first.get_mut(graph) {
                    slot.get_or_insert(i);
                }
            }
        }
        (self.captures().into_iter())
            .map(|end| end.and_then(|e| first[e]))
            .collect()
    }

    /// Per op, whether it is a wait on an event with no record issued before it: "a functional
    /// no-op" (`cudaStreamWaitEvent`), which is no legacy-stream action either.
    pub(super) fn noop_waits(&self) -> Vec<bool> {
        let mut recorded = vec![false; self.events];
        (self.ops.iter())
            .map(|a| match a.what {
                What::Record { event, .. } => {
                    if let Some(r) = recorded.get_mut(event) {
                        *r = true;
                    }
                    false
                }
                What::Wait { event, .. } => !recorded.get(event).copied().unwrap_or(false),
                _ => false,
            })
            .collect()
    }

    /// The collectives: each run of consecutive all-reduce ops.
    pub(super) fn collectives(&self) -> Vec<Vec<usize>> {
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut open = false;
        for (i, a) in self.ops.iter().enumerate() {
            match a.what {
                What::AllReduce { .. } => {
                    if !open {
                        groups.push(Vec::new());
                    }
                    open = true;
                    if let Some(g) = groups.last_mut() {
                        g.push(i);
                    }
                }
                _ => open = false,
            }
        }
        groups
    }
}

/// What an op of a lab program does to the order.
fn what_of(kind: &OpKind) -> What {
    match *kind {
        OpKind::Spin { stream, .. } | OpKind::Add { stream, .. } => What::Work {
            stream,
            queued: true,
        },
        OpKind::Copy { stream, .. } | OpKind::HostFn { stream, .. } => What::Work {
            stream,
            queued: false,
        },
        OpKind::AllReduce { stream, .. } => What::AllReduce { stream },
        OpKind::Record { stream, event } => What::Record {
            stream,
            event: event.0,
        },
        OpKind::Wait { stream, event } => What::Wait {
            stream,
            event: event.0,
        },
        OpKind::AllocAsync { stream, .. } | OpKind::FreeAsync { stream, .. } => {
            What::Enqueue { stream }
        }
        OpKind::BeginCapture { stream } => What::BeginCapture { stream },
        OpKind::EndCapture { stream } => What::EndCapture { stream },
        OpKind::GraphLaunch { stream, graph } => What::GraphLaunch {
            stream,
            graph: graph.0,
        },
        OpKind::HostSync { target } => What::HostSync { target },
        OpKind::Elapsed { to, .. } => What::HostSync {
            target: SyncTarget::Event(to),
        },
        OpKind::DeviceSync { device } => What::DeviceSync { device },
        OpKind::Query { .. } => What::Host { takes_time: false },
        OpKind::Api { call, .. } => What::Host {
            takes_time: call == ApiCall::Memset,
        },
    }
}
