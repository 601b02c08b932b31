//! Finding out whether a GPU can be used, without letting cudarc panic.
//!
//! cudarc loads `libcuda` and `libnvrtc` lazily and panics when a library is missing. The lab
//! probes each library before its first use (the driver when the GPU opens, NVRTC before
//! compiling) and turns every failure into an [`Error`] that names the cause: no driver library,
//! no NVRTC, or no device.

use crate::border::error::Error;
use cudarc::driver::{result::DriverError, sys::cudaError_enum};

/// Fails with a clear error unless the driver library loads.
pub fn driver() -> Result<(), Error> {
    // SAFETY: only tries to dlopen the library by name; no symbol is called.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Error::NoDriver);
    }
    Ok(())
}

/// Fails with a clear error unless NVRTC loads; asked only when the kernels are compiled (a
/// process that loads kept or given PTX never needs NVRTC, see `ptx_cache.rs`).
pub fn nvrtc() -> Result<(), Error> {
    // SAFETY: only tries to dlopen the library by name; no symbol is called.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(Error::NoNvrtc);
    }
    Ok(())
}

/// Maps the error of `cuInit` / device lookup / context creation.
pub fn init_error(e: DriverError) -> Error {
    let detail = match e.0 {
        cudaError_enum::CUDA_ERROR_NO_DEVICE => "the driver sees no CUDA device".to_string(),
        cudaError_enum::CUDA_ERROR_INVALID_DEVICE => "device 0 does not exist".to_string(),
        cudaError_enum::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH => {
            "the NVIDIA kernel module and libcuda.so have different versions; reinstall the \
             driver or reboot after an update"
                .to_string()
        }
        _ => format!("initialising the driver failed with {}", describe(e)),
    };
    Error::NoDevice { detail }
}

/// A driver error as `CUDA_ERROR_X (what it means)`.
pub fn describe(e: DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    let text = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if text.is_empty() {
        name
    } else {
        format!("{name} ({text})")
    }
}

/// Wraps a failed driver call with the call's name.
pub fn call(call: &str) -> impl FnOnce(DriverError) -> Error + '_ {
    move |e| Error::Driver {
        call: call.to_string(),
        message: describe(e),
    }
}
