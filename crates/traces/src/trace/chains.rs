//! The chain of rules that orders one op after another, in words: what `explain` and the
//! reasons of claims on traces say when the program behind a trace asked for a wait.
//!
//! Read from the waiting op back: "stream 17 waited (cudaStreamWaitEvent, recorded) for an
//! event recorded on stream 21, after stream 21 waited … for an event recorded on stream 7,
//! after the copy". Stream order between two hops is left unsaid (it is the rule every reader
//! expects); every other rule is a hop.

use super::behind::Process;
use crate::model::{Link, Rule, What};
use crate::program::{StreamKind, SyncTarget};

impl Process {
    /// The chain `links` (from the end of act `from`, the op labelled `first`, to the start of
    /// the waiting op) in words; `name` labels an act that is a GPU op of the trial, where it is
    /// one.
    pub fn chain_words(
        &self,
        from: usize,
        links: &[Link],
        first: &str,
        name: &dyn Fn(usize) -> Option<String>,
    ) -> String {
        let stream = |act: usize| {
            self.stream_of(act)
                .map_or("?".to_string(), |s| s.1.to_string())
        };
        let mut hops: Vec<String> = Vec::new();
        for (k, l) in links.iter().enumerate() {
            let from = Some(k.checked_sub(1).map_or(from, |j| links[j].op));
            let hop = match l.rule {
                Rule::Event => format!(
                    "stream {} waited (cudaStreamWaitEvent, recorded) for an event recorded on \
                     stream {}",
                    stream(l.op),
                    from.map_or("?".to_string(), stream)
                ),
                Rule::Legacy => self.legacy_hop(l.op, from.map_or("?".to_string(), stream)),
                Rule::HostSync if !l.end => match self.sync_hop(l.op) {
                    Some(h) => h,
                    None => continue,
                },
                Rule::Graph => "its graph launch's kernels ended before the launch did".into(),
                Rule::Collective => "an all-reduce waited for every rank".into(),
                Rule::Queue => self.queue_hop(l.op, from, &stream, name),
                _ => continue,
            };
            if hops.last() != Some(&hop) {
                hops.push(hop);
            }
        }
        hops.reverse();
        if hops.is_empty() {
            return format!("its stream's order, after {first}");
        }
        hops.push(first.to_string());
        hops.join(", after ")
    }

    fn legacy_hop(&self, act: usize, other: String) -> String {
        let s = self.stream_of(act);
        let n = s.map_or("?".to_string(), |s| s.1.to_string());
        match s.and_then(|(d, s)| self.kind_of(d, s)) {
            Some(StreamKind::LegacyNull) => format!(
                "the legacy default stream (stream {n}) waited for the work of blocking stream \
                 {other}"
            ),
            _ => {
                format!("blocking stream {n} waited for the legacy default stream (stream {other})")
            }
        }
    }

    fn sync_hop(&self, act: usize) -> Option<String> {
        Some(match self.issued.ops.get(act)?.what {
            What::DeviceSync { .. } => "the host synchronized the device".into(),
            What::HostSync {
                target: SyncTarget::Stream(s),
            } => format!("the host synchronized stream {}", self.streams.get(s.0)?.1),
            What::HostSync { .. } => "the host synchronized an event".into(),
            _ => return None,
        })
    }

    /// "stream 9 is dispatched after k2@s7 #5 from hardware queue 0 of 1
    /// (CUDA_DEVICE_MAX_CONNECTIONS=1, recorded)".
    fn queue_hop(
        &self,
        act: usize,
        ahead: Option<usize>,
        stream: &dyn Fn(usize) -> String,
        name: &dyn Fn(usize) -> Option<String>,
    ) -> String {
        let ahead = ahead.map_or("?".to_string(), |a| {
            name(a).unwrap_or_else(|| format!("the op before it on stream {}", stream(a)))
        });
        let q = (self.stream_of(act)).and_then(|(d, s)| self.queue_of(d, s));
        let setting = match (self.connections, self.connections_set) {
            (Some(n), true) => format!("CUDA_DEVICE_MAX_CONNECTIONS={n}, recorded"),
            _ => "CUDA_DEVICE_MAX_CONNECTIONS unset, recorded: 8 queues".into(),
        };
        match q {
            Some((q, n, _)) => format!(
                "stream {} is dispatched after {ahead} from hardware queue {q} of {n} ({setting})",
                stream(act)
            ),
            None => format!(
                "stream {} is dispatched after {ahead} from one queue",
                stream(act)
            ),
        }
    }
}
