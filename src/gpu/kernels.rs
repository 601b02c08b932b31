//! The stamp kernels: `kernels/stamp.cu`, compiled once per process with NVRTC for the device's
//! own architecture, and launched through the raw driver API.

use super::probe::{call, describe};
use crate::error::Error;
use cudarc::driver::{result, sys, CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions};
use std::ffi::c_void;
use std::sync::Arc;

/// The CUDA C source, embedded so the binary runs from any directory.
pub const STAMP_SOURCE: &str = include_str!("../../kernels/stamp.cu");

/// Words of stamp per block: start, end, SM, cycles.
pub const WORDS_PER_BLOCK: usize = 4;

/// The loaded module and its functions.
pub struct Kernels {
    _module: Arc<CudaModule>,
    spin: CudaFunction,
    timer_step: CudaFunction,
    clock_ping: CudaFunction,
}

impl Kernels {
    /// Compiles for the device's compute capability; if this NVRTC does not know that
    /// architecture, falls back to NVRTC's default and lets the driver JIT the PTX.
    pub fn build(ctx: &Arc<CudaContext>) -> Result<Kernels, Error> {
        let (major, minor) = ctx
            .compute_capability()
            .map_err(call("cuDeviceGetAttribute"))?;
        let arch = format!("--gpu-arch=compute_{major}{minor}");
        let ptx = compile_ptx_with_opts(
            STAMP_SOURCE,
            CompileOptions {
                options: vec![arch],
                ..Default::default()
            },
        )
        .or_else(|_| compile_ptx_with_opts(STAMP_SOURCE, CompileOptions::default()))
        .map_err(|e| Error::Kernel {
            detail: compile_error(e),
        })?;
        let module = ctx.load_module(ptx).map_err(|e| Error::Kernel {
            detail: format!(
                "the driver could not load the PTX NVRTC produced: {}. If it says the PTX version \
                 is unsupported, this NVRTC is newer than the driver: use an NVRTC no newer than \
                 the driver's CUDA version",
                describe(e)
            ),
        })?;
        let load = |name: &str| {
            module.load_function(name).map_err(|e| Error::Kernel {
                detail: format!("function {name} is missing: {}", describe(e)),
            })
        };
        Ok(Kernels {
            spin: load("spin_stamp")?,
            timer_step: load("timer_step")?,
            clock_ping: load("clock_ping")?,
            _module: module,
        })
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
        let mut stamps = stamps;
        let mut cycles = cycles;
        let mut params = [
            &mut stamps as *mut sys::CUdeviceptr as *mut c_void,
            &mut cycles as *mut i64 as *mut c_void,
        ];
        // SAFETY: spin_stamp takes (unsigned long long*, long long); `stamps` points at
        // `grid * WORDS_PER_BLOCK` words the executor allocated.
        unsafe { launch(&self.spin, stream, (grid, block), &mut params) }
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
