//! Writing outputs so that no failure can destroy a file: to a temporary file beside the target,
//! then renamed into place.
//!
//! A results file, a report or a fuzz regression may be the only copy of an hour of GPU time, and
//! `judge IN --write IN` rewrites its own input. Writing in place would leave a truncated file
//! behind on a full disk or a crash. Instead each output is written in full to a temporary file
//! in the same folder (so the rename cannot cross file systems), flushed to disk, and renamed
//! over the target, which POSIX makes atomic: the target is either the old file or the new one.
//! A failed write removes its temporary file. [`write_all_or_none`] does the same for several
//! files at once, renaming only after every one was written (docs/design.md, 14).
//!
//! A target that exists and is not a regular file (`/dev/full`, a FIFO), or is reached through
//! `/dev` or `/proc` (`/dev/stdout`), is written directly: renaming over it would replace a
//! device, or a file the shell holds open.

use crate::border::error::Error;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

fn file_err(path: &Path, detail: impl ToString) -> Error {
    Error::File {
        path: super::shown::path(path),
        detail: detail.to_string(),
    }
}

/// A written temporary file waiting to be renamed over its target.
struct Staged {
    tmp: tempfile::NamedTempFile,
    target: PathBuf,
}

/// Where to write `path`: itself resolved through symbolic links (so a link stays a link), and
/// whether it is a special file to be written directly.
fn resolve(path: &Path) -> Result<(PathBuf, bool), Error> {
    let special_place = path.starts_with("/dev") || path.starts_with("/proc");
    if !special_place && fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        // Renamed over, a link's target would be replaced wherever it lies: a file outside the
        // report folder, or an input of the command.
        let to = fs::read_link(path).map_or_else(|_| "?".into(), |t| super::shown::path(&t));
        return Err(file_err(
            path,
            format!(
                "is a link (to {}); stream-litmus writes no file through a link: remove the link \
                 or name the file itself",
                crate::border::error::shortened(&to)
            ),
        ));
    }
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(file_err(path, "is a folder; name a file")),
        Ok(m) => {
            // `/dev/stdout` or `/proc/self/fd/1` may resolve to a regular file, which the shell
            // still holds open: renaming over it would send the output to a file nobody reads.
            if special_place || !m.is_file() {
                refuse_blocking(path, &m)?;
                return Ok((path.to_path_buf(), true));
            }
            let real = fs::canonicalize(path).map_err(|e| file_err(path, e))?;
            Ok((real, false))
        }
        Err(_) => Ok((path.to_path_buf(), false)),
    }
}

/// Refuses a special target whose writes can wait without end: a FIFO or a socket (a FIFO
/// nobody reads takes nothing and blocks the writer), or a block device (a disk, overwritten).
/// Our own standard output is written through its handle whatever it is (a pipe to `jq`, say),
/// and a character device (`/dev/null`, `/dev/full`, a terminal) takes its write at once.
fn refuse_blocking(path: &Path, m: &fs::Metadata) -> Result<(), Error> {
    use std::os::unix::fs::FileTypeExt;
    let kind = m.file_type();
    let blocking = kind.is_fifo() || kind.is_socket() || kind.is_block_device();
    if blocking && !same_file(path, Path::new("/dev/stdout")) {
        return Err(file_err(
            path,
            format!(
                "is {}; stream-litmus writes only regular files, a character device or its own standard output (write to a file, then pass it on)",
                crate::border::input_file::describe(kind)
            ),
        ));
    }
    Ok(())
}

fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Writes `write`'s output to a temporary file beside `path`, with `path`'s permissions if it
/// exists (else the usual ones under the umask).
fn stage(
    path: &Path,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<Staged, Error> {
    use std::os::unix::fs::PermissionsExt;
    let name = path
        .file_name()
        .map_or("out".into(), |n| n.to_string_lossy());
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(fs::Permissions::from_mode(0o666))
        .tempfile_in(folder_of(path))
        .map_err(|e| file_err(path, format!("cannot create a file beside it: {e}")))?;
    if let Ok(m) = fs::metadata(path) {
        let _ = fs::set_permissions(tmp.path(), m.permissions());
    }
    let mut out = std::io::BufWriter::new(tmp.as_file_mut());
    write(&mut out)
        .and_then(|_| out.flush())
        .map_err(|e| file_err(path, e))?;
    drop(out);
    tmp.as_file().sync_all().map_err(|e| file_err(path, e))?;
    Ok(Staged {
        tmp,
        target: path.to_path_buf(),
    })
}

fn write_direct(
    path: &Path,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), Error> {
    if same_file(path, Path::new("/dev/stdout")) {
        // Our own standard output: through its handle, after what was printed before (opened
        // anew, a redirected file would be written from offset 0, over it).
        let mut out = std::io::stdout().lock();
        return write(&mut out)
            .and_then(|_| out.flush())
            .map_err(|e| file_err(path, e));
    }
    let file = fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| file_err(path, e))?;
    let mut out = std::io::BufWriter::new(file);
    write(&mut out)
        .and_then(|_| out.flush())
        .map_err(|e| file_err(path, e))
}

/// Whether `path` is written directly rather than through a temporary file: an existing special
/// file (a device, our own standard output), or one reached through `/dev` or `/proc`.
pub fn writes_directly(path: &Path) -> bool {
    resolve(path).is_ok_and(|(_, special)| special)
}

/// Writes `path` atomically with what `write` produces.
pub fn write_atomically(
    path: &Path,
    mut write: impl FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), Error> {
    let (real, special) = resolve(path)?;
    if special {
        return write_direct(&real, &mut write);
    }
    let staged = stage(&real, &mut write)?;
    staged
        .tmp
        .persist(&staged.target)
        .map_err(|e| file_err(path, e.error))?;
    Ok(())
}

/// Writes every `(path, bytes)` or none: all are written to temporary files first, and renamed
/// only once every one was written in full.
pub fn write_all_or_none(files: &[(PathBuf, &[u8])]) -> Result<(), Error> {
    let mut writers: Vec<(PathBuf, Writer)> = (files.iter())
        .map(|(path, bytes)| {
            let w: Writer = Box::new(move |w: &mut dyn Write| w.write_all(bytes));
            (path.clone(), w)
        })
        .collect();
    write_each_or_none(&mut writers)
}

/// What writes one file's contents, as it goes (a report of a million ops is never held whole).
pub type Writer<'a> = Box<dyn FnMut(&mut dyn Write) -> std::io::Result<()> + 'a>;

/// [`write_all_or_none`] with each file's contents written by its [`Writer`].
pub fn write_each_or_none(files: &mut [(PathBuf, Writer)]) -> Result<(), Error> {
    let mut staged = Vec::new();
    let mut direct = Vec::new();
    for (path, write) in files.iter_mut() {
        let (real, special) = resolve(path)?;
        if special {
            direct.push((real, write));
        } else {
            staged.push(stage(&real, &mut **write)?);
        }
    }
    for (path, write) in direct {
        write_direct(&path, &mut **write)?;
    }
    for s in staged {
        s.tmp
            .persist(&s.target)
            .map_err(|e| file_err(&s.target, e.error))?;
    }
    Ok(())
}

/// Whether `a` and `b` name one existing file (through links, `..` or hard links).
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Whether `a` and `b` name one file, existing or yet to be written: the same file, or the same
/// name in the same folder (through links and `..` in the folder's path). Two outputs of one
/// command must never be one file: the second would overwrite the first.
pub fn same_place(a: &Path, b: &Path) -> bool {
    if same_file(a, b) {
        return true;
    }
    let place = |p: &Path| {
        let name = p.file_name()?;
        let dir = (p.parent())
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Some(dir.canonicalize().ok()?.join(name))
    };
    matches!((place(a), place(b)), (Some(x), Some(y)) if x == y)
}

/// Checks up front that `path` can be written: its folder exists and takes a new file (a
/// temporary one, removed at once), and it is not a folder. Nothing is left behind.
pub fn check_writable(path: &Path) -> Result<(), Error> {
    let (real, special) = resolve(path)?;
    if !special {
        temporary_name_fits(&real)?;
    }
    if special {
        return fs::OpenOptions::new()
            .write(true)
            .open(&real)
            .map(drop)
            .map_err(|e| file_err(path, e));
    }
    tempfile::Builder::new()
        .prefix(".stream-litmus-probe.")
        .tempfile_in(folder_of(&real))
        .map(drop)
        .map_err(|e| file_err(path, format!("cannot write there: {e}")))
}

