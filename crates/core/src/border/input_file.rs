//! Opening what a user names as input: regular files only.
//!
//! A claim file or a results file may come from anyone, and a path may name something that is not
//! a file at all. A FIFO blocks its reader until a writer comes (forever, if none does); a
//! terminal waits for a keyboard; a socket or a device has no end. So every input is opened
//! without blocking (`O_NONBLOCK`: opening a FIFO then returns at once), its type is read from
//! the open handle (so it cannot change between the look and the read), and anything but a
//! regular file is refused with a message that names what it is.

use std::fs::{File, FileType};
use std::path::Path;

/// Why a path a user named could not be opened as input; the caller puts the path in front.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Opening it, or reading its type, failed.
    #[error("cannot read it: {0}")]
    Io(#[from] std::io::Error),
    /// It is not a regular file: `kind` says what it is ([`describe`]).
    #[error(
        "it is {kind}, not a regular file; stream-litmus reads claim and results files only from \
         regular files (save the data to a file first)"
    )]
    NotRegular { kind: &'static str },
}

/// Opens `path` for reading if it is a regular file (through symbolic links); the error says
/// what it is instead, or why it could not be opened.
pub fn open_regular(path: &Path) -> Result<File, OpenError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(OpenError::NotRegular {
            kind: describe(kind),
        });
    }
    // Reads of a regular file never block; the flag is cleared all the same, so that the handle
    // behaves as any other.
    clear_nonblocking(&file);
    Ok(file)
}

fn clear_nonblocking(file: &File) {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: `fd` is open for the lifetime of `file`; F_GETFL/F_SETFL only change its flags.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
}

/// "a FIFO (named pipe)", "a folder", …: what a file type is, for messages.
pub fn describe(kind: FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_file() {
        "a regular file"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_a_device_and_a_folder_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("claims.litmus");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let err = open_regular(&fifo).unwrap_err().to_string();
        assert!(
            err.contains("a FIFO (named pipe), not a regular file"),
            "{err}"
        );
        let err = open_regular(Path::new("/dev/zero")).unwrap_err();
        assert!(
            matches!(
                err,
                OpenError::NotRegular {
                    kind: "a character device"
                }
            ),
            "{err}"
        );
        let err = open_regular(dir.path()).unwrap_err();
        assert!(
            matches!(err, OpenError::NotRegular { kind: "a folder" }),
            "{err}"
        );
        let err = open_regular(&dir.path().join("absent")).unwrap_err();
        assert!(matches!(err, OpenError::Io(_)), "{err}");
        let file = dir.path().join("ok");
        std::fs::write(&file, "x").unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut open_regular(&file).unwrap(), &mut text).unwrap();
        assert_eq!(text, "x");
    }
}
