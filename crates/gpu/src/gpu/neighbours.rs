//! NVML: the other processes that hold a context on our GPU, and how busy they were.
//!
//! NVML is loaded at run time (`libnvidia-ml.so.1`, through `nvml-wrapper`), like cudarc loads
//! the driver, so the crate builds and runs without it. Our GPU is found by its PCI bus id, which
//! is the same in CUDA's numbering and NVML's. What it sees is plain data ([`Neighbour`]); the
//! analysis uses it to name a disturbance's cause and to protect speed-up checks
//! (see `crate::judge::disturbance`).

use crate::measured::sharing::Neighbour;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;

/// Set to `off` to leave NVML unused, as on a machine without it.
pub const NVML_ENV: &str = "STREAM_LITMUS_NVML";

/// The lab's own child processes while they live (`lab/child.rs`), which NVML lists like any
/// other: a child started ahead (`lab/ahead.rs`) holds an idle context during the look before its
/// claims, and is no neighbour. A child is forgotten once reaped, so that no other process that
/// later takes its id is left out.
static OWN_CHILDREN: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// Notes `pid` as one of the lab's own child processes, left out of looks until forgotten.
pub fn own_child(pid: u32) {
    OWN_CHILDREN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(pid);
}

/// Forgets `pid` ([`own_child`]) once the child is reaped.
pub fn forget_child(pid: u32) {
    OWN_CHILDREN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|&p| p != pid);
}

/// NVML on one GPU, opened on the first look: the `Gpu`'s, and the one that looks around a child
/// run while the `Gpu` is being opened (`Gpu::process_with`'s gate), which it then keeps.
pub struct Watch {
    pci_bus_id: Option<String>,
    observer: Option<Result<Observer, Unobserved>>,
    /// NVML being opened on a thread of its own ([`Watch::opening`]). One never looked through
    /// (a GPU that failed to open) is left to end on its own, not joined: a driver that hangs in
    /// NVML's start must not hold up the error that says why the GPU did not open.
    opening: Option<std::thread::JoinHandle<Result<Observer, Unobserved>>>,
}

impl Watch {
    /// A watch on the GPU with this PCI bus id (`None`: unknown, so never observed), opened on
    /// the first look.
    pub fn new(pci_bus_id: Option<String>) -> Watch {
        Watch {
            pci_bus_id,
            observer: None,
            opening: None,
        }
    }

    /// [`Watch::new`], with NVML opened now on a thread of its own, for the first look to take
    /// (where no thread can be started, the first look opens it).
    pub fn opening(pci_bus_id: Option<String>) -> Watch {
        let opening = pci_bus_id.clone().and_then(|id| {
            std::thread::Builder::new()
                .name("nvml-open".into())
                .spawn(move || Observer::open(&id))
                .ok()
        });
        let mut watch = Watch::new(pci_bus_id);
        watch.opening = opening;
        watch
    }

    /// The other processes with a context on the GPU now, or why they cannot be seen.
    pub fn look(&mut self) -> Look {
        self.look_knowing(&|_| false)
    }

    /// [`Watch::look`], where the caller counts the processes `known_busy` names as busy
    /// whatever this look reads of them ([`Observer::look`]).
    pub fn look_knowing(&mut self, known_busy: &dyn Fn(u32) -> bool) -> Look {
        if let Some(opening) = self.opening.take() {
            // A thread that panicked leaves the opening to this one, below.
            self.observer = opening.join().ok();
        }
        let pci_bus_id = &self.pci_bus_id;
        let opened = self.observer.get_or_insert_with(|| match pci_bus_id {
            Some(id) => Observer::open(id),
            None => Err(Unobserved::NoBusId),
        });
        match opened {
            Ok(o) => o.look(known_busy),
            Err(why) => Look {
                neighbours: Vec::new(),
                limit: Some(why.to_string()),
            },
        }
    }
}

/// An open NVML handle on our GPU.
pub struct Observer {
    nvml: Nvml,
    /// The device's raw NVML handle, looked up once: NVML finds a device by PCI bus id by walking
    /// its devices, and the lab looks once per claim. (A `Device` borrows the library, so the raw
    /// handle is kept and the `Device` remade around it for each look.)
    device: *mut std::ffi::c_void,
    /// The newest utilisation sample seen, so each look reads only what came after it.
    last_sample_us: u64,
    /// Whether a look skipped asking for samples since the last one that asked (see
    /// [`Observer::look`]).
    skipped: bool,
}

