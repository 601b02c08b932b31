//! Writing a results file claim by claim, while the run goes on.
//!
//! A run of many trials holds far more stamps than memory should: the whole catalogue at 1,000
//! trials is about 6 GB of JSON. So the run hands each claim's record to a [`RunWriter`] as soon
//! as the claim is final; a thread of its own serializes and compresses it into the file while the
//! GPU runs the next claim, and the record is dropped once written. The run keeps only what its
//! reports draw ([`super::ClaimRecord::kept`]). The file is written atomically
//! ([`crate::border::atomic_write`]): a run that ends early leaves no partial file, and the old
//! file, if any, stays.
//!
//! The text is the same JSON object [`super::RunRecord::save`] writes (both go through
//! [`write_run`]): the schema, the claims in the order they finished, then the rest of the run
//! (its calibration, trial count, neighbours and timing), known last. Readers take the keys in
//! any order; [`super::reader`] parses the rest at the end, so `judge --write` can write each
//! claim as it reads it.

use super::run::{ClaimRecord, RunRecord};
use crate::border::counted::Counted;
use crate::border::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Records waiting for the writer thread at most, beside the one being written. A claim's
/// record may take the writer longer than the next claims take to run (`scenario.sleep.grid` at
/// 1,000 trials: about 10 s, against 3 s for most claims), and at the default 5 trials many
/// claims end within a millisecond or two of each other while the writer spends tens of
/// milliseconds on one record: with 4 queued, an idle catalogue run on an H200 waited 21–62 ms
/// for the writer (its 48 MB of JSON written in 0.23 s beside the run). What records hold is
/// bounded by their bytes ([`QUEUE_BYTES`]); this bounds their number. A run that outpaces the writer further waits for
/// it (the wait is counted, [`WriteStats::waited`]) instead of piling records up in memory.
const QUEUE: usize = 64;

/// The most bytes ([`ClaimRecord::kept_bytes`]: stamps, trials, judgements) the records handed
/// to the writer and not yet written may hold, beside the one record being handed over: a run hands over a record
/// only once the writer is this close to done. Without it, at 1,000 trials, the writer was
/// still at `scenario.sleep.grid` (480 MB of stamps) while three claims after it ran and queued
/// theirs: the run peaked at 1,132 MiB on an H100, 520 MiB above that claim alone.
const QUEUE_BYTES: u64 = 64 << 20;

/// Bytes of records handed to the writer and not yet written and dropped, and whether the
/// writer thread has ended (then nothing is waited for).
#[derive(Default)]
struct Pending {
    state: std::sync::Mutex<(u64, bool)>,
    written: std::sync::Condvar,
}

impl Pending {
    /// Waits until at most [`QUEUE_BYTES`] are pending (or the writer has ended), then adds
    /// `bytes`.
    fn add(&self, bytes: u64) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        while state.0 > QUEUE_BYTES && !state.1 {
            match self.written.wait(state) {
                Ok(s) => state = s,
                Err(_) => return,
            }
        }
        state.0 += bytes;
    }

    fn done(&self, bytes: u64) {
        if let Ok(mut state) = self.state.lock() {
            state.0 = state.0.saturating_sub(bytes);
        }
        self.written.notify_all();
    }

    fn close(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.1 = true;
        }
        self.written.notify_all();
    }
}

/// Closes [`Pending`] when the writer thread ends, however it ends.
struct Closing<'a>(&'a Pending);

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// How a file was written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// JSON bytes written (before compression).
    pub bytes: u64,
    /// Time the writer thread spent serializing and compressing, beside the run.
    pub busy: Duration,
    /// Time the run itself spent waiting for the writer: handing over records while the queue was
    /// full, and the end of the file after the last claim. This is what writing added to the run.
    pub waited: Duration,
}

/// What the writer thread returns: the JSON bytes written and the time it spent.
type Written = Result<(u64, Duration), Error>;

enum Message {
    /// A record and its [`ClaimRecord::kept_bytes`].
    Claim(Arc<ClaimRecord>, u64),
    End(Box<RunRecord>),
}

/// A results file being written by a thread of its own (see the module docs).
pub struct RunWriter {
    path: PathBuf,
    to_thread: Option<SyncSender<Message>>,
    /// `Err` where no thread could be started.
    thread: Option<Result<JoinHandle<Written>, Error>>,
    waited: Duration,
    pending: Arc<Pending>,
}

