//! NCCL, loaded at run time: one communicator per device of this process, for the all-reduces
//! of programs on several GPUs.
//!
//! cudarc's `nccl` feature is built with dynamic loading like its other libraries, so neither the
//! build nor any claim without an all-reduce needs NCCL. Its loader panics on a missing library,
//! so [`probe`] looks first and turns absence into an [`Error::NoNccl`] that names every file
//! name it tried. Communicators come from `ncclCommInitAll` (one process drives every device;
//! no unique id to exchange) and live as long as the `Gpu`.
//!
//! NVLink multicast (NVLS) stays off: NCCL would otherwise create multicast objects on hosts
//! whose NVLink fabric is shared. We never call `cuMulticastCreate` ourselves, and before the
//! first communicator we set `NCCL_NVLS_ENABLE=0` in our own environment when it is unset (an
//! explicit value, the user's choice, is left as it is). Child processes inherit it, since their
//! environment is never cleared.

use crate::error::Error;
use cudarc::nccl::{result, sys};
use std::ffi::c_int;

/// The NCCL variable that switches NVLink SHARP / multicast collectives.
pub const NVLS_ENV: &str = "NCCL_NVLS_ENABLE";

/// Fails with where it looked unless `libnccl` loads.
pub fn probe() -> Result<(), Error> {
    // SAFETY: only tries to dlopen the library by its candidate names; no symbol is called.
    if unsafe { sys::is_culib_present() } {
        return Ok(());
    }
    let looked = cudarc::get_lib_name_candidates("nccl").join(", ");
    let path = std::env::var("LD_LIBRARY_PATH").unwrap_or_else(|_| "unset".into());
    Err(Error::NoNccl {
        detail: format!(
            "libnccl could not be loaded: looked for {looked} through the dynamic loader \
             (LD_LIBRARY_PATH={path}, then the ldconfig cache and the system directories). \
             Install NCCL (libnccl2) or add the directory holding libnccl.so.2 to \
             LD_LIBRARY_PATH; only the all-reduce claims need it"
        ),
    })
}

/// Sets `NCCL_NVLS_ENABLE=0` unless the environment already says something.
pub fn keep_nvls_off() {
    if std::env::var_os(NVLS_ENV).is_none() {
        // Our own environment only, before NCCL reads it; set once, before any NCCL thread
        // exists.
        std::env::set_var(NVLS_ENV, "0");
    }
}

/// One communicator per device `0..n`, rank = device.
pub struct Comms {
    comms: Vec<sys::ncclComm_t>,
}

// SAFETY: communicators are used from one thread at a time (the `Gpu` keeps them behind a lock).
unsafe impl Send for Comms {}

impl Comms {
    pub fn open(n: usize) -> Result<Comms, Error> {
        probe()?;
        keep_nvls_off();
        let failed = |call: &str, e: result::NcclError| Error::NoNccl {
            detail: format!("{call} failed: {:?}", e.0),
        };
        result::get_nccl_version().map_err(|e| failed("ncclGetVersion", e))?;
        let mut comms = vec![std::ptr::null_mut(); n];
        let devices: Vec<c_int> = (0..n as c_int).collect();
        // SAFETY: `comms` has room for `n` communicators and `devices` lists `n` ordinals.
        unsafe { result::comm_init_all(comms.as_mut_ptr(), n as c_int, devices.as_ptr()) }
            .map_err(|e| failed("ncclCommInitAll", e))?;
        Ok(Comms { comms })
    }

    /// `ncclAllReduce` (sum of `count` floats, in place at `buffer`) of `device`'s rank on
    /// `stream`; inside a group, the kernel is launched at [`group_end`].
    pub fn all_reduce(
        &self,
        device: usize,
        buffer: cudarc::driver::sys::CUdeviceptr,
        count: usize,
        stream: cudarc::driver::sys::CUstream,
    ) -> Result<(), Error> {
        // SAFETY: `buffer` holds `count` floats on `device`, alive until the trial ends; the
        // stream belongs to that device.
        unsafe {
            result::all_reduce(
                buffer as *const _,
                buffer as *mut _,
                count,
                sys::ncclDataType_t::ncclFloat32,
                sys::ncclRedOp_t::ncclSum,
                self.comms[device],
                stream as sys::cudaStream_t,
            )
        }
        .map(|_| ())
        .map_err(|e| nccl_call("ncclAllReduce", e))
    }
}

pub fn group_start() -> Result<(), Error> {
    result::group_start()
        .map(|_| ())
        .map_err(|e| nccl_call("ncclGroupStart", e))
}

pub fn group_end() -> Result<(), Error> {
    result::group_end()
        .map(|_| ())
        .map_err(|e| nccl_call("ncclGroupEnd", e))
}

fn nccl_call(call: &str, e: result::NcclError) -> Error {
    Error::Driver {
        call: call.into(),
        message: format!("{:?}", e.0),
    }
}

impl Drop for Comms {
    fn drop(&mut self) {
        for &c in &self.comms {
            // SAFETY: created by ncclCommInitAll, destroyed once; the devices were synchronized.
            let _ = unsafe { result::comm_destroy(c) };
        }
    }
}