/// What one look found: the neighbours, and why the list may be incomplete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Look {
    pub neighbours: Vec<Neighbour>,
    pub limit: Option<String>,
}

// SAFETY: NVML is thread-safe, and its device handles are process-wide: the raw handle may be used
// from any thread (the `Gpu` keeps the observer behind a mutex).
unsafe impl Send for Observer {}

/// Why the processes on the GPU cannot be observed at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unobserved {
    #[error("NVML hidden ({NVML_ENV}=off): other processes on the GPU cannot be listed")]
    Hidden,
    #[error("NVML (libnvidia-ml.so.1) not found: other processes on the GPU cannot be listed")]
    NotFound,
    /// NVML loads but would not start: its message.
    #[error("NVML could not start ({0}): other processes cannot be listed")]
    NoStart(String),
    #[error("NVML does not know the GPU at {pci_bus_id} ({detail})")]
    UnknownGpu { pci_bus_id: String, detail: String },
    /// The driver gave no PCI bus id to find the GPU by.
    #[error("the GPU's PCI bus id is unknown: NVML cannot find it")]
    NoBusId,
}

impl Observer {
    /// Opens NVML on the device with this PCI bus id ("0000:18:00.0"); the error says why not,
    /// in words for the run header.
    pub fn open(pci_bus_id: &str) -> Result<Observer, Unobserved> {
        if std::env::var(NVML_ENV).is_ok_and(|v| v == "off") {
            return Err(Unobserved::Hidden);
        }
        let nvml = Nvml::init().map_err(|e| match e {
            NvmlError::LibloadingError(_) | NvmlError::LibraryNotFound => Unobserved::NotFound,
            other => Unobserved::NoStart(other.to_string()),
        })?;
        let device = nvml
            .device_by_pci_bus_id(pci_bus_id)
            .map_err(|e| Unobserved::UnknownGpu {
                pci_bus_id: pci_bus_id.into(),
                detail: e.to_string(),
            })?;
        // SAFETY: the handle stays valid while `nvml` is initialized, which the observer owns.
        let device = unsafe { device.handle() }.cast();
        Ok(Observer {
            nvml,
            device,
            last_sample_us: 0,
            skipped: false,
        })
    }

    /// The processes other than this one that hold a context on the GPU now, with their SM share
    /// since the last look; `known_busy` names those the caller counts as busy whatever this
    /// look reads of them.
    pub fn look(&mut self, known_busy: &dyn Fn(u32) -> bool) -> Look {
        // SAFETY: a handle NVML gave for this library instance, which is still initialized.
        let device = unsafe { nvml_wrapper::Device::new(self.device.cast(), &self.nvml) };
        let me = std::process::id();
        let processes = match device.running_compute_processes() {
            Ok(p) => p,
            Err(e) => {
                return Look {
                    neighbours: Vec::new(),
                    limit: Some(format!(
                        "NVML could not list the processes on the GPU ({e}): run as a user who \
                         may, or use --exclusive only where it can"
                    )),
                }
            }
        };
        let mut limit = None;
        if !processes.iter().any(|p| p.pid == me) {
            limit = Some(
                "NVML lists processes by ids this process cannot see (another PID namespace): \
                 this process may be among the neighbours listed"
                    .to_string(),
            );
        }
        let children = OWN_CHILDREN
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let other = |pid: u32| pid != me && !children.contains(&pid);
        let listed: Vec<u32> = (processes.iter().map(|p| p.pid))
            .filter(|&pid| other(pid))
            .collect();
        // Only processes that ran kernels in the sampling period are reported (see `share`).
        // Samples only describe the processes listed, and asking for them costs 2.2–2.7 ms (on an
        // H100, against 15 µs for the list): 130 ms of an idle catalogue run. So alone on the GPU
        // we do not ask, nor where every neighbour listed is one the caller counts as busy
        // whatever it reads (`asks`): beside a copy loop on an H200, asking in every look cost
        // 420 ms of a 4 s run. The next look that asks reads every sample since the last that
        // asked: over that longer window 0 % no longer shows a process idle (`read`).
        let ask = asks(&listed, known_busy);
        let stale = ask && self.skipped;
        self.skipped = !ask;
        let samples = match ask.then(|| device.process_utilization_stats(self.last_sample_us)) {
            None => None,
            Some(Ok(s)) => Some(s),
            Some(Err(NvmlError::NotFound)) => Some(Vec::new()),
            Some(Err(e)) => {
                limit.get_or_insert(format!("NVML gives no per-process utilisation ({e})"));
                None
            }
        };
        if let Some(s) = &samples {
            self.last_sample_us = s
                .iter()
                .map(|x| x.timestamp)
                .max()
                .unwrap_or(self.last_sample_us)
                .max(self.last_sample_us);
        }
        let neighbours = processes
            .iter()
            .filter(|p| other(p.pid))
            .map(|p| Neighbour {
                pid: p.pid,
                name: std::fs::read_to_string(format!("/proc/{}/comm", p.pid))
                    .map(|s| s.trim().to_string())
                    .unwrap_or_else(|_| "?".into()),
                memory_mib: match p.used_gpu_memory {
                    UsedGpuMemory::Used(b) => Some(b >> 20),
                    UsedGpuMemory::Unavailable => None,
                },
                sm_percent: samples
                    .as_ref()
                    .and_then(|s| read(share(s.iter().map(|x| (x.pid, x.sm_util)), p.pid), stale)),
                memory_percent: samples
                    .as_ref()
                    .and_then(|s| read(share(s.iter().map(|x| (x.pid, x.mem_util)), p.pid), stale)),
            })
            .collect();
        Look { neighbours, limit }
    }
}

