//! Counting the bytes written through a writer: the size of a results file as it is written
//! (`record/writer.rs`), and the size a value would take as JSON without keeping it (what the
//! reports keep of a claim, `record/run.rs`).

use std::io::Write;

/// Counts the bytes that pass.
pub struct Counted<'a, W> {
    inner: W,
    bytes: &'a mut u64,
}

impl<'a, W> Counted<'a, W> {
    pub fn new(inner: W, bytes: &'a mut u64) -> Counted<'a, W> {
        Counted { inner, bytes }
    }
}

impl<W: Write> Write for Counted<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        *self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The bytes of `v` written as JSON, counted without being kept. Writing fails only where a
/// value cannot be written as JSON, which a value read from JSON always can: nothing then.
pub fn json_bytes(v: &impl serde::Serialize) -> u64 {
    let mut bytes = 0;
    let _ = serde_json::to_writer(Counted::new(std::io::sink(), &mut bytes), v);
    bytes
}
