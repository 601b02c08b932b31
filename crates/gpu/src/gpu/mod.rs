//! The only module that touches cudarc.
//!
//! [`Gpu::process`] opens the GPU of the process, once: it probes the libraries (so a missing
//! driver or NVRTC is an error, not a panic), retains the primary context of device 0 with
//! cudarc's event tracking off, compiles the stamp kernels, and calibrates. Every [`crate::Lab`]
//! of the process shares it, so ten test functions calibrate once and never hold two contexts
//! of their own. [`Gpu::run`] then executes programs, one at a time in the process (the turn,
//! `turn.rs`); everything it returns is plain data.
//!
//! cudarc's event tracking would make every kernel that takes a `CudaSlice` wait on that slice's
//! last use in other streams, hiding the very overlap the claims look for. The executor passes raw
//! device pointers and owns raw stream and event handles, so nothing of the kind can happen; the
//! tracking is switched off anyway, before anything is allocated.
//!
//! **May import:** `measured`, `program`, `border`. It fills the measured data and never judges
//! it; nothing else in the crate names cudarc (`tests/cpu/layers.rs`).

mod buffers;
mod calibrate;
mod capture;
mod clock;
mod copy_rates;
mod copy_witness;
mod cupti;
mod executor;
mod fleet;
mod host_fn;
mod issuer;
mod kernels;
mod memory;
mod multi;
mod multi_timeline;
mod multi_witness;
mod nccl;
mod neighbours;
mod pace;
mod pageable;
mod pinned;
mod pool;
mod probe;
mod ptx_cache;
mod resources;
mod stamps;
pub mod turn;

pub use buffers::pool_keys;
pub use cupti::CUPTI_ENV;
pub use executor::{Execution, TrialPlan};
pub use fleet::device_count;
pub use nccl::{probe as probe_nccl, NVLS_ENV};
pub use neighbours::{forget_child, own_child, Look, Watch, NVML_ENV};
pub use ptx_cache::CACHE_ENV;
pub use stream_litmus_inject::find_cupti;
pub use stream_litmus_inject::{FLUSH_PERIOD_MS, TRACE_BASE_ENV, TRACE_DIR_ENV, TRACE_DRIVER_ENV};

/// Hooks for the executor's error-path test; not part of the API.
#[doc(hidden)]
pub mod testing {
    pub use super::executor::fail_at_op;
    pub use super::host_fn::last_times;
}
pub use kernels::{ADD_SOURCE, STAMP_SOURCE};

use crate::border::error::Error;
use crate::measured::calibration::{Calibration, CopyRates, Device};
use crate::measured::timing::SetupTiming;
use crate::program::{Place, Program};
use cudarc::driver::{sys, CudaContext};
use probe::call;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The GPU of this process, opened by the first [`Gpu::process`] and never closed: a context
/// released while another thread still used one of its own on the same device is one way the
/// driver crashed under parallel tests, and a process opens its GPU once anyway.
static PROCESS: OnceLock<Result<Gpu, Error>> = OnceLock::new();

/// Whether device 0 lets several processes hold a context at once (compute mode `DEFAULT`), as a
/// child started ahead of this process's opening needs (`lab/ahead.rs`): under
/// `EXCLUSIVE_PROCESS` the child's context would take the GPU from this process. Initialises the
/// driver (`cuInit`, which opening does first anyway); `false` wherever that or the question
/// fails.
pub fn contexts_shared() -> bool {
    use cudarc::driver::result;
    let mode = || -> Option<i32> {
        probe::driver().ok()?;
        result::init().ok()?;
        let device = result::device::get(0).ok()?;
        let attribute = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_MODE;
        // SAFETY: a device the driver just gave, and an attribute it defines.
        unsafe { result::device::get_attribute(device, attribute) }.ok()
    };
    mode() == Some(sys::CUcomputemode::CU_COMPUTEMODE_DEFAULT as i32)
}

/// What a gate ([`Gpu::process_with`]) leaves running while the opening goes on: a child
/// process that ran its claims ahead and answered, and is exiting (`lab/ahead.rs`), its context
/// torn down by the driver (22–27 ms on an H200's host). Nothing is measured beside it: the
/// opening makes the pool blocks the process will ask for first while it runs, then waits for
/// its end before it calibrates.
pub trait Settle {
    /// The pool's blocks (place and bytes) the process will ask for first, in order of need.
    fn blocks(&self) -> Vec<(Place, usize)>;
    /// Whether it has ended.
    fn ended(&mut self) -> bool;
    /// Waits for its end.
    fn finish(self: Box<Self>);
}

