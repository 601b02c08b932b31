//! Reading ahead on a thread of its own, so that the bytes of a large file are inflated and
//! counted (the [`Guarded`](super::bounded_json::Guarded) lexer) while the caller's thread
//! parses the bytes before them.
//!
//! A profiler trace was read on one thread: inflating, counting, cutting out events, parsing
//! them and keeping what a verdict needs, one after the other (on the docs' 202 MB trace the
//! counting lexer alone took 15 % of `check`). The reader here moves everything up to the
//! counting onto a second thread. At most [`CHUNKS`] chunks of [`CHUNK_BYTES`] wait between the
//! two, so memory does not grow with the file; an error (a refusal of the guard, a damaged gzip)
//! reaches the caller as it was made, in its place after the bytes before it. When the caller
//! stops reading and drops the reader, the thread's next hand-over fails and it ends.

use std::io::{self, Read};
use std::sync::mpsc::{sync_channel, Receiver};

/// The bytes handed over at a time.
pub const CHUNK_BYTES: usize = 256 << 10;

/// The chunks that may wait for the caller: 1 MiB ahead.
pub const CHUNKS: usize = 4;

/// A reader whose bytes come from a thread that reads `inner` ahead.
pub struct ReadAhead {
    chunks: Receiver<io::Result<Vec<u8>>>,
    current: Vec<u8>,
    at: usize,
    ended: bool,
}

impl ReadAhead {
    /// Starts reading `inner` on a thread of its own.
    pub fn new<R: Read + Send + 'static>(mut inner: R) -> io::Result<ReadAhead> {
        let (send, chunks) = sync_channel(CHUNKS);
        std::thread::Builder::new()
            .name("read-ahead".into())
            .spawn(move || loop {
                let mut chunk = vec![0u8; CHUNK_BYTES];
                let (got, error) = fill(&mut inner, &mut chunk);
                chunk.truncate(got);
                // The caller dropped the reader: nothing more is wanted.
                if (got > 0 || error.is_none()) && send.send(Ok(chunk)).is_err() {
                    return;
                }
                if let Some(e) = error {
                    let _ = send.send(Err(e));
                    return;
                }
                if got == 0 {
                    return;
                }
            })?;
        Ok(ReadAhead {
            chunks,
            current: Vec::new(),
            at: 0,
            ended: false,
        })
    }
}

/// Reads into `buf` until it is full or `inner` has ended: the bytes read, and the error that
/// stopped the reading, if one did. Bytes read before an error are handed over before it, so
/// that it is placed after them, as the reading on one thread placed it.
fn fill(inner: &mut impl Read, buf: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut n = 0;
    while n < buf.len() {
        match inner.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (n, Some(e)),
        }
    }
    (n, None)
}

impl Read for ReadAhead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.current.len() {
            if self.ended {
                return Ok(0);
            }
            match self.chunks.recv() {
                Ok(Ok(chunk)) if chunk.is_empty() => self.ended = true,
                Ok(Ok(chunk)) => (self.current, self.at) = (chunk, 0),
                Ok(Err(e)) => {
                    self.ended = true;
                    return Err(e);
                }
                Err(_) => {
                    self.ended = true;
                    return Err(io::Error::other("the reading thread ended early"));
                }
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives `data` in reads of `step` bytes, then `error` if any.
    struct Source {
        data: Vec<u8>,
        at: usize,
        step: usize,
        error: Option<io::ErrorKind>,
    }

    impl Read for Source {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len() - self.at);
            if n == 0 {
                return match self.error.take() {
                    Some(kind) => Err(io::Error::new(kind, "damaged")),
                    None => Ok(0),
                };
            }
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn source(len: usize, step: usize, error: Option<io::ErrorKind>) -> Source {
        Source {
            data: (0..len).map(|i| (i * 7 % 251) as u8).collect(),
            at: 0,
            step,
            error,
        }
    }

    #[test]
    fn the_bytes_come_through_whole_and_in_order() {
        for (len, step) in [
            (0, 1),
            (1, 1),
            (CHUNK_BYTES, 4096),
            (3 * CHUNK_BYTES + 17, 1000),
        ] {
            let want = source(len, step, None).data;
            let mut got = Vec::new();
            ReadAhead::new(source(len, step, None))
                .unwrap()
                .read_to_end(&mut got)
                .unwrap();
            assert_eq!(got, want, "{len} bytes in reads of {step}");
        }
    }

    /// An error comes after every byte read before it, with its kind: `kineto.rs` tells the
    /// guard's refusals (`Other`) from gzip's damage by it.
    #[test]
    fn an_error_comes_after_the_bytes_before_it() {
        let len = CHUNK_BYTES + 5;
        let mut r = ReadAhead::new(source(len, 999, Some(io::ErrorKind::InvalidData))).unwrap();
        let mut got = Vec::new();
        let e = r.read_to_end(&mut got).unwrap_err();
        assert_eq!(got.len(), len);
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(r.read(&mut [0u8; 8]).unwrap(), 0, "then the end");
    }

    /// A caller that stops reading leaves no thread waiting: dropping the reader ends it at its
    /// next hand-over (a file of many chunks, read one byte of).
    #[test]
    fn a_reader_dropped_early_ends_its_thread() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        /// A source that says when the thread let go of it.
        struct Watched(Source, Arc<AtomicBool>);
        impl Read for Watched {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                self.0.read(buf)
            }
        }
        impl Drop for Watched {
            fn drop(&mut self) {
                self.1.store(true, Ordering::SeqCst);
            }
        }
        let gone = Arc::new(AtomicBool::new(false));
        let watched = Watched(source(64 * CHUNK_BYTES, 1 << 16, None), gone.clone());
        let mut r = ReadAhead::new(watched).unwrap();
        let mut one = [0u8; 1];
        r.read_exact(&mut one).unwrap();
        drop(r);
        let started = std::time::Instant::now();
        while !gone.load(Ordering::SeqCst) {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(10),
                "the reading thread still holds its source"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}
