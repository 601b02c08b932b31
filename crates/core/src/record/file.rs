//! Reading and writing results files: gzip by name, every read bounded and checked
//! ([`super::check`]), every write atomic.

use super::check;
use super::error::RecordError;
use super::run::{ClaimRecord, RunRecord, SCHEMA_VERSION};
use crate::border::error::Error;
use std::path::Path;

impl RunRecord {
    /// Read a results file; a name ending in `.gz` is read through gzip (see [`RunRecord::save`]).
    ///
    /// The file is user input: each claim and the rest of the file are read to at most
    /// [`crate::border::limits::read_limit`] bytes each (after decompression), and everything
    /// is checked before it is returned ([`super::check`]): a damaged or crafted file is refused
    /// with a message naming the claim and the field. The whole run is in memory at the end;
    /// [`RunRecord::read_each`] reads one claim at a time. A claim without a scenario table whose
    /// id is `scenario.sleep.*`, `scenario.pipeline.*` or `scenario.prefetch.*` gets that table
    /// ([`crate::Table::from_legacy_id`]): files written before claims carried the field load
    /// as they were recorded.
    pub fn load(path: &Path) -> Result<RunRecord, Error> {
        let mut claims = Vec::new();
        let mut run = RunRecord::read(path, true, |c| {
            claims.push(c);
            Ok(())
        })?;
        run.claims = claims;
        Ok(run)
    }

    /// Reads a results file as [`RunRecord::load`] does, handing each claim, checked, to `each`
    /// as soon as it is read, in the file's order, so that memory holds one claim's stamps at a
    /// time ([`super::reader`]). Returns the run without its claims. The header is checked at
    /// the end (it may follow the claims): where it is refused, claims were already handed on,
    /// so a caller that prints them keeps what it prints until this returns.
    pub fn read_each(
        path: &Path,
        each: impl FnMut(ClaimRecord) -> Result<(), Error>,
    ) -> Result<RunRecord, Error> {
        RunRecord::read(path, false, each)
    }

    /// [`RunRecord::read_each`] for a caller that keeps every claim whole (`whole`) or what
    /// [`ClaimRecord::kept`] keeps of it: the read limit bounds that too.
    fn read(
        path: &Path,
        whole: bool,
        mut each: impl FnMut(ClaimRecord) -> Result<(), Error>,
    ) -> Result<RunRecord, Error> {
        use std::io::BufReader;
        let file_err = |detail: String| Error::File {
            path: crate::border::shown::path(path),
            detail,
        };
        let damaged = |e: &dyn std::fmt::Display| {
            file_err(format!(
                "{e}. The file is damaged or was edited; nothing in it was used (re-record it, \
                 or restore it from version control)"
            ))
        };
        let file =
            crate::border::input_file::open_regular(path).map_err(|e| file_err(e.to_string()))?;
        let limit = crate::border::limits::read_limit();
        let mut ids = std::collections::HashSet::new();
        // On any thread, each claim alone; then, in the file's order, whether its id is new,
        // before what its own check found (as `check::claim_in_file` says it).
        let alone = |c: &mut ClaimRecord| -> Result<(), RecordError> {
            // Files written before claims carried `table` name a scenario row only by its id.
            if c.claim.table.is_none() {
                c.claim.table = crate::judge::claim::Table::from_legacy_id(&c.claim.id);
            }
            Ok(check::claim_alone(c)?)
        };
        let mut one = |i: usize, c: ClaimRecord, checked: Result<(), RecordError>| {
            check::unique(i, &c, &mut ids)?;
            checked?;
            // An error of `each` is the caller's, passed through as it is.
            each(c).map_err(|e| RecordError::Caller(Box::new(e)))
        };
        // Concatenated gzip members are one gzip stream; whatever follows the object is refused.
        let read = if super::writer::is_gzip(path) {
            let gz = flate2::read::MultiGzDecoder::new(BufReader::new(file));
            super::reader::read_claims(gz, limit, whole, &alone, &mut one)
        } else {
            super::reader::read_claims(BufReader::new(file), limit, whole, &alone, &mut one)
        };
        let skeleton = read.map_err(|e| match e {
            RecordError::Caller(theirs) => *theirs,
            e if e.is_read_limit() => file_err(e.to_string()),
            e if e.is_in_a_claim() => damaged(&e),
            e => file_err(format!("not a stream-litmus results file: {e}")),
        })?;
        let record: RunRecord = serde_json::from_slice(&skeleton).map_err(|e| {
            let e = crate::border::error::shortened(&e.to_string());
            file_err(match e.starts_with("trailing characters") {
                true => format!(
                    "not a stream-litmus results file: data follows its JSON object ({e}); a \
                     results file is one object"
                ),
                false => format!("not a stream-litmus results file: {e}"),
            })
        })?;
        if !(1..=SCHEMA_VERSION).contains(&record.schema) {
            return Err(file_err(format!(
                "results schema {} is not one of the supported 1..={SCHEMA_VERSION} (a file \
                 written by a newer stream-litmus?)",
                record.schema
            )));
        }
        check::header(&record).map_err(|e| damaged(&e))?;
        Ok(record)
    }

    /// Write the results as JSON: pretty-printed, or compact and gzip-compressed when the name
    /// ends in `.gz`. Raw stamps dominate a record (a 4096-block kernel writes 4096 of them per
    /// trial), and they compress about tenfold, which keeps the scenarios' runs small enough to
    /// commit as fixtures. The file is replaced atomically: a failed write leaves the old one.
    /// A run's own results are written while it runs ([`super::RunWriter`]), in the same form.
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        crate::border::atomic_write::write_atomically(path, |out| {
            let (mut busy, mut bytes) = (std::time::Duration::ZERO, 0);
            let tail = || Some(self.clone_head());
            let claims = self.claims.iter();
            super::writer::write_run(out, path, claims, &mut busy, &mut bytes, tail)
        })
    }
}
