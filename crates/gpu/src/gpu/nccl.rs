//! NCCL, loaded at run time: one communicator per device of this process, for the all-reduces
//! of programs on several GPUs.
//!
//! cudarc's `nccl` feature gives the types; the library is loaded at run time (the build needs
//! no NCCL), by the names in [`NAMES`] (cudarc's own loader does not try `libnccl.so.2`, and
//! panics on a missing library), and its absence is an [`Error::NoNccl`] that names every file
//! name it tried. Communicators come from `ncclCommInitAll` (one process drives every device;
//! no unique id to exchange) and live as long as the `Gpu`.
//!
//! NVLink multicast (NVLS) stays off: NCCL would otherwise create multicast objects on hosts
//! whose NVLink fabric is shared. We never call `cuMulticastCreate` ourselves, and before the
//! first communicator we set `NCCL_NVLS_ENABLE=0` in our own environment when it is unset (an
//! explicit value, the user's choice, is left as it is). Child processes inherit it, since their
//! environment is never cleared.

use crate::border::error::Error;
use cudarc::nccl::sys;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

/// The NCCL variable that switches NVLink SHARP / multicast collectives.
pub const NVLS_ENV: &str = "NCCL_NVLS_ENABLE";
/// A path to `libnccl.so.2` to load instead of looking it up by name.
pub const NCCL_ENV: &str = "STREAM_LITMUS_NCCL";

/// The file names looked up through the loader. cudarc's own list has `libnccl.so` and
/// `libnccl.so.{12,11,10,9,1}`, but not the runtime package's `libnccl.so.2` (libnccl2 ships no
/// `libnccl.so` without the -dev package), so the few functions used are bound here, with
/// cudarc's `nccl` bindings for the types.
const NAMES: [&str; 2] = ["libnccl.so.2", "libnccl.so"];

type InitAll = unsafe extern "C" fn(*mut sys::ncclComm_t, c_int, *const c_int) -> c_int;
type AllReduce = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    usize,
    c_int,
    c_int,
    sys::ncclComm_t,
    sys::cudaStream_t,
) -> c_int;
type Group = unsafe extern "C" fn() -> c_int;
type Destroy = unsafe extern "C" fn(sys::ncclComm_t) -> c_int;
type Version = unsafe extern "C" fn(*mut c_int) -> c_int;

/// The library and the functions used, bound once per process.
struct Lib {
    init_all: InitAll,
    all_reduce: AllReduce,
    group_start: Group,
    group_end: Group,
    destroy: Destroy,
    version: Version,
    _lib: libloading::Library,
}

fn lib() -> Result<&'static Lib, Error> {
    static LIB: OnceLock<Result<Lib, LoadError>> = OnceLock::new();
    LIB.get_or_init(load).as_ref().map_err(|e| Error::NoNccl {
        detail: e.to_string(),
    })
}

/// Why libnccl could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum LoadError {
    /// None of `names` loads; `ld_path` is `LD_LIBRARY_PATH` (or "unset").
    #[error(
        "libnccl could not be loaded: looked for {names} through the dynamic loader \
         (LD_LIBRARY_PATH={ld_path}, then the ldconfig cache and the system directories; \
         {NCCL_ENV}=/path/to/libnccl.so.2 names the file). Install NCCL (libnccl2) or add its \
         directory to LD_LIBRARY_PATH; only the all-reduce claims need it"
    )]
    NotFound { names: String, ld_path: String },
    /// The library loads but lacks a function.
    #[error("libnccl has no {symbol}: {detail}")]
    NoSymbol { symbol: String, detail: String },
}

fn load() -> Result<Lib, LoadError> {
    load_from(match std::env::var(NCCL_ENV) {
        Ok(path) => vec![path],
        Err(_) => NAMES.iter().map(|n| n.to_string()).collect(),
    })
}

