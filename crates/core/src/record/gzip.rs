//! Compressing a results file on several cores: the JSON cut in chunks, each compressed as a
//! gzip member of its own by a pool of threads, the members written in order.
//!
//! A run of many trials writes gigabytes of JSON (2.2 GB for the catalogue at 1,000 trials),
//! and deflate, not serialization, sets the pace: one core compressed about 32 MB/s on an H100
//! host, so `scenario.sleep.grid`'s 1.3 GB took 40 s, while the run went on and the records
//! waiting for the writer piled up in memory. Concatenated gzip members are one gzip file
//! (RFC 1952, §2.2): `gzip -d`, Python's `gzip` and our reader (`MultiGzDecoder`) read them as
//! one stream. Chunks of 4 MiB cost about 0.1 % of the compressed size against one member.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

/// JSON bytes per gzip member.
const CHUNK: usize = 4 << 20;

/// The deflate level: 4 of 9. For the record of a run beside two neighbours
/// (`contended-two-h100`, 91 MB of JSON), on a 2-core CI machine, 0.68 s and 9.6 MB, where
/// zlib's default (6) took 1.45 s for 9.1 MB and level 1 0.3 s for 13.9 MB.
const LEVEL: u32 = 4;

/// Compressing threads: enough to keep ahead of serialization, and two cores left to the lab
/// (its issuing and pacing threads) where the machine has them.
fn workers() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.saturating_sub(2).clamp(1, 4)
}

type Job = (Vec<u8>, SyncSender<std::io::Result<Vec<u8>>>);

/// Writes `write`'s bytes to `out` as gzip, compressed on [`workers`] threads; the threads end
/// with the call. `write` gets a buffered writer: small writes cost nothing.
pub fn compress<T>(
    out: &mut dyn Write,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<T>,
) -> std::io::Result<T> {
    let workers = workers();
    let (jobs, queue) = sync_channel::<Job>(workers);
    let queue = Arc::new(Mutex::new(queue));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let queue = Arc::clone(&queue);
            scope.spawn(move || deflate_jobs(&queue));
        }
        let mut chunks = Chunks {
            out,
            in_flight: 2 * workers,
            jobs: Some(jobs),
            buf: Vec::with_capacity(CHUNK),
            pending: VecDeque::new(),
        };
        let value = write(&mut chunks)?;
        chunks.finish()?;
        Ok(value)
    })
}

/// One worker: compresses chunks until the sender is gone.
fn deflate_jobs(queue: &Mutex<Receiver<Job>>) {
    loop {
        let job = match queue.lock() {
            Ok(q) => q.recv(),
            Err(_) => return,
        };
        let Ok((chunk, done)) = job else { return };
        let mut gz = flate2::write::GzEncoder::new(
            Vec::with_capacity(chunk.len() / 4),
            flate2::Compression::new(LEVEL),
        );
        let member = gz.write_all(&chunk).and_then(|()| gz.finish());
        // The writer may have given up (an error on its side); nothing is waiting then.
        let _ = done.send(member);
    }
}

/// The writer `compress` hands out: fills chunks, sends each to the workers, writes their
/// members in order, at most a few chunks behind.
struct Chunks<'a> {
    out: &'a mut dyn Write,
    /// Chunks in flight at most: one per worker, and as many compressed and waiting.
    in_flight: usize,
    jobs: Option<SyncSender<Job>>,
    buf: Vec<u8>,
    pending: VecDeque<Receiver<std::io::Result<Vec<u8>>>>,
}

impl Chunks<'_> {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        while self.pending.len() >= self.in_flight {
            self.write_oldest()?;
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        let (done, member) = sync_channel(1);
        let jobs = self.jobs.as_ref().ok_or_else(gone)?;
        jobs.send((chunk, done)).map_err(|_| gone())?;
        self.pending.push_back(member);
        Ok(())
    }

    fn write_oldest(&mut self) -> std::io::Result<()> {
        if let Some(member) = self.pending.pop_front() {
            let bytes = member.recv().map_err(|_| gone())??;
            self.out.write_all(&bytes)?;
        }
        Ok(())
    }

    /// Sends the last chunk, writes every member, and lets the workers end.
    fn finish(&mut self) -> std::io::Result<()> {
        self.send()?;
        self.jobs = None;
        while !self.pending.is_empty() {
            self.write_oldest()?;
        }
        self.out.flush()
    }
}

impl Drop for Chunks<'_> {
    /// On an error the workers must still end, or the scope would wait for them forever.
    fn drop(&mut self) {
        self.jobs = None;
    }
}

fn gone() -> std::io::Error {
    std::io::Error::other("a compressing thread ended early")
}

impl Write for Chunks<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let room = CHUNK - self.buf.len();
        let n = data.len().min(room);
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == CHUNK {
            self.send()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn members_read_back_as_one_stream_in_order() {
        // Three and a half chunks of text that shows any reordering.
        let text: Vec<u8> = (0..(CHUNK * 7 / 2) / 8)
            .flat_map(|i| format!("{:07}\n", i % 10_000_000).into_bytes())
            .collect();
        let mut file = Vec::new();
        let n = compress(&mut file, |w| w.write_all(&text).map(|()| 7)).unwrap();
        assert_eq!(n, 7);
        let mut back = Vec::new();
        flate2::read::MultiGzDecoder::new(&file[..])
            .read_to_end(&mut back)
            .unwrap();
        assert!(back == text, "read back differs");
        let mut empty = Vec::new();
        compress(&mut empty, |_| Ok(())).unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn an_error_of_the_writer_ends_the_threads_and_is_returned() {
        let err = compress(&mut Vec::new(), |w| {
            w.write_all(&vec![b'x'; CHUNK * 3])?;
            Err::<(), _>(std::io::Error::other("stop"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "stop");
    }
}
