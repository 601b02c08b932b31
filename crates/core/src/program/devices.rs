//! Programs on several GPUs: which device each stream, buffer, event and op belongs to, the
//! collectives, and the rules a multi-device program must follow.
//!
//! A single-device program is the common case and stays exactly what it was: every `device`
//! field is 0 and left out of the JSON. A program whose streams or buffers name another device
//! is run by the multi-device executor (`gpu/multi.rs`), one primary context per device. Kept
//! apart from `validate.rs` so the single-device rules read as before; `Program::validate` calls
//! [`Program::device_problems`] once.

use super::{BufferId, EventId, OpId, OpKind, Place, Program, StreamKind, SyncTarget};
use crate::border::limits::MAX_DEVICES;

impl Program {
    /// How many devices the program uses: one more than the highest device any stream or buffer
    /// names (so at least 1).
    pub fn device_count(&self) -> u32 {
        let streams = self.streams.iter().map(|s| s.device);
        let buffers = self.buffers.iter().map(|b| b.device);
        let syncs = self.ops.iter().filter_map(|o| match o.kind {
            OpKind::DeviceSync { device } => Some(device),
            _ => None,
        });
        streams
            .chain(buffers)
            .chain(syncs)
            .max()
            .unwrap_or(0)
            .saturating_add(1)
    }

    /// The first size of the program past its limit (`crate::border::limits`): too many ops, streams,
    /// events or buffers, or a device ordinal of [`MAX_DEVICES`] or more. Checked before any
    /// other rule, because the others loop over devices and build tables of ops.
    pub fn size_problem(&self) -> Option<String> {
        use crate::border::limits::{MAX_PROGRAM_ITEMS, MAX_PROGRAM_OPS};
        let counts = [
            ("ops", self.ops.len(), MAX_PROGRAM_OPS),
            ("streams", self.streams.len(), MAX_PROGRAM_ITEMS),
            ("events", self.events.len(), MAX_PROGRAM_ITEMS),
            ("buffers", self.buffers.len(), MAX_PROGRAM_ITEMS),
        ];
        if let Some((what, n, most)) = counts.into_iter().find(|(_, n, most)| n > most) {
            return Some(format!(
                "it has {n} {what}; a program may have at most {most}"
            ));
        }
        let named = self.streams.iter().map(|s| s.device);
        let syncs = self.ops.iter().filter_map(|o| match o.kind {
            OpKind::DeviceSync { device } => Some(device),
            _ => None,
        });
        let far = named
            .chain(self.buffers.iter().map(|b| b.device))
            .chain(syncs)
            .find(|&d| d >= MAX_DEVICES)?;
        Some(format!(
            "it names device {far}; a program may use devices 0 to {}",
            MAX_DEVICES - 1
        ))
    }

    /// Whether the program needs more than one GPU.
    pub fn is_multi_device(&self) -> bool {
        self.device_count() > 1
    }

    /// The device op `op` runs on: its stream's (a device sync: the device it waits for);
    /// `None` for the other host-side ops, which belong to no device.
    pub fn device_of(&self, op: OpId) -> Option<u32> {
        let kind = &self.op(op)?.kind;
        if let OpKind::DeviceSync { device } = *kind {
            return Some(device);
        }
        Some(self.stream(kind.stream()?)?.device)
    }

    /// The device an event lives on: the device of the stream of its first record (CUDA records
    /// an event only on a stream of the context it was created in; it may be waited for on any
    /// device). 0 for an event never recorded.
    pub fn event_device(&self, e: EventId) -> u32 {
        self.ops
            .iter()
            .find_map(|o| match o.kind {
                OpKind::Record { stream, event } if event == e => self.stream(stream),
                _ => None,
            })
            .map_or(0, |s| s.device)
    }

    /// Whether copy `op` moves memory between device buffers of two devices.
    pub fn is_peer_copy(&self, op: OpId) -> bool {
        let Some(OpKind::Copy { src, dst, .. }) = self.op(op).map(|o| &o.kind) else {
            return false;
        };
        let dev = |b: BufferId| self.buffer(b).map(|b| (b.place, b.device));
        matches!((dev(*src), dev(*dst)), (Some((Place::Device, a)), Some((Place::Device, b))) if a != b)
    }

    /// The collectives: each run of consecutive all-reduce ops, as op ids in issue order.
    pub fn collectives(&self) -> Vec<Vec<OpId>> {
        let mut groups: Vec<Vec<OpId>> = Vec::new();
        let mut open = false;
        for op in &self.ops {
            if matches!(op.kind, OpKind::AllReduce { .. }) {
                if !open {
                    groups.push(Vec::new());
                    open = true;
                }
                groups.last_mut().expect("pushed").push(op.id);
            } else {
                open = false;
            }
        }
        groups
    }