/// The most bytes of a file name (Linux's `NAME_MAX`).
const NAME_MAX: usize = 255;

/// The bytes [`stage`] adds to a name for its temporary file: `.`, `.`, six random characters
/// and `.tmp`.
const TEMPORARY_EXTRA: usize = 12;

/// Refuses a name too long for its temporary file: the write would fail only after the run.
fn temporary_name_fits(path: &Path) -> Result<(), Error> {
    let len = path.file_name().map_or(0, |n| n.len());
    if len + TEMPORARY_EXTRA > NAME_MAX {
        return Err(file_err(
            path,
            format!(
                "its name is {len} bytes; stream-litmus first writes a temporary file named after it, and names hold at most {NAME_MAX} bytes, so choose a name of at most {} bytes",
                NAME_MAX - TEMPORARY_EXTRA
            ),
        ));
    }
    Ok(())
}

/// Folders made by [`make_folder`]: removed again (if still empty) unless [`Folder::keep`] is
/// called, so a failed command leaves no empty folder behind.
pub struct Folder {
    created: Vec<PathBuf>,
}

impl Folder {
    pub fn keep(mut self) {
        self.created.clear();
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        for dir in self.created.iter().rev() {
            let _ = fs::remove_dir(dir); // fails, as it should, if anything is in it
        }
    }
}

/// Creates `dir` and its missing parents, remembering which it created.
pub fn make_folder(dir: &Path) -> Result<Folder, Error> {
    // "File exists" alone would not say which file: name it, and what it is.
    if let Some((a, m)) = dir
        .ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .find_map(|a| fs::metadata(a).ok().map(|m| (a, m)))
        .filter(|(_, m)| !m.is_dir())
    {
        let what = crate::border::input_file::describe(m.file_type());
        let detail = if a == dir {
            format!("is {what}, not a folder; name a folder for the report's files")
        } else {
            format!(
                "cannot be made: {} is {what}, not a folder",
                super::shown::path(a)
            )
        };
        return Err(file_err(dir, detail));
    }
    let missing: Vec<PathBuf> = dir
        .ancestors()
        .filter(|a| !a.as_os_str().is_empty() && !a.exists())
        .map(Path::to_path_buf)
        .collect();
    let folder = Folder {
        created: missing.into_iter().rev().collect(),
    };
    // On an error `folder` is dropped, which removes what was created before it.
    fs::create_dir_all(dir).map_err(|e| file_err(dir, e))?;
    if !dir.is_dir() {
        return Err(file_err(dir, "is not a folder"));
    }
    Ok(folder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_file_is_written_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        fs::write(&outside, "keep me").unwrap();
        let link = dir.path().join("report.html");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        for err in [
            check_writable(&link).unwrap_err(),
            write_atomically(&link, |w| w.write_all(b"x")).unwrap_err(),
            write_all_or_none(&[(link.clone(), &b"x"[..])]).unwrap_err(),
        ] {
            assert!(err.to_string().contains("is a link (to "), "{err}");
        }
        assert_eq!(fs::read_to_string(&outside).unwrap(), "keep me");
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        fs::write(&path, "old").unwrap();
        let err = write_atomically(&path, |w| {
            w.write_all(b"half of the new")?;
            Err(std::io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("disk full"), "{err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        write_atomically(&path, |w| w.write_all(b"new")).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_pair_writes_neither() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        fs::create_dir(&b).unwrap(); // in the way
        let err = write_all_or_none(&[(a.clone(), b"one"), (b, b"two")]).unwrap_err();
        assert!(err.to_string().contains("is a folder"), "{err}");
        assert!(!a.exists());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_folder_made_for_a_failed_command_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("x/y/z");
        drop(make_folder(&deep).unwrap());
        assert!(!dir.path().join("x").exists());
        make_folder(&deep).unwrap().keep();
        assert!(deep.is_dir());
    }
}