impl RunWriter {
    /// Starts writing `path` (gzip when it ends in `.gz`): the claims come through
    /// [`RunWriter::claim`], the rest of the run through [`RunWriter::finish`].
    pub fn start(path: &Path) -> RunWriter {
        let (tx, rx) = sync_channel(QUEUE);
        let target = path.to_path_buf();
        let pending = Arc::new(Pending::default());
        let written = Arc::clone(&pending);
        let thread = std::thread::Builder::new()
            .name("results-writer".into())
            .spawn(move || write_from(&target, rx, &written))
            .map_err(|e| file_error(path, format!("no thread to write it: {e}")));
        RunWriter {
            path: path.to_path_buf(),
            to_thread: thread.is_ok().then_some(tx),
            thread: Some(thread),
            waited: Duration::ZERO,
            pending,
        }
    }

    /// Hands one claim's record to the writer. A writer that failed takes no more records; its
    /// error comes from [`RunWriter::finish`].
    pub fn claim(&mut self, record: Arc<ClaimRecord>) {
        let bytes = record.kept_bytes();
        self.claim_sized(record, bytes);
    }

    /// [`RunWriter::claim`], with the bytes the record holds ([`ClaimRecord::kept_bytes`]) made
    /// once by the caller, for every writer it hands the record to.
    pub fn claim_sized(&mut self, record: Arc<ClaimRecord>, bytes: u64) {
        let started = Instant::now();
        if let Some(tx) = &self.to_thread {
            self.pending.add(bytes);
            if tx.send(Message::Claim(record, bytes)).is_err() {
                self.to_thread = None;
            }
        }
        self.waited += started.elapsed();
    }

    /// Ends the file with the rest of `run` (its claims are not written: they came through
    /// [`RunWriter::claim`]) and waits for it to be in place.
    pub fn finish(mut self, run: &RunRecord) -> Result<WriteStats, Error> {
        let started = Instant::now();
        if let Some(tx) = self.to_thread.take() {
            let _ = tx.send(Message::End(Box::new(run.clone_head())));
        }
        let outcome = self.join();
        let waited = self.waited + started.elapsed();
        let (bytes, busy) = outcome?;
        Ok(WriteStats {
            bytes,
            busy,
            waited,
        })
    }

    fn join(&mut self) -> Result<(u64, Duration), Error> {
        match self.thread.take() {
            Some(Ok(thread)) => thread
                .join()
                .unwrap_or_else(|_| Err(file_error(&self.path, "its writer thread panicked"))),
            Some(Err(e)) => Err(e),
            None => Err(file_error(&self.path, "it was already finished")),
        }
    }
}

impl Drop for RunWriter {
    /// A writer dropped without [`RunWriter::finish`] (a run that stopped) writes nothing: the
    /// thread sees the queue close before the end and removes its temporary file.
    fn drop(&mut self) {
        self.to_thread = None;
        if self.thread.is_some() {
            let _ = self.join();
        }
    }
}

fn file_error(path: &Path, detail: impl ToString) -> Error {
    Error::File {
        path: crate::border::shown::path(path),
        detail: detail.to_string(),
    }
}

/// The writer thread: the header, each claim as it arrives, the timing; the bytes written and
/// the time spent.
fn write_from(
    path: &Path,
    rx: Receiver<Message>,
    pending: &Pending,
) -> Result<(u64, Duration), Error> {
    let _closing = Closing(pending);
    let mut busy = Duration::ZERO;
    let mut bytes = 0;
    let head = std::cell::Cell::new(None);
    // The next claim is asked for once the one before was written and dropped: the run may hand
    // over more, and every few claims' memory goes back to the system (`Trimmer`).
    let mut last = 0;
    let mut trimmer = crate::border::heap::Trimmer::default();
    let mut claims = std::iter::from_fn(|| {
        trimmer.freed(last);
        pending.done(std::mem::take(&mut last));
        match rx.recv() {
            Ok(Message::Claim(c, held)) => {
                last = held;
                Some(c)
            }
            Ok(Message::End(run)) => {
                head.set(Some(run));
                None
            }
            Err(_) => None,
        }
    });
    if !crate::border::atomic_write::writes_directly(path) {
        crate::border::atomic_write::write_atomically(path, |out| {
            let tail = || head.take().map(|run| *run);
            write_run(out, path, claims.by_ref(), &mut busy, &mut bytes, tail)
        })?;
        return Ok((bytes, busy));
    }
    // A device or our own standard output is written at the end, in one piece, from a spool: the
    // file would otherwise be written between the run's own lines, and our standard output is
    // locked while it is written.
    let io = |e: std::io::Error| file_error(path, e);
    let mut spool = tempfile::tempfile().map_err(io)?;
    let tail = || head.take().map(|run| *run);
    write_run(&mut spool, path, claims, &mut busy, &mut bytes, tail).map_err(io)?;
    std::io::Seek::rewind(&mut spool).map_err(io)?;
    crate::border::atomic_write::write_atomically(path, |out| {
        std::io::copy(&mut spool, out).map(drop)
    })?;
    Ok((bytes, busy))
}