/// Whether a look asks NVML for utilisation samples: some process besides ours is listed, and
/// not every one of them is counted busy already by the caller (a neighbour once seen busy
/// stays busy for the run: `Carry`), since no sample could change what is made of those. A
/// look that does not ask leaves their shares unknown, which counts as busy.
fn asks(listed: &[u32], known_busy: &dyn Fn(u32) -> bool) -> bool {
    !listed.is_empty() && !listed.iter().all(|&pid| known_busy(pid))
}

/// A share as one look reads it: over a window longer than since the look before (`stale`:
/// looks in between did not ask), the samples may all predate a process that started since,
/// so 0 % is unknown there (counted busy) rather than idle.
fn read(share: Option<u32>, stale: bool) -> Option<u32> {
    share.filter(|&s| !stale || s > 0)
}

/// A process's share from the samples of one look: the largest of its own; 0 when the look holds
/// samples but none of it (NVML samples only processes that ran work in the sampling period, and
/// ours runs claims all the time, so a sample of anyone shows a sampling instant passed); and
/// unknown (`None`, which counts as busy) when the look holds no sample at all. NVML samples a few
/// times a second and a claim lasts milliseconds, so most looks hold none: reading those as 0 %
/// let a neighbour that had just started (a new process, nothing carried for it) pass as idle,
/// and a copy claim beside it was decided wrongly (H100, beside a catalogue loop).
fn share(samples: impl Iterator<Item = (u32, u32)>, pid: u32) -> Option<u32> {
    let mut any = false;
    let mut own = None;
    for (p, v) in samples {
        any = true;
        if p == pid {
            own = Some(own.map_or(v, |o: u32| o.max(v)));
        }
    }
    own.or(any.then_some(0))
}

#[cfg(test)]
mod tests {
    use super::{asks, read, share};

    /// NVML is asked only where some neighbour is listed that the caller does not count busy
    /// already; over a window that spans looks that did not ask, 0 % is unknown.
    #[test]
    fn samples_are_asked_for_only_where_they_can_change_something() {
        let busy = |pid: u32| pid == 7;
        assert!(!asks(&[], &busy), "alone");
        assert!(!asks(&[7], &busy), "every neighbour busy already");
        assert!(asks(&[7, 8], &busy), "a neighbour not known busy");
        assert!(asks(&[8], &|_| false));
        assert_eq!(read(Some(0), false), Some(0));
        assert_eq!(
            read(Some(0), true),
            None,
            "idle over a stale window: unknown"
        );
        assert_eq!(read(Some(30), true), Some(30));
        assert_eq!(read(None, false), None);
    }

    #[test]
    fn a_look_without_samples_leaves_the_share_unknown() {
        let samples = [(10, 5), (7, 40), (10, 20)];
        assert_eq!(share(samples.into_iter(), 10), Some(20), "its largest");
        assert_eq!(
            share(samples.into_iter(), 99),
            Some(0),
            "sampled, not running"
        );
        assert_eq!(
            share(std::iter::empty(), 99),
            None,
            "no sampling instant: unknown"
        );
    }
}
