//! The stamp kernels: `kernels/stamp.cu`, compiled once per process with NVRTC for the device's
//! own architecture, and launched through the raw driver API. A child process (`child.rs`) loads
//! the parent's PTX instead of compiling it again, part of what a child costs every claim it runs,
//! and any process loads the PTX an earlier one kept on disk (`ptx_cache.rs`).

use super::probe::{call, describe};
use super::ptx_cache::PtxCache;
use crate::border::error::Error;
use cudarc::driver::{result, sys, CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions, Ptx};
use std::ffi::c_void;
use std::sync::Arc;

/// The CUDA C source, embedded so the binary runs from any directory.
pub const STAMP_SOURCE: &str = include_str!("../../../../kernels/stamp.cu");

/// The data kernel, compiled after [`STAMP_SOURCE`] in one module (it uses its timer helpers).
pub const ADD_SOURCE: &str = include_str!("../../../../kernels/vector_add.cu");

/// The marker kernel's name, by which the witness finds it among CUPTI's records.
pub const MARKER_KERNEL: &str = "witness_marker";

/// Whether a marker kernel was launched since CUPTI's records were last all taken: the copy
/// witness takes a program's records once, after its last trial, and pairs the markers among
/// them in order, so a marker left over from before (an earlier program that stopped at an
/// error, a multi-GPU witness's) must be flushed away first; without one that flush is skipped
/// (see `copy_witness::Witness::reset`). Set by every marker launch, cleared by that witness.
pub static MARKERS_UNCOLLECTED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(true);

/// The clock alignment's ping kernel (`clock.rs`). It may still run when a trial's first witness
/// marker is enqueued (the two share one wait), so the witness leaves its CUPTI records out.
pub const PING_KERNEL: &str = "clock_ping";

/// Words of stamp per block: start, end, SM, cycles, and the longest clock gap with its start.
pub const WORDS_PER_BLOCK: usize = 6;

/// The loaded module and its functions.
pub struct Kernels {
    _module: Arc<CudaModule>,
    /// The PTX the module was loaded from, handed to child processes so that they skip NVRTC.
    ptx: String,
    spin: CudaFunction,
    timer_step: CudaFunction,
    clock_ping: CudaFunction,
    vector_add: CudaFunction,
    marker: CudaFunction,
    fill: CudaFunction,
    differs: CudaFunction,
}

impl Kernels {
    /// Loads `ptx` (the parent process's, see `child.rs`) if it is given and the driver takes it;
    /// else the PTX kept on disk by an earlier process (`ptx_cache.rs`); else compiles, as
    /// [`Kernels::build`], and keeps the PTX for the next process.
    pub fn build_from(ctx: &Arc<CudaContext>, ptx: Option<&str>) -> Result<Kernels, Error> {
        if let Some(k) = ptx.and_then(|src| Kernels::load(ctx, src)) {
            return Ok(k);
        }
        let (source, arch) = Kernels::source_for(ctx)?;
        let cache = PtxCache::for_source(&source, &arch);
        let kept = cache.as_ref().and_then(PtxCache::read);
        if let Some(k) = kept.and_then(|src| Kernels::load(ctx, &src)) {
            return Ok(k);
        }
        let k = Kernels::build(ctx)?;
        if let Some(c) = cache {
            c.write(k.ptx());
        }
        Ok(k)
    }

    /// The module from PTX, if the driver takes it and it has every kernel.
    fn load(ctx: &Arc<CudaContext>, src: &str) -> Option<Kernels> {
        let module = ctx.load_module(Ptx::from_src(src)).ok()?;
        Kernels::from_module(module, src.to_string()).ok()
    }

    /// The whole source and the architecture option for the device.
    fn source_for(ctx: &Arc<CudaContext>) -> Result<(String, String), Error> {
        let (major, minor) = ctx
            .compute_capability()
            .map_err(call("cuDeviceGetAttribute"))?;
        Ok((
            format!("{STAMP_SOURCE}\n{ADD_SOURCE}"),
            format!("--gpu-arch=compute_{major}{minor}"),
        ))
    }

    /// Compiles for the device's compute capability; if this NVRTC does not know that
    /// architecture, falls back to NVRTC's default and lets the driver JIT the PTX.
    pub fn build(ctx: &Arc<CudaContext>) -> Result<Kernels, Error> {
        super::probe::nvrtc()?;
        let (source, arch) = Kernels::source_for(ctx)?;
        let ptx = compile_ptx_with_opts(
            &source,
            CompileOptions {
                options: vec![arch],
                ..Default::default()
            },
        )
        .or_else(|_| compile_ptx_with_opts(&source, CompileOptions::default()))
        .map_err(|e| Error::Kernel {
            detail: compile_error(e),
        })?;
        let src = ptx.to_src();
        let module = ctx.load_module(ptx).map_err(|e| Error::Kernel {
            detail: format!(
                "the driver could not load the PTX NVRTC produced: {}. If it says the PTX version \
                 is unsupported, this NVRTC is newer than the driver: use an NVRTC no newer than \
                 the driver's CUDA version",
                describe(e)
            ),
        })?;
        Kernels::from_module(module, src)
    }