/// Loads the first of `names` the dynamic loader finds, or says where it looked.
fn load_from(names: Vec<String>) -> Result<Lib, LoadError> {
    // SAFETY: loading NCCL runs its initializers, which only set up the library.
    let lib = names
        .iter()
        .find_map(|n| unsafe { libloading::Library::new(n) }.ok())
        .ok_or_else(|| LoadError::NotFound {
            names: names.join(", "),
            ld_path: std::env::var("LD_LIBRARY_PATH").unwrap_or_else(|_| "unset".into()),
        })?;
    // SAFETY: the signatures are NCCL's (nccl.h, 2.x); the pointers live as long as `_lib`.
    unsafe {
        let get = |name: &[u8]| {
            lib.get::<*const c_void>(name)
                .map(|s| *s)
                .map_err(|e| LoadError::NoSymbol {
                    symbol: String::from_utf8_lossy(name).into_owned(),
                    detail: e.to_string(),
                })
        };
        Ok(Lib {
            init_all: std::mem::transmute::<*const c_void, InitAll>(get(b"ncclCommInitAll")?),
            all_reduce: std::mem::transmute::<*const c_void, AllReduce>(get(b"ncclAllReduce")?),
            group_start: std::mem::transmute::<*const c_void, Group>(get(b"ncclGroupStart")?),
            group_end: std::mem::transmute::<*const c_void, Group>(get(b"ncclGroupEnd")?),
            destroy: std::mem::transmute::<*const c_void, Destroy>(get(b"ncclCommDestroy")?),
            version: std::mem::transmute::<*const c_void, Version>(get(b"ncclGetVersion")?),
            _lib: lib,
        })
    }
}

/// Fails with where it looked unless `libnccl` loads.
pub fn probe() -> Result<(), Error> {
    lib().map(|_| ())
}

/// NCCL's version code (22800 for 2.28.0).
pub fn version() -> Result<i32, Error> {
    let mut v = 0;
    // SAFETY: writes one int.
    check("ncclGetVersion", unsafe { (lib()?.version)(&mut v) })?;
    Ok(v)
}

fn check(call: &str, r: c_int) -> Result<(), Error> {
    match r {
        0 => Ok(()),
        code => Err(Error::Driver {
            call: call.into(),
            message: format!("ncclResult {code} (see NCCL_DEBUG=WARN for the cause)"),
        }),
    }
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
        let lib = lib()?;
        keep_nvls_off();
        version()?;
        let mut comms = vec![std::ptr::null_mut(); n];
        let devices: Vec<c_int> = (0..n as c_int).collect();
        // SAFETY: `comms` has room for `n` communicators and `devices` lists `n` ordinals.
        let r = unsafe { (lib.init_all)(comms.as_mut_ptr(), n as c_int, devices.as_ptr()) };
        check("ncclCommInitAll", r).map_err(|e| Error::NoNccl {
            detail: e.to_string(),
        })?;
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
        let r = unsafe {
            (lib()?.all_reduce)(
                buffer as *const c_void,
                buffer as *mut c_void,
                count,
                sys::ncclDataType_t::ncclFloat32 as c_int,
                sys::ncclRedOp_t::ncclSum as c_int,
                self.comms[device],
                stream as sys::cudaStream_t,
            )
        };
        check("ncclAllReduce", r)
    }
}

pub fn group_start() -> Result<(), Error> {
    // SAFETY: no arguments.
    check("ncclGroupStart", unsafe { (lib()?.group_start)() })
}

pub fn group_end() -> Result<(), Error> {
    // SAFETY: no arguments; launches what the group queued.
    check("ncclGroupEnd", unsafe { (lib()?.group_end)() })
}

impl Drop for Comms {
    fn drop(&mut self) {
        if let Ok(lib) = lib() {
            for &c in &self.comms {
                // SAFETY: created by ncclCommInitAll, destroyed once; the devices were synced.
                let _ = unsafe { (lib.destroy)(c) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_missing_library_is_named_with_where_it_was_looked_for() {
        let Err(why) = super::load_from(vec!["/nonexistent/libnccl.so.2".into()]) else {
            panic!("loaded a library that does not exist");
        };
        assert!(matches!(why, super::LoadError::NotFound { .. }), "{why}");
        let why = why.to_string();
        assert!(why.contains("/nonexistent/libnccl.so.2"), "{why}");
        assert!(why.contains("LD_LIBRARY_PATH="), "{why}");
        assert!(why.contains("STREAM_LITMUS_NCCL="), "{why}");
        assert!(why.contains("only the all-reduce claims need it"), "{why}");
    }
}