/// When an opening GPU opens NVML's watch on itself (`neighbours.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFrom {
    /// At once, on a thread of its own while the context is made: a process that looks around
    /// its claims (NVML's start and the device's handle took about 17 ms on an H200's host).
    Start,
    /// At the first look, if one comes: a child process, which its parent looks around.
    FirstLook,
}

/// Where an opening GPU takes its copy rates from (`copy_rates.rs`).
#[derive(Debug, Clone, Copy)]
pub enum RatesFrom {
    /// Another process's, on the same device: a child run at its turn takes its parent's.
    Given(CopyRates),
    /// Those kept from earlier runs that had the GPU alone, where every kind is there, else
    /// measured: a child started ahead (`lab/ahead.rs`), whose parent has measured nothing yet.
    /// Measuring cost a child about 30 ms (the copies, and NVML opened to tell whether it was
    /// alone, which it never is), and a child's rates, measured beside its parent's context,
    /// are never kept.
    KeptElseMeasured,
    /// Measured now, merged with the kept ones.
    Measured,
}

/// An open device: context, compiled kernels and calibration.
pub struct Gpu {
    /// Memory kept from program to program (`pool.rs`); declared first, so it is freed while
    /// the context is still held.
    kept: Mutex<executor::Kept>,
    ctx: Arc<CudaContext>,
    kernels: kernels::Kernels,
    calibration: Calibration,
    setup: Duration,
    split: SetupTiming,
    /// NVML on this GPU, opened on the first look (or in the gate of its opening).
    watch: std::sync::Mutex<neighbours::Watch>,
    pci_bus_id: Option<String>,
    /// Devices 1.. for programs on several GPUs, opened by the first such program
    /// (`fleet.rs`); declared before `ctx` so they are freed first.
    fleet: Mutex<Option<fleet::Fleet>>,
}

