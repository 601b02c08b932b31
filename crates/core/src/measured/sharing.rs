//! Sharing: the other processes that held a context on our GPU while a claim ran.
//!
//! Stamps show what a neighbour did to our work (see [`crate::judge::disturbance`]); this says who the
//! neighbour was. The lab asks NVML (through the `gpu` module) before the first claim and after
//! every claim, and keeps what it saw with each claim's trials, so the evidence of a disturbed
//! claim names the process ("pid 1234 python3, 87 % SM"), and a results file says on what kind
//! of GPU, shared or not, its verdicts were measured. Without NVML, or without the permission to
//! list processes, the list is empty and [`Sharing::limit`] says why.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Another process with a context on our GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Neighbour {
    pub pid: u32,
    /// The process's command name (`/proc/PID/comm`), or "?" where it cannot be read.
    pub name: String,
    /// Device memory it held, in MiB, where NVML tells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Its share of SM time over NVML's last sampling period, in percent, where NVML tells:
    /// `None` when NVML gives no utilisation, or took no sample since the last look (unknown,
    /// which counts as busy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_percent: Option<u32>,
    /// Its share of device-memory read/write time over the same period, where NVML tells: copies
    /// to and from the device show here and not in the SM share. Files recorded before it was
    /// kept have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_percent: Option<u32>,
}

impl Neighbour {
    /// Whether it may have used the GPU: it ran kernels or moved device memory (copies), or NVML
    /// could not say (no utilisation, or no sample since the last look). A neighbour running only copies shows 0 % SM: beside a catalogue loop in
    /// its copy claims, ours lost races with the neighbour at 0 % SM.
    pub fn busy(&self) -> bool {
        self.sm_percent != Some(0) || self.memory_percent != Some(0)
    }
}

impl fmt::Display for Neighbour {
    /// "pid 1234 python3 (87 % SM, 714 MiB)".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pid {} {}", self.pid, self.name)?;
        let mut parts = Vec::new();
        if let Some(p) = self.sm_percent {
            parts.push(format!("{p} % SM"));
        }
        if let Some(p) = self.memory_percent.filter(|&p| p > 0) {
            parts.push(format!("{p} % memory"));
        }
        if let Some(m) = self.memory_mib {
            parts.push(format!("{m} MiB"));
        }
        if !parts.is_empty() {
            write!(f, " ({})", parts.join(", "))?;
        }
        Ok(())
    }
}

/// What NVML saw around one claim (or one run).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sharing {
    /// Other processes on the GPU just before the claim ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<Neighbour>,
    /// Other processes on the GPU just after it ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<Neighbour>,
    /// Why the lists may be incomplete: no NVML, no permission to list processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
}

impl Sharing {
    /// Every neighbour seen before or after, once (the later sighting wins).
    pub fn neighbours(&self) -> Vec<&Neighbour> {
        let mut all: Vec<&Neighbour> = self.after.iter().collect();
        for n in &self.before {
            if !all.iter().any(|m| m.pid == n.pid) {
                all.push(n);
            }
        }
        all.sort_by_key(|n| n.pid);
        all
    }

    /// Whether another process may have used the GPU while the claim ran.
    pub fn busy(&self) -> bool {
        self.before.iter().chain(&self.after).any(Neighbour::busy)
    }

    /// "pid 1234 python3 (87 % SM, 714 MiB), pid 99 stream-litmus", or `None` when alone.
    pub fn describe(&self) -> Option<String> {
        let all = self.neighbours();
        (!all.is_empty()).then(|| {
            all.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        })
    }
}

/// Carries each neighbour's last non-zero utilisation forward through a run.
///
/// NVML samples a process's utilisation a few times a second, and a look returns only the
/// samples taken since the last one; a claim lasts milliseconds, so most looks after a claim hold
/// no new sample and read 0 % for a neighbour that is busy all along. On an H100 beside a PyTorch
/// job at 99 % SM, the looks around 9 of 10 copy claims read 0 %, and one of those claims was
/// decided wrongly. So a neighbour's share is the latest non-zero one seen in the run while it
/// holds a context: a neighbour that really went idle stays "busy" for the rest of the run,
/// which leaves claims undecided, never wrongly decided. Applying it twice changes nothing, so
/// the lab stores the carried values and re-judging a file carries them again.
#[derive(Debug, Default)]
pub struct Carry {
    known: std::collections::BTreeMap<u32, (u32, u32)>,
}

impl Carry {
    /// Whether process `pid` had a non-zero share in a look carried so far: it counts as busy
    /// in every look after, whatever they read.
    pub fn known_busy(&self, pid: u32) -> bool {
        self.known
            .get(&pid)
            .is_some_and(|&(sm, memory)| sm > 0 || memory > 0)
    }

    /// Fills the zero shares of `sharing` with the latest non-zero ones seen (this look included).
    pub fn apply(&mut self, sharing: &mut Sharing) {
        for list in [&mut sharing.before, &mut sharing.after] {
            for n in list.iter_mut() {
                let known = self.known.entry(n.pid).or_default();
                for (share, last) in [
                    (&mut n.sm_percent, &mut known.0),
                    (&mut n.memory_percent, &mut known.1),
                ] {
                    match share {
                        Some(0) if *last > 0 => *share = Some(*last),
                        Some(p) if *p > 0 => *last = *p,
                        _ => {}
                    }
                }
            }
        }
    }
}
