//! The kernels' PTX, kept on disk between processes: NVRTC (loading the library and compiling)
//! cost 32 ms of every process that opens the GPU (measured on an H100), paid again by the CLI on
//! every run and by each of the GPU test binaries. The PTX depends only on the source, the
//! architecture it is compiled for and this crate's version, so a file named after a hash of the
//! three is reused; the driver's own cache then makes loading it take well under a millisecond.
//!
//! The cache is best effort and never trusted: a file that is missing, too large, not UTF-8 or
//! refused by the driver (`Kernels::build_from` loads it and checks every kernel) means compiling
//! again and rewriting it; a folder that cannot be made or written means compiling every time.
//! Files are written whole and renamed into place (`crate::border::atomic_write`), so two processes that
//! compile at once leave one complete file. `STREAM_LITMUS_CACHE` names the folder, or `off`;
//! else `$XDG_CACHE_HOME/stream-litmus`, else `$HOME/.cache/stream-litmus`.

use std::path::{Path, PathBuf};

/// Names the cache folder, or `off` to compile in every process.
pub const CACHE_ENV: &str = "STREAM_LITMUS_CACHE";

/// Larger than any PTX of our kernels (about 60 KiB): a bigger file is not ours.
const MAX_PTX_BYTES: u64 = 4 << 20;

/// One source's place in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxCache {
    path: PathBuf,
}

impl PtxCache {
    /// The cache file for `source` compiled with `arch`, in the folder the environment names;
    /// `None` when caching is off or no folder can be named.
    pub fn for_source(source: &str, arch: &str) -> Option<PtxCache> {
        Some(PtxCache::in_dir(&cache_dir()?, source, arch))
    }

    /// The cache file for `source` compiled with `arch` in `dir`.
    pub fn in_dir(dir: &Path, source: &str, arch: &str) -> PtxCache {
        let key = fnv1a([
            source.as_bytes(),
            b"\0",
            arch.as_bytes(),
            b"\0",
            env!("CARGO_PKG_VERSION").as_bytes(),
        ]);
        PtxCache {
            path: dir.join(format!("kernels-{key:016x}.ptx")),
        }
    }

    /// The PTX kept for this source, if a plausible file is there.
    pub fn read(&self) -> Option<String> {
        use std::io::Read;
        let file = std::fs::File::open(&self.path).ok()?;
        let mut bytes = Vec::new();
        file.take(MAX_PTX_BYTES + 1).read_to_end(&mut bytes).ok()?;
        if bytes.is_empty() || bytes.len() as u64 > MAX_PTX_BYTES {
            return None;
        }
        String::from_utf8(bytes).ok()
    }

    /// Keeps `ptx` for the next process; failing is not an error (the next one compiles).
    pub fn write(&self, ptx: &str) {
        let Some(dir) = self.path.parent() else {
            return;
        };
        if std::fs::create_dir_all(dir).is_ok() {
            let _ = crate::border::atomic_write::write_atomically(&self.path, |w| {
                std::io::Write::write_all(w, ptx.as_bytes())
            });
        }
    }
}

/// The folder from [`CACHE_ENV`], `XDG_CACHE_HOME` or `HOME`; `None` for `off` or nothing set.
/// The cache folder the environment names (see the module docs), `None` when caching is off.
pub fn cache_dir() -> Option<PathBuf> {
    let set = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = set(CACHE_ENV) {
        return (dir != "off").then(|| PathBuf::from(dir));
    }
    if let Some(xdg) = set("XDG_CACHE_HOME") {
        return Some(PathBuf::from(xdg).join("stream-litmus"));
    }
    set("HOME").map(|home| PathBuf::from(home).join(".cache/stream-litmus"))
}

/// 64-bit FNV-1a over the parts in order: stable across builds and platforms, unlike std's
/// hasher, and enough to tell sources apart (a collision would load PTX the driver or the kernel
/// check refuses, then compile).
fn fnv1a<const N: usize>(parts: [&[u8]; N]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in parts.into_iter().flatten() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_named_by_source_and_architecture() {
        let dir = Path::new("/cache");
        let a = PtxCache::in_dir(dir, "src", "--gpu-arch=compute_90");
        assert_eq!(a, PtxCache::in_dir(dir, "src", "--gpu-arch=compute_90"));
        assert_ne!(a, PtxCache::in_dir(dir, "src2", "--gpu-arch=compute_90"));
        assert_ne!(a, PtxCache::in_dir(dir, "src", "--gpu-arch=compute_80"));
        // The parts are separated: moving a byte from one to the other changes the name.
        assert_ne!(
            PtxCache::in_dir(dir, "ab", "c"),
            PtxCache::in_dir(dir, "a", "bc")
        );
        assert_eq!(fnv1a([b"".as_slice()]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a([b"a".as_slice()]), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn what_is_written_is_read_back_and_a_bad_file_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let cache = PtxCache::in_dir(&dir.path().join("new/folder"), "src", "arch");
        assert_eq!(cache.read(), None, "nothing kept yet");
        cache.write(".version 8.0\n");
        assert_eq!(cache.read().as_deref(), Some(".version 8.0\n"));
        std::fs::write(&cache.path, [0xff, 0xfe]).unwrap();
        assert_eq!(cache.read(), None, "not UTF-8");
        std::fs::write(&cache.path, "").unwrap();
        assert_eq!(cache.read(), None, "empty");
        let big = std::fs::File::create(&cache.path).unwrap();
        big.set_len(MAX_PTX_BYTES + 1).unwrap();
        assert_eq!(cache.read(), None, "too large to be ours");
    }

    #[test]
    fn a_folder_that_cannot_be_made_is_no_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a file");
        std::fs::write(&file, "x").unwrap();
        let cache = PtxCache::in_dir(&file.join("below"), "src", "arch");
        cache.write("ptx");
        assert_eq!(cache.read(), None);
    }
}
