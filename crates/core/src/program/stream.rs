//! Streams: their kinds (whose synchronization rules differ), priorities and devices.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The kinds of stream whose synchronization rules differ.
///
/// See the CUDA Driver API, "Stream synchronization behavior".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamKind {
    /// The legacy default stream (handle 0): it waits for, and is waited for by, every blocking
    /// stream of the context.
    LegacyNull,
    /// The per-thread default stream (`CU_STREAM_PER_THREAD`): ordinary stream that still
    /// synchronizes with the legacy null stream.
    PerThread,
    /// A stream created with `CU_STREAM_DEFAULT`: synchronizes with the legacy null stream.
    Blocking,
    /// A stream created with `CU_STREAM_NON_BLOCKING`: exempt from the legacy null stream's
    /// implicit synchronization.
    NonBlocking,
}

impl StreamKind {
    /// Every kind, for tests that run one case per kind.
    pub const ALL: [StreamKind; 4] = [
        StreamKind::LegacyNull,
        StreamKind::PerThread,
        StreamKind::Blocking,
        StreamKind::NonBlocking,
    ];

    /// The two kinds that name one shared, built-in stream rather than a new one.
    pub fn is_builtin(self) -> bool {
        matches!(self, StreamKind::LegacyNull | StreamKind::PerThread)
    }

    /// The kind in a sentence: "the legacy default stream", "a blocking stream".
    pub fn described(self) -> &'static str {
        match self {
            StreamKind::LegacyNull => "the legacy default stream",
            StreamKind::PerThread => "the per-thread default stream",
            StreamKind::Blocking => "a blocking stream",
            StreamKind::NonBlocking => "a non-blocking stream",
        }
    }

    /// Short name used in labels and reports.
    pub fn name(self) -> &'static str {
        match self {
            StreamKind::LegacyNull => "legacy-null",
            StreamKind::PerThread => "per-thread",
            StreamKind::Blocking => "blocking",
            StreamKind::NonBlocking => "non-blocking",
        }
    }
}

impl fmt::Display for StreamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A stream priority, resolved on the device with `cuCtxGetStreamPriorityRange` (its numeric
/// range differs between GPUs, so programs name the ends of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// The least priority (the default of every stream).
    Lowest,
    /// The greatest priority.
    Highest,
}

/// A stream the program uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stream {
    pub kind: StreamKind,
    pub label: String,
    /// Created with `cuStreamCreateWithPriority` when set (blocking and non-blocking kinds only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    /// The CUDA device (ordinal) whose primary context the stream is created in; 0 unless the
    /// program runs on several GPUs. A built-in stream (legacy null, per-thread) is that
    /// device's own: each device has one of each (docs/model.md, "Several devices").
    #[serde(default, skip_serializing_if = "is_zero")]
    pub device: u32,
}

/// For `skip_serializing_if`: device 0 is left out, so single-device files stay as they were.
pub fn is_zero(v: &u32) -> bool {
    *v == 0
}

impl Stream {
    /// "s1 (non-blocking)", or just "null" where the label already is the kind; a stream of
    /// another device than 0 names it ("s1 (non-blocking, gpu1)"), so lanes say which GPU.
    pub fn display_label(&self) -> String {
        match (self.label == self.kind.name(), self.device) {
            (true, 0) => self.label.clone(),
            (false, 0) => format!("{} ({})", self.label, self.kind),
            (true, d) => format!("{} (gpu{d})", self.label),
            (false, d) => format!("{} ({}, gpu{d})", self.label, self.kind),
        }
    }
}
