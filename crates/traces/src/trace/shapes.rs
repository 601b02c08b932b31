//! The shapes of a profiler trace's events as serde reads them: only the fields stream-litmus
//! uses; numbers in any form (`number.rs`); the driver environment `trace --` writes. An
//! event's words (`ph`, `cat`, `name`) are borrowed from the text where they hold no escape, so
//! the events thrown away cost no allocation.

use super::number::{Num, Real};
use serde::de::{Deserializer, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;

#[derive(Deserialize, Default)]
pub(super) struct Args {
    /// The process that issued a GPU op, in `stream-litmus trace` recordings (a profiler's trace
    /// holds one process and leaves it out).
    #[serde(default)]
    pub(super) process: Num,
    #[serde(default)]
    pub(super) device: Num,
    #[serde(default)]
    pub(super) stream: Num,
    #[serde(default)]
    pub(super) correlation: Num,
    #[serde(default)]
    pub(super) bytes: Num,
    /// A kernel's blocks per SM at launch (the PyTorch profiler's figure).
    #[serde(default, rename = "blocks per SM")]
    pub(super) blocks_per_sm: Real,
    /// The driver's environment of a process (`process_env`, written by `stream-litmus trace`).
    #[serde(default)]
    pub(super) env: Option<EnvArgs>,
    /// Whether `stream-litmus trace` recorded a process's syncs, event records and streams
    /// (`process_env`; where CUPTI gave them): a process without a sync then made none.
    #[serde(default)]
    pub(super) recorded_syncs: Option<bool>,
    /// A sync's event (`cuda_sync`), or a record's (`cuda_event_record`).
    #[serde(default, alias = "wait_on_cuda_event_id")]
    pub(super) event: Num,
    /// The profiler's join of an event wait to the stream and call of its record
    /// (`trace/syncs.rs`).
    #[serde(default)]
    pub(super) wait_on_stream: Num,
    #[serde(default)]
    pub(super) wait_on_cuda_event_record_corr_id: Num,
    /// A stream's priority and creation flag (`cuda_stream`, written by `stream-litmus trace`).
    #[serde(default)]
    pub(super) priority: Num,
    #[serde(default)]
    pub(super) flag: Option<String>,
}

/// The variables of [`DRIVER_ENV`](crate::border::allowed_env::DRIVER_ENV); others are not
/// read.
#[derive(Deserialize, Default)]
pub(super) struct EnvArgs {
    #[serde(default, rename = "CUDA_DEVICE_MAX_CONNECTIONS")]
    pub(super) max_connections: Option<String>,
    #[serde(default, rename = "CUDA_MODULE_LOADING")]
    pub(super) module_loading: Option<String>,
    #[serde(default, rename = "CUDA_LAUNCH_BLOCKING")]
    pub(super) launch_blocking: Option<String>,
}

/// The most characters of an environment value kept: the values the driver reads are short words
/// and numbers.
pub(super) const ENV_VALUE_CHARS: usize = 64;

#[derive(Deserialize)]
pub(super) struct Event<'a> {
    #[serde(default, borrow)]
    pub(super) ph: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub(super) cat: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub(super) name: Option<Text<'a>>,
    #[serde(default)]
    pub(super) pid: Num,
    #[serde(default)]
    pub(super) tid: Num,
    #[serde(default)]
    pub(super) ts: Option<f64>,
    #[serde(default)]
    pub(super) dur: Option<f64>,
    #[serde(default)]
    pub(super) args: Option<Args>,
}

impl Event<'_> {
    /// The event with its words owned: it outlives the text it was parsed from.
    pub(super) fn into_owned(self) -> Event<'static> {
        let own = |t: Option<Text>| t.map(|t| Text(Cow::Owned(t.0.into_owned())));
        Event {
            ph: own(self.ph),
            cat: own(self.cat),
            name: own(self.name),
            pid: self.pid,
            tid: self.tid,
            ts: self.ts,
            dur: self.dur,
            args: self.args,
        }
    }
}

#[derive(Deserialize, Default)]
pub(super) struct DistributedInfo {
    #[serde(default)]
    pub(super) rank: Num,
    #[serde(default)]
    pub(super) world_size: Num,
}

/// A string of an event, borrowed from the text where it can be (no escapes in it), else owned.
pub(super) struct Text<'a>(pub(super) Cow<'a, str>);

impl std::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text<'a>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}
