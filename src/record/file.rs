//! Reading and writing results files: gzip by name, every read bounded and checked
//! ([`super::check`]), every write atomic.

use super::check::check;
use super::run::{RunRecord, SCHEMA_VERSION};
use crate::border::error::Error;
use std::path::Path;

impl RunRecord {
    /// Read a results file; a name ending in `.gz` is read through gzip (see [`RunRecord::save`]).
    ///
    /// The file is user input: at most [`crate::border::limits::read_limit`] bytes are read (after
    /// decompression), and everything is checked before it is returned ([`super::check`]): a
    /// damaged or crafted file is refused with a message naming the claim and the field.
    /// A claim without a scenario table whose id is `scenario.sleep.*`, `scenario.pipeline.*`
    /// or `scenario.prefetch.*` gets that table ([`crate::Table::from_legacy_id`]): files
    /// written before claims carried the field load as they were recorded.
    pub fn load(path: &Path) -> Result<RunRecord, Error> {
        use std::io::BufReader;
        let file_err = |detail: String| Error::File {
            path: path.display().to_string(),
            detail,
        };
        let file = crate::border::input_file::open_regular(path).map_err(file_err)?;
        let limit = crate::border::limits::read_limit();
        // Parsed as it streams (`bounded_json`): no copy of the whole text, every size counted
        // before memory is taken. Concatenated gzip members are one gzip stream; whatever
        // follows the object is refused.
        let parsed = if is_gzip(path) {
            let gz = flate2::read::MultiGzDecoder::new(BufReader::new(file));
            crate::border::bounded_json::read_json::<RunRecord>(gz, limit)
        } else {
            crate::border::bounded_json::read_json::<RunRecord>(file, limit)
        };
        let mut record = parsed.map_err(|e| match e.starts_with("larger than") {
            true => file_err(e),
            false => file_err(format!("not a stream-litmus results file: {e}")),
        })?;
        // Files written before claims carried `table` name a scenario row only by its id.
        for c in &mut record.claims {
            if c.claim.table.is_none() {
                c.claim.table = crate::judge::claim::Table::from_legacy_id(&c.claim.id);
            }
        }
        if record.schema != SCHEMA_VERSION {
            return Err(file_err(format!(
                "results schema {} is not the supported {SCHEMA_VERSION}",
                record.schema
            )));
        }
        check(&record).map_err(|e| {
            file_err(format!(
                "{e}. The file is damaged or was edited; nothing in it was used (re-record it, \
                 or restore it from version control)"
            ))
        })?;
        Ok(record)
    }

    /// Write the results as JSON: pretty-printed, or compact and gzip-compressed when the name
    /// ends in `.gz`. Raw stamps dominate a record (a 4096-block kernel writes 4096 of them per
    /// trial), and they compress about tenfold, which keeps the scenarios' runs small enough to
    /// commit as fixtures. The file is replaced atomically: a failed write leaves the old one.
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        crate::border::atomic_write::write_atomically(path, |out| {
            if !is_gzip(path) {
                serde_json::to_writer_pretty(&mut *out, self)?;
                return Ok(());
            }
            // Level 4 of 9: for the record of a run beside two neighbours (`contended-two-h100`,
            // 91 MB of JSON), on a 2-core CI machine, 0.68 s and 9.6 MB, where zlib's default
            // (6) took 1.45 s for 9.1 MB and level 1 0.3 s for 13.9 MB. The write comes after
            // the run, while the user waits, and a record beside a neighbour, with its retries,
            // is the largest there is.
            // serde_json writes a token at a time; each write into the encoder is a call into
            // deflate, so they are gathered first (beside a neighbour, with retries, a record is
            // 55 MB of JSON: 8 s unbuffered, against 1 s here).
            let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::new(4));
            let mut json = std::io::BufWriter::with_capacity(1 << 16, &mut gz);
            serde_json::to_writer(&mut json, self)?;
            std::io::Write::flush(&mut json)?;
            drop(json);
            gz.finish().map(drop)
        })
    }
}

fn is_gzip(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "gz")
}
