//! The other devices of a program on several GPUs: their primary contexts, stamp kernels, clock
//! mailboxes and memory pools, and the NCCL communicators; opened once, on the first such
//! program, and kept by the `Gpu` (device 0 stays the `Gpu`'s own).
//!
//! Every device gets what device 0 has: its own compiled stamp kernel (a module is loaded per
//! context), a mailbox of mapped host memory for its own clock alignment (`clock.rs`), and a
//! pool for its buffers and stamp words. Nothing is opened on a one-GPU machine: asking for a
//! second device there is an [`Error::Devices`] that says how many the machine has.

use super::buffers::Driver;
use super::clock::Mailbox;
use super::kernels::Kernels;
use super::nccl::Comms;
use super::pool::Pool;
use super::probe::call;
use crate::border::error::Error;
use cudarc::driver::{sys, CudaContext};
use std::sync::Arc;

/// One device other than 0.
pub struct Peer {
    pub ctx: Arc<CudaContext>,
    pub kernels: Kernels,
}

/// Devices 1.. and what every device needs in a multi-device program.
pub struct Fleet {
    /// Pools per device, device 0 first; declared first, so they are freed while the contexts
    /// are still held.
    pub pools: Vec<Pool<Driver>>,
    pub mailboxes: Vec<Mailbox>,
    pub comms: Option<Result<Comms, Error>>,
    pub peers: Vec<Peer>,
}

/// How many CUDA devices the driver sees (0 without a driver: the library is probed first,
/// since cudarc would panic on a missing one).
pub fn device_count() -> u32 {
    if super::probe::driver().is_err() {
        return 0;
    }
    CudaContext::device_count().map_or(0, |n| n.max(0) as u32)
}

impl Fleet {
    /// Opens devices `1..n` beside device 0's `ctx0`.
    pub fn open(ctx0: &Arc<CudaContext>, n: u32) -> Result<Fleet, Error> {
        let have = device_count();
        if have < n {
            return Err(Error::Devices {
                needed: n,
                detail: format!(
                    "this machine has {have} CUDA device(s) (check nvidia-smi -L and \
                     CUDA_VISIBLE_DEVICES); multi-GPU claims are listed as skipped there"
                ),
            });
        }
        let mut peers = Vec::new();
        let mut mailboxes = Vec::new();
        ctx0.bind_to_thread().map_err(call("cuCtxSetCurrent"))?;
        mailboxes.push(Mailbox::alloc()?);
        for d in 1..n as usize {
            let ctx = CudaContext::new(d).map_err(super::probe::init_error)?;
            // SAFETY: before any allocation or stream creation through this context.
            unsafe { ctx.disable_event_tracking() };
            ctx.bind_to_thread().map_err(call("cuCtxSetCurrent"))?;
            let kernels = Kernels::build(&ctx)?;
            mailboxes.push(Mailbox::alloc()?);
            peers.push(Peer { ctx, kernels });
        }
        ctx0.bind_to_thread().map_err(call("cuCtxSetCurrent"))?;
        Ok(Fleet {
            pools: (0..n).map(|_| Pool::default()).collect(),
            mailboxes,
            comms: None,
            peers,
        })
    }

    /// The communicators, opened on first use; an error (no NCCL) is kept and repeated, so only
    /// programs with an all-reduce fail with it.
    pub fn comms(&mut self, ctx0: &Arc<CudaContext>) -> Result<&Comms, Error> {
        let n = self.peers.len() + 1;
        let opened = self.comms.get_or_insert_with(|| Comms::open(n));
        ctx0.bind_to_thread().map_err(call("cuCtxSetCurrent"))?;
        opened.as_ref().map_err(Clone::clone)
    }
}

/// Peer access between every pair of `ctxs`, on or off, for one program's trials.
pub fn peer_access(ctxs: &[&Arc<CudaContext>], on: bool) -> Result<(), Error> {
    for (a, from) in ctxs.iter().enumerate() {
        for (b, to) in ctxs.iter().enumerate() {
            if a == b {
                continue;
            }
            from.bind_to_thread().map_err(call("cuCtxSetCurrent"))?;
            // SAFETY: both contexts are alive; the calls only change their mappings.
            let r = unsafe {
                if on {
                    sys::cuCtxEnablePeerAccess(to.cu_ctx(), 0)
                } else {
                    sys::cuCtxDisablePeerAccess(to.cu_ctx())
                }
            };
            use sys::CUresult as R;
            match r {
                R::CUDA_SUCCESS
                | R::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
                | R::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED => {}
                other => {
                    let name = if on {
                        "cuCtxEnablePeerAccess"
                    } else {
                        "cuCtxDisablePeerAccess"
                    };
                    return Err(call(name)(cudarc::driver::result::DriverError(other)));
                }
            }
        }
    }
    Ok(())
}