/// Writes a results file: `claims` as they come, then the rest of the run that `tail` gives
/// once the claims are done (its own claims are not written) (`None`: the run ended early, and the write fails so that no partial
/// file is kept). Compact and gzip-compressed when `path` ends in `.gz`, pretty-printed
/// otherwise. `busy` sums the time spent here, not the time waiting for claims; `bytes` counts
/// the JSON written.
pub fn write_run<C: std::borrow::Borrow<ClaimRecord>>(
    out: &mut dyn Write,
    path: &Path,
    claims: impl Iterator<Item = C>,
    busy: &mut Duration,
    bytes: &mut u64,
    tail: impl FnOnce() -> Option<RunRecord>,
) -> std::io::Result<()> {
    if !is_gzip(path) {
        let mut json = Counted::new(std::io::BufWriter::with_capacity(1 << 16, out), bytes);
        body(&mut json, claims, busy, true, tail)?;
        return json.flush();
    }
    // Compressed on several cores (`gzip.rs`): deflate, not serialization, sets the pace.
    super::gzip::compress(out, |gz| {
        let mut json = Counted::new(gz, bytes);
        body(&mut json, claims, busy, false, tail)
    })
}

fn value(out: &mut impl Write, v: &impl serde::Serialize, pretty: bool) -> std::io::Result<()> {
    match pretty {
        true => serde_json::to_writer_pretty(out, v)?,
        false => serde_json::to_writer(out, v)?,
    }
    Ok(())
}

fn body<C: std::borrow::Borrow<ClaimRecord>>(
    out: &mut impl Write,
    claims: impl Iterator<Item = C>,
    busy: &mut Duration,
    pretty: bool,
    tail: impl FnOnce() -> Option<RunRecord>,
) -> std::io::Result<()> {
    let started = Instant::now();
    let nl = if pretty { "\n" } else { "" };
    write!(
        out,
        "{{{nl}\"schema\":{},{nl}\"claims\":[",
        super::SCHEMA_VERSION
    )?;
    *busy += started.elapsed();
    for (i, claim) in claims.enumerate() {
        let started = Instant::now();
        if i > 0 {
            out.write_all(b",")?;
        }
        out.write_all(nl.as_bytes())?;
        value(out, claim.borrow(), pretty)?;
        *busy += started.elapsed();
    }
    let started = Instant::now();
    let Some(head) = tail() else {
        return Err(std::io::Error::other(
            "the run ended before its last claim; no results file is written for a partial run",
        ));
    };
    write!(out, "{nl}],{nl}\"tool\":")?;
    value(out, &head.tool, pretty)?;
    write!(out, ",{nl}\"calibration\":")?;
    value(out, &head.calibration, pretty)?;
    write!(
        out,
        ",{nl}\"trials_per_claim\":{},{nl}",
        head.trials_per_claim
    )?;
    if let Some(sharing) = &head.sharing {
        write!(out, "\"sharing\":")?;
        value(out, sharing, pretty)?;
        write!(out, ",{nl}")?;
    }
    write!(out, "\"timing\":")?;
    value(out, &head.timing, pretty)?;
    write!(out, "{nl}}}{nl}")?;
    *busy += started.elapsed();
    Ok(())
}

/// Whether a results file's name asks for gzip.
pub fn is_gzip(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "gz")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_waits_for_the_writer_only_while_much_is_pending_and_never_once_it_ended() {
        let pending = Arc::new(Pending::default());
        pending.add(QUEUE_BYTES + 1);
        let (tx, rx) = std::sync::mpsc::channel();
        let waiting = Arc::clone(&pending);
        let run = std::thread::spawn(move || {
            waiting.add(5);
            tx.send(()).unwrap();
        });
        // The second record waits while the first is over the bound …
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
        // … and is handed over once it is written.
        pending.done(QUEUE_BYTES + 1);
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        run.join().unwrap();
        pending.add(QUEUE_BYTES * 2);
        pending.close();
        // A writer that ended takes nothing more, and nobody waits for it.
        pending.add(1);
    }
}