    fn from_module(module: Arc<CudaModule>, ptx: String) -> Result<Kernels, Error> {
        let load = |name: &str| {
            module.load_function(name).map_err(|e| Error::Kernel {
                detail: format!("function {name} is missing: {}", describe(e)),
            })
        };
        Ok(Kernels {
            spin: load("spin_stamp")?,
            timer_step: load("timer_step")?,
            clock_ping: load(PING_KERNEL)?,
            vector_add: load("vector_add")?,
            marker: load(MARKER_KERNEL)?,
            fill: load("fill_words")?,
            differs: load("differs_from_first")?,
            _module: module,
            ptx,
        })
    }

    /// The PTX of the loaded module.
    pub fn ptx(&self) -> &str {
        &self.ptx
    }

    /// Enqueues `spin_stamp<<<grid, block, 0, stream>>>(stamps, cycles)`.
    pub fn launch_spin(
        &self,
        stream: sys::CUstream,
        stamps: sys::CUdeviceptr,
        cycles: i64,
        grid: u32,
        block: u32,
    ) -> Result<(), Error> {
        self.launch_spin_fn(&self.spin, stream, stamps, cycles, (grid, block))
    }

    /// Enqueues the witness's one-block marker, a spin under its own name.
    pub fn launch_marker(
        &self,
        stream: sys::CUstream,
        stamps: sys::CUdeviceptr,
        cycles: i64,
    ) -> Result<(), Error> {
        MARKERS_UNCOLLECTED.store(true, std::sync::atomic::Ordering::SeqCst);
        self.launch_spin_fn(&self.marker, stream, stamps, cycles, (1, 32))
    }

    /// How many parameters the stamped kernel of `kind` takes (its first is the stamp pointer):
    /// what a later launch of a graph copies when it points a node at its own records.
    pub fn params_of(kind: &crate::program::OpKind) -> usize {
        match kind {
            crate::program::OpKind::Add { .. } => 5,
            _ => 2,
        }
    }

    fn launch_spin_fn(
        &self,
        f: &CudaFunction,
        stream: sys::CUstream,
        stamps: sys::CUdeviceptr,
        cycles: i64,
        (grid, block): (u32, u32),
    ) -> Result<(), Error> {
        let mut stamps = stamps;
        let mut cycles = cycles;
        let mut params = [
            &mut stamps as *mut sys::CUdeviceptr as *mut c_void,
            &mut cycles as *mut i64 as *mut c_void,
        ];
        // SAFETY: spin_stamp takes (unsigned long long*, long long); `stamps` points at
        // `grid * WORDS_PER_BLOCK` words the executor allocated.
        unsafe { launch(f, stream, (grid, block), &mut params) }
            .map_err(call("cuLaunchKernel(spin_stamp)"))
    }

    /// Enqueues `timer_step<<<1, 1, 0, stream>>>(out, samples)`; `out` needs three words.
    pub fn launch_timer_step(
        &self,
        stream: sys::CUstream,
        out: sys::CUdeviceptr,
        samples: i32,
    ) -> Result<(), Error> {
        let mut out = out;
        let mut samples = samples;
        let mut params = [
            &mut out as *mut sys::CUdeviceptr as *mut c_void,
            &mut samples as *mut i32 as *mut c_void,
        ];
        // SAFETY: timer_step takes (unsigned long long*, int); `out` holds three words.
        unsafe { launch(&self.timer_step, stream, (1, 1), &mut params) }
            .map_err(call("cuLaunchKernel(timer_step)"))
    }
}

impl Kernels {
    /// Enqueues `vector_add<<<grid, block, 0, stream>>>(stamps, out, a, b, n)`.
    #[allow(clippy::too_many_arguments)]
    pub fn launch_add(
        &self,
        stream: sys::CUstream,
        stamps: sys::CUdeviceptr,
        (out, a, b): (sys::CUdeviceptr, sys::CUdeviceptr, sys::CUdeviceptr),
        n: u64,
        grid: u32,
        block: u32,
    ) -> Result<(), Error> {
        let (mut stamps, mut out, mut a, mut b, mut n) = (stamps, out, a, b, n);
        let mut params = [
            &mut stamps as *mut sys::CUdeviceptr as *mut c_void,
            &mut out as *mut sys::CUdeviceptr as *mut c_void,
            &mut a as *mut sys::CUdeviceptr as *mut c_void,
            &mut b as *mut sys::CUdeviceptr as *mut c_void,
            &mut n as *mut u64 as *mut c_void,
        ];
        // SAFETY: vector_add takes (unsigned long long*, float*, const float*, const float*,
        // unsigned long long); the three buffers hold at least `n` floats and `stamps` holds
        // `grid * WORDS_PER_BLOCK` words.
        unsafe { launch(&self.vector_add, stream, (grid, block), &mut params) }
            .map_err(call("cuLaunchKernel(vector_add)"))
    }