impl Gpu {
    /// Device 0 of this process, opened and calibrated by the first call (under the process's
    /// turn) and shared by every later one, from any thread; a failure to open is kept too, so
    /// every caller gets the same error. The driver reads environment variables such as
    /// `CUDA_DEVICE_MAX_CONNECTIONS` here, once per process.
    pub fn process() -> Result<&'static Gpu, Error> {
        Gpu::process_with(None, RatesFrom::Measured, WatchFrom::Start, |_| None)
    }

    /// [`Gpu::process`], where the first call loads the kernels from `ptx` (another process's
    /// [`Gpu::ptx`] for the same device) instead of compiling them when the driver takes it (a
    /// child process skips NVRTC that way), and takes its copy rates where `rates` says. The
    /// first call also runs `gate` between opening the device (context, CUPTI, kernels) and
    /// calibrating it, with NVML's watch on it: a child started ahead waits there for its go,
    /// and the parent runs that child's claims there (`lab/ahead.rs`); the time it takes counts
    /// in no part of the setup. Later calls return the GPU already open.
    pub fn process_with<'g>(
        ptx: Option<&str>,
        rates: RatesFrom,
        watch: WatchFrom,
        gate: impl FnOnce(&mut Watch) -> Option<Box<dyn Settle + 'g>>,
    ) -> Result<&'static Gpu, Error> {
        if let Some(opened) = PROCESS.get() {
            return opened.as_ref().map_err(Clone::clone);
        }
        // The turn before the cell: a thread that holds the turn and asks for the GPU takes the
        // turn again at once, so no thread ever waits for the cell while holding the turn.
        let _turn = turn::take();
        PROCESS
            .get_or_init(|| Gpu::open_with(ptx, rates, watch, gate))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The GPU of this process if it is open, without opening it.
    pub fn opened() -> Option<&'static Gpu> {
        PROCESS.get().and_then(|g| g.as_ref().ok())
    }

    /// Opens device 0 (once per process: [`Gpu::process_with`]).
    fn open_with<'g>(
        ptx: Option<&str>,
        rates: RatesFrom,
        watch: WatchFrom,
        gate: impl FnOnce(&mut Watch) -> Option<Box<dyn Settle + 'g>>,
    ) -> Result<Gpu, Error> {
        let started = Instant::now();
        let mut lap = started;
        let mut to = |part: &mut u64| {
            let now = Instant::now();
            *part = (now - lap).as_nanos() as u64;
            lap = now;
        };
        let mut split = SetupTiming::default();
        probe::driver()?;
        // NVML opens on a thread of its own while the context is made (`WatchFrom::Start`), so
        // the first look does not wait for it.
        let pci_bus_id = pci_bus_id();
        let mut watch = match watch {
            WatchFrom::Start => neighbours::Watch::opening(pci_bus_id.clone()),
            WatchFrom::FirstLook => neighbours::Watch::new(pci_bus_id.clone()),
        };
        let ctx = CudaContext::new(0).map_err(probe::init_error)?;
        // SAFETY: called before any allocation or stream creation through this context.
        unsafe { ctx.disable_event_tracking() };
        to(&mut split.context_ns);
        let device = device(&ctx)?;
        to(&mut split.device_ns);
        let kernels = kernels::Kernels::build_from(&ctx, ptx)?;
        to(&mut split.kernels_ns);
        let mut waited_ns = 0;
        let settling = gate(&mut watch);
        to(&mut waited_ns);
        let mut kept = executor::Kept::default();
        if let Some(mut settling) = settling {
            for (place, bytes) in settling.blocks() {
                if settling.ended() {
                    break;
                }
                match <buffers::Driver as pool::Allocator>::alloc(place, bytes) {
                    Ok(block) => kept.pool.give(place, bytes, block),
                    Err(_) => break, // the claim that needs it will say why
                }
            }
            settling.finish();
        }
        let mut settled_ns = 0;
        to(&mut settled_ns);
        waited_ns += settled_ns;
        let calibration = calibrate::calibrate(&kernels, device)?;
        let mut gpu = Gpu {
            split,
            pci_bus_id,
            kept: Mutex::new(kept),
            ctx,
            kernels,
            calibration,
            setup: Duration::ZERO,
            watch: std::sync::Mutex::new(watch),
            fleet: Mutex::new(None),
        };
        gpu.calibration.copy_rates = match rates {
            RatesFrom::Given(rates) => Some(rates),
            RatesFrom::KeptElseMeasured => gpu.kept_copy_rates().or_else(|| gpu.copy_rates()),
            RatesFrom::Measured => gpu.copy_rates(),
        };
        to(&mut gpu.split.calibration_ns);
        gpu.setup = started.elapsed() - Duration::from_nanos(waited_ns);
        Ok(gpu)
    }

    /// The copy rates of this GPU (`copy_rates.rs`): measured now, merged with those kept from
    /// runs that had the GPU alone, and kept when this one has it alone too. `None` when the
    /// copies fail (the copy rule then falls back to the neighbours NVML sees).
    fn copy_rates(&self) -> Option<CopyRates> {
        let look = self.neighbours();
        // Alone when NVML listed the processes and none but ours; a listing it could not make
        // (no NVML, no permission) says nothing.
        let listed = look.limit.as_deref().map_or(true, |why| {
            why.starts_with("NVML gives no per-process utilisation")
                || why.starts_with("NVML lists processes by ids")
        });
        let alone = listed && look.neighbours.is_empty();
        let measured = copy_rates::measure(alone).ok()?;
        let kept = self.pci_bus_id.as_deref().and_then(|id| {
            copy_rates::kept_file(id, self.calibration.device.driver_release.as_deref()?)
        });
        Some(copy_rates::settle(measured, kept.as_deref()))
    }

    /// The copy rates kept from runs that had this GPU alone, where every kind is there.
    fn kept_copy_rates(&self) -> Option<CopyRates> {
        let driver = self.calibration.device.driver_release.as_deref()?;
        let kept = copy_rates::kept_file(self.pci_bus_id.as_deref()?, driver)?;
        copy_rates::read_kept(&kept).filter(|r| {
            [r.h2d_pinned, r.d2h_pinned, r.h2d_pageable, r.d2h_pageable]
                .iter()
                .all(Option::is_some)
        })
    }

    /// The other processes with a context on this GPU now, or why they cannot be seen.
    pub fn neighbours(&self) -> Look {
        self.neighbours_knowing(&|_| false)
    }

    /// [`Gpu::neighbours`], where the caller counts the processes `known_busy` names as busy
    /// whatever the look reads of them ([`Watch::look_knowing`]).
    pub fn neighbours_knowing(&self, known_busy: &dyn Fn(u32) -> bool) -> Look {
        let mut watch = self.watch.lock().unwrap_or_else(|e| e.into_inner());
        watch.look_knowing(known_busy)
    }

    /// The PTX the kernels were loaded from.
    pub fn ptx(&self) -> &str {
        self.kernels.ptx()
    }

    pub fn calibration(&self) -> &Calibration {
        &self.calibration
    }

    /// Time spent opening: context creation, NVRTC, calibration.
    pub fn setup_time(&self) -> Duration {
        self.setup
    }

    /// Where [`Gpu::setup_time`] went.
    pub fn setup_split(&self) -> SetupTiming {
        self.split
    }

    /// Runs `trials` trials of `program` in this process: the timelines and what they cost, as
    /// plain data (the lab makes the results file's `Trials` of them, with the calibration).
    pub fn run(&self, program: &Program, trials: usize) -> Result<Execution, Error> {
        self.run_watched(program, trials, false)
    }

    /// [`Gpu::run`], with the host's pace watched while each trial is issued when `pace` is set
    /// (for checks that compare amounts of host time; see `pace.rs`).
    pub fn run_watched(
        &self,
        program: &Program,
        trials: usize,
        pace: bool,
    ) -> Result<Execution, Error> {
        let how = TrialPlan {
            warm_up: true,
            watch_host: pace,
        };
        self.run_as(program, trials, how)
    }

    /// [`Gpu::run`] as `how` says: `fuzz` runs each program's one trial without the warm-up
    /// (see `executor::run_trials`), a program on several devices always with it.
    pub fn run_as(
        &self,
        program: &Program,
        trials: usize,
        how: TrialPlan,
    ) -> Result<Execution, Error> {
        let _turn = turn::take();
        self.ctx.bind_to_thread().map_err(call("cuCtxSetCurrent"))?;
        if program.is_multi_device() {
            return self.run_multi(program, trials);
        }
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        executor::execute_with(
            &self.kernels,
            &mut kept,
            self.calibration.cycles_per_ns,
            program,
            trials,
            how,
        )
    }
}