    /// What is wrong with the program's use of devices; empty for a sound one.
    pub(super) fn device_problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let n = self.device_count();
        // One device: validate.rs keeps its own wording for a built-in stream declared twice.
        for kind in [StreamKind::LegacyNull, StreamKind::PerThread]
            .into_iter()
            .filter(|_| n > 1)
        {
            for d in 0..n {
                let k = self
                    .streams
                    .iter()
                    .filter(|s| s.kind == kind && s.device == d)
                    .count();
                if k > 1 {
                    problems.push(format!(
                        "the {kind} stream of device {d} is declared {k} times; it is one stream \
                         per device, declare it once"
                    ));
                }
            }
        }
        for b in &self.buffers {
            if b.device != 0 && b.place != Place::Device {
                problems.push(format!(
                    "buffer '{}' is {} host memory on device {}; host buffers belong to no \
                     device, leave their device at 0",
                    b.label, b.place, b.device
                ));
            }
        }
        for (i, e) in self.events.iter().enumerate() {
            let devices: std::collections::BTreeSet<u32> = self
                .ops
                .iter()
                .filter_map(|o| match o.kind {
                    OpKind::Record { stream, event } if event.0 == i => self.stream(stream),
                    _ => None,
                })
                .map(|s| s.device)
                .collect();
            if devices.len() > 1 {
                problems.push(format!(
                    "event '{}' is recorded on streams of devices {devices:?}; an event belongs \
                     to one device's context: record it on one device (wait for it on any)",
                    e.label
                ));
            }
        }
        problems.extend(self.multi_device_ops(n));
        problems.extend(self.collective_problems(n));
        problems
    }

    /// Ops the multi-device executor does not run, and ops that need several devices.
    fn multi_device_ops(&self, n: u32) -> Vec<String> {
        let mut problems = Vec::new();
        for op in &self.ops {
            let (multi_only, single_only) = match op.kind {
                OpKind::AllReduce { .. } | OpKind::DeviceSync { .. } => (true, false),
                OpKind::Copy { .. } if self.is_peer_copy(op.id) => (true, false),
                OpKind::Spin { .. }
                | OpKind::Record { .. }
                | OpKind::Wait { .. }
                | OpKind::Copy { .. } => (false, false),
                OpKind::HostSync { target } => (false, target == SyncTarget::Device),
                _ => (false, true),
            };
            if multi_only && n < 2 {
                problems.push(format!(
                    "op {} '{}' needs two devices, and the program declares streams and buffers \
                     on device 0 only; put a stream or buffer on device 1",
                    op.id.0, op.label
                ));
            }
            if single_only && n > 1 {
                problems.push(format!(
                    "op {} '{}' is not supported in a program on several devices (spins, event \
                     records and waits, stream and event syncs, device syncs of one device, \
                     copies, peer copies and all-reduces are); use `device_sync` for a device",
                    op.id.0, op.label
                ));
            }
            if let OpKind::Copy { src, dst, .. } = op.kind {
                let on = |b: BufferId| self.buffer(b).filter(|b| b.place == Place::Device);
                let stream_dev = op
                    .kind
                    .stream()
                    .and_then(|s| self.stream(s))
                    .map(|s| s.device);
                let mut devs = [src, dst].into_iter().filter_map(on).map(|b| b.device);
                if let Some(sd) = stream_dev {
                    if !self.is_peer_copy(op.id) && devs.any(|d| d != sd) {
                        problems.push(format!(
                            "copy {} '{}' is on a stream of device {sd} and touches a device \
                             buffer of another device; issue it on that device's stream",
                            op.id.0, op.label
                        ));
                    }
                }
            }
        }
        problems
    }

    /// An all-reduce is one collective over every device: one rank per device, equal sizes.
    fn collective_problems(&self, n: u32) -> Vec<String> {
        let mut problems = Vec::new();
        for group in self.collectives() {
            let mut devices: Vec<u32> = Vec::new();
            let mut sizes: Vec<u64> = Vec::new();
            for &id in &group {
                let op = &self.ops[id.0];
                let OpKind::AllReduce { stream, buffer } = op.kind else {
                    continue;
                };
                let device = self.stream(stream).map(|s| s.device);
                devices.extend(device);
                match self.buffer(buffer) {
                    Some(b) if b.place == Place::Device && Some(b.device) == device => {
                        sizes.push(b.bytes)
                    }
                    Some(b) => problems.push(format!(
                        "all-reduce {} '{}' reduces buffer '{}', which is not device memory of \
                         its stream's device; give each rank a device buffer of its own device",
                        op.id.0, op.label, b.label
                    )),
                    None => problems.push(format!(
                        "all-reduce {} '{}' uses unknown buffer b{} (the program has {} buffers)",
                        op.id.0,
                        op.label,
                        buffer.0,
                        self.buffers.len()
                    )),
                }
            }
            let first = &self.ops[group[0].0];
            let mut sorted = devices.clone();
            sorted.sort_unstable();
            if sorted != (0..n).collect::<Vec<_>>() {
                problems.push(format!(
                    "the all-reduce starting at op {} '{}' has ranks on devices {devices:?}; a \
                     collective needs one all-reduce op per device of the program (0..{n}), \
                     issued one after the other",
                    first.id.0, first.label
                ));
            }
            if sizes.windows(2).any(|w| w[0] != w[1]) {
                problems.push(format!(
                    "the all-reduce starting at op {} '{}' has ranks of different sizes \
                     {sizes:?}; every rank reduces the same number of bytes",
                    first.id.0, first.label
                ));
            }
        }
        problems
    }
}
