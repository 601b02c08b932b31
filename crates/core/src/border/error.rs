//! The lab's error type ([`Error`], which results files record for a claim that failed), and
//! [`EnvError`] for the environment a user or a claim file sets. Every variant's message says what
//! happened and what to do; the other layers' errors are typed beside their concerns
//! (docs/design.md, 7).

use std::fmt;

/// Everything that can stop the lab or one claim.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Error {
    /// `libcuda.so` could not be loaded.
    #[error(
        "no usable GPU: the NVIDIA driver library (libcuda.so) could not be loaded. Install the \
         NVIDIA driver, or add the directory that holds libcuda.so.1 to LD_LIBRARY_PATH"
    )]
    NoDriver,
    /// `libnvrtc.so` could not be loaded; the stamp kernel is compiled at run time.
    #[error(
        "no usable GPU: NVRTC (libnvrtc.so) could not be loaded, and the stamp kernel is compiled \
         with it at run time. Install CUDA's NVRTC (e.g. the cuda-nvrtc package) and make sure \
         libnvrtc.so is in the loader path (`ldconfig -p | grep nvrtc`)"
    )]
    NoNvrtc,
    /// The driver loaded but reports no usable device.
    #[error(
        "no usable GPU: {detail}. Check `nvidia-smi` and that CUDA_VISIBLE_DEVICES does not hide \
         the device"
    )]
    NoDevice { detail: String },
    /// A driver call failed.
    #[error("CUDA call {call} failed: {message}")]
    Driver { call: String, message: String },
    /// The host would not give a buffer its memory.
    #[error(
        "no host memory for a buffer of {bytes} bytes ({detail}): free some, or make the \
         program's buffers smaller"
    )]
    HostMemory { bytes: usize, detail: String },
    /// NVRTC rejected the stamp kernel, or the driver could not load what it produced.
    #[error("the stamp kernel (kernels/stamp.cu) could not be built: {detail}")]
    Kernel { detail: String },
    /// The program failed validation; nothing ran.
    #[error(transparent)]
    Program(#[from] ProgramError),
    /// The stamps came back incomplete: a kernel did not run or did not write.
    #[error("op {op} '{label}' left no stamps (block {block}); the kernel did not run to its end")]
    MissingStamps {
        op: usize,
        label: String,
        block: usize,
    },
    /// The host clock could not be aligned to `%globaltimer`.
    #[error("aligning the host clock to the GPU's failed: {detail}")]
    Clock { detail: String },
    /// A host function did not run, or did not finish, before the trial's final synchronize.
    #[error(
        "host function op {op} '{label}' did not run to its end before the context synchronized"
    )]
    MissingHostSpan { op: usize, label: String },
    /// Running a program in a child process failed.
    #[error("the child process for environment [{env}] failed: {detail}")]
    Child { env: String, detail: String },
    /// `--exclusive`: the GPU did not become ours in time, or nobody can tell.
    #[error("{detail}")]
    Shared { detail: String },
    /// Reading or writing a file.
    #[error("{path}: {detail}")]
    File { path: String, detail: String },
    /// A thread of ours stopped before it answered: it panicked, and the panic follows.
    #[error("{0}; this is a bug in stream-litmus")]
    Worker(#[from] crate::border::in_order::WorkerGone),
    /// A program on several GPUs, on a machine with fewer.
    #[error("needs {needed} GPUs: {detail}")]
    Devices { needed: u32, detail: String },
    /// NCCL could not be loaded or initialized; only programs with an all-reduce need it.
    #[error("NCCL is not usable: {detail}")]
    NoNccl { detail: String },
}

impl Error {
    /// Whether the error means there is no GPU to run on at all (as opposed to one claim failing).
    pub fn is_no_gpu(&self) -> bool {
        matches!(
            self,
            Error::NoDriver | Error::NoNvrtc | Error::NoDevice { .. }
        )
    }
}

/// Why a variable set in the environment, or asked for by a claim file, was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// A count variable ([`crate::border::limits::COUNT_ENVS`]) that is not a positive whole
    /// number; `value` is its first 64 characters, on one line.
    #[error(
        "{name}={value} is not a positive whole number (digits alone, no unit); set it to one, \
         or unset it for the default"
    )]
    NotACount { name: &'static str, value: String },
    /// A variable a claim file may not set; `allowed` lists those it may.
    #[error(
        "a claim file may not set `{name}`: it may set only {allowed} (docs/writing-claims.md, \
         \"Opening files from others\"); a variable that chooses a library, a path or a program \
         would run code on the machine of whoever checks the file"
    )]
    NotAllowed { name: String, allowed: String },
    /// A value the variable does not take; `value` is its first 64 characters.
    #[error("`{name}` cannot be {value:?}: {expected} ({why})")]
    BadValue {
        name: &'static str,
        value: String,
        expected: String,
        why: &'static str,
    },
    /// `CUDA_DEVICE_MAX_CONNECTIONS` outside the driver's 1 to 32; its first 64 characters.
    #[error("CUDA_DEVICE_MAX_CONNECTIONS={0:?} is not a count of 1 to 32 connections")]
    Connections(String),
}

/// Crate-wide result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything wrong with a program, found in one pass.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProgramError {
    pub program: String,
    pub problems: Vec<String>,
}

impl fmt::Display for ProgramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "program '{}' is invalid: ", self.program)?;
        f.write_str(&self.problems.join("; "))?;
        f.write_str(" (fix the program; nothing was sent to the GPU)")
    }
}

impl std::error::Error for ProgramError {}

/// The longest message quoted from a parser about a file's content: a value of the wrong type
/// is quoted whole by serde ("invalid type: string \"…\""), and a file may hold a string of
/// megabytes.
pub const QUOTED_BYTES: usize = 240;

/// `text` with its line feeds, carriage returns and tabs written as `\n`, `\r` and `\t`, for a
/// value from a file that is shown inside one line of ours: with a line feed it could print a
/// line of its own (`ok   some.claim  Holds …`).
pub fn flat(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\n', '\r', '\t']) {
        return text.into();
    }
    text.replace('\n', "\\n")
        .replace('\r', "\\r")
        .replace('\t', "\\t")
        .into()
}

/// `message` cut to [`QUOTED_BYTES`] (at a character boundary), with how much was left out.
pub fn shortened(message: &str) -> String {
    if message.len() <= QUOTED_BYTES {
        return message.to_string();
    }
    let mut end = QUOTED_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… ({} more bytes left out)",
        &message[..end],
        message.len() - end
    )
}