impl Gpu {
    /// A program on several GPUs: devices 1.. are opened on first use and kept.
    fn run_multi(&self, program: &Program, trials: usize) -> Result<Execution, Error> {
        let mut fleet = self.fleet.lock().unwrap_or_else(|p| p.into_inner());
        let need = program.device_count();
        if fleet
            .as_ref()
            .map_or(true, |f| (f.peers.len() as u32) + 1 < need)
        {
            *fleet = None;
            *fleet = Some(fleet::Fleet::open(&self.ctx, need)?);
        }
        let fleet = fleet.as_mut().expect("opened above");
        let cycles = self.calibration.cycles_per_ns;
        multi::execute(&self.ctx, &self.kernels, fleet, cycles, program, trials)
    }
}

/// Device 0's "0000:18:00.0", the form NVML looks devices up by; asked before its context is
/// made (`None` where the driver does not start: the context's own error says why).
fn pci_bus_id() -> Option<String> {
    use sys::CUdevice_attribute as A;
    cudarc::driver::result::init().ok()?;
    let device = cudarc::driver::result::device::get(0).ok()?;
    // SAFETY: `device` came from `cuDeviceGet`.
    let attr = |a| unsafe { cudarc::driver::result::device::get_attribute(device, a) }.ok();
    Some(format!(
        "{:04x}:{:02x}:{:02x}.0",
        attr(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
        attr(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
        attr(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?
    ))
}

fn device(ctx: &Arc<CudaContext>) -> Result<Device, Error> {
    use sys::CUdevice_attribute as A;
    let attr = |a| ctx.attribute(a).map_err(call("cuDeviceGetAttribute"));
    let mut driver_version = 0;
    // SAFETY: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut driver_version) }
        .result()
        .map_err(call("cuDriverGetVersion"))?;
    Ok(Device {
        name: ctx.name().map_err(call("cuDeviceGetName"))?,
        driver_version,
        driver_release: driver_release(),
        compute_capability: ctx
            .compute_capability()
            .map_err(call("cuDeviceGetAttribute"))?,
        sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        clock_khz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? as u32,
        priority_range: cudarc::driver::result::stream::get_priority_range().ok(),
        async_engines: attr(A::CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT)
            .ok()
            .map(|n| n as u32),
        cupti: cupti::start().ok(),
    })
}

/// The NVIDIA kernel module's release from `/proc/driver/nvidia/version` (Linux): the first
/// dotted number of the "NVRM version" line, which reads "… Kernel Module  580.159.04 …" or
/// "… Open Kernel Module for x86_64  580.95.05 …".
fn driver_release() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    release_in(text.lines().find(|l| l.starts_with("NVRM version"))?)
}

fn release_in(line: &str) -> Option<String> {
    line.split_whitespace()
        .find(|w| w.contains('.') && w.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    #[test]
    fn driver_release_is_read_from_both_module_flavours() {
        let closed = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu Oct  2 2025";
        let open =
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build";
        assert_eq!(super::release_in(closed).as_deref(), Some("580.159.04"));
        assert_eq!(super::release_in(open).as_deref(), Some("580.95.05"));
        assert_eq!(super::release_in("NVRM version: unknown"), None);
    }
}