    /// Enqueues `fill_words(p, n, value)`, which sets `n` 32-bit words at `p` to `value`;
    /// nothing for `n == 0`.
    pub fn launch_fill(
        &self,
        stream: sys::CUstream,
        p: sys::CUdeviceptr,
        n: u64,
        value: u32,
    ) -> Result<(), Error> {
        const BLOCK: u32 = 256;
        if n == 0 {
            return Ok(());
        }
        // Enough blocks to reach full write bandwidth; each thread loops over the rest.
        let grid = n.div_ceil(u64::from(BLOCK)).min(1024) as u32;
        let (mut p, mut n, mut value) = (p, n, value);
        let mut params = [
            &mut p as *mut sys::CUdeviceptr as *mut c_void,
            &mut n as *mut u64 as *mut c_void,
            &mut value as *mut u32 as *mut c_void,
        ];
        // SAFETY: fill_words takes (unsigned int*, unsigned long long, unsigned int); `p` holds
        // at least `n` words.
        unsafe { launch(&self.fill, stream, (grid, BLOCK), &mut params) }
            .map_err(call("cuLaunchKernel(fill_words)"))
    }

    /// Enqueues `differs_from_first(p, n, out)`, which leaves in `out[0]` a non-zero word if any
    /// of the `n` 32-bit words at `p` differs from the first (the caller zeroes it before), and
    /// the first word in `out[1]`; nothing for `n == 0`.
    pub fn launch_differs(
        &self,
        stream: sys::CUstream,
        p: sys::CUdeviceptr,
        n: u64,
        out: sys::CUdeviceptr,
    ) -> Result<(), Error> {
        const BLOCK: u32 = 256;
        if n == 0 {
            return Ok(());
        }
        // As many blocks as the fill: enough to read at full bandwidth.
        let grid = n.div_ceil(u64::from(BLOCK)).min(1024) as u32;
        let (mut p, mut n, mut out) = (p, n, out);
        let mut params = [
            &mut p as *mut sys::CUdeviceptr as *mut c_void,
            &mut n as *mut u64 as *mut c_void,
            &mut out as *mut sys::CUdeviceptr as *mut c_void,
        ];
        // SAFETY: differs_from_first takes (const unsigned int*, unsigned long long, unsigned
        // int*); `p` holds at least `n` words and `out` two.
        unsafe { launch(&self.differs, stream, (grid, BLOCK), &mut params) }
            .map_err(call("cuLaunchKernel(differs_from_first)"))
    }

    /// Enqueues `clock_ping<<<1, 1, 0, stream>>>(mailbox, rounds, timeout_ns)`; `mailbox` is the
    /// device address of mapped host memory of `rounds + 2` words.
    pub fn launch_clock_ping(
        &self,
        stream: sys::CUstream,
        mailbox: sys::CUdeviceptr,
        rounds: i32,
        timeout_ns: u64,
    ) -> Result<(), Error> {
        let mut mailbox = mailbox;
        let mut rounds = rounds;
        let mut timeout_ns = timeout_ns;
        let mut params = [
            &mut mailbox as *mut sys::CUdeviceptr as *mut c_void,
            &mut rounds as *mut i32 as *mut c_void,
            &mut timeout_ns as *mut u64 as *mut c_void,
        ];
        // SAFETY: clock_ping takes (volatile unsigned long long*, int, unsigned long long);
        // `mailbox` holds rounds + 2 words.
        unsafe { launch(&self.clock_ping, stream, (1, 1), &mut params) }
            .map_err(call("cuLaunchKernel(clock_ping)"))
    }
}

/// `cuLaunchKernel` with a 1-D grid and block and no shared memory.
///
/// # Safety
/// `params` must point at values of exactly the types `f` takes, alive for the call (the driver
/// copies them at launch), and any pointers among them must be valid for what `f` writes.
unsafe fn launch(
    f: &CudaFunction,
    stream: sys::CUstream,
    (grid, block): (u32, u32),
    params: &mut [*mut c_void],
) -> Result<(), cudarc::driver::DriverError> {
    result::launch_kernel(
        f.cu_function(),
        (grid, 1, 1),
        (block, 1, 1),
        0,
        stream,
        params,
    )
}

fn compile_error(e: CompileError) -> String {
    match e {
        CompileError::CompileError {
            nvrtc,
            options,
            log,
        } => format!(
            "NVRTC error {nvrtc:?} with options {options:?}:\n{}",
            log.to_string_lossy()
        ),
        other => format!("NVRTC failed: {other:?}"),
    }
}
