//! The SHA-256 of a file, for the record of what a verdict was judged on (`check --json`): a CI
//! job can tell that two runs judged the same trace.

use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

/// The size and the SHA-256 (lowercase hex) of the file at `path`, read in 1 MiB pieces.
pub fn sha256_file(path: &Path) -> std::io::Result<(u64, String)> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        bytes += n as u64;
    }
    let hex = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((bytes, hex))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_digest_of_abc_is_the_standard_one() {
        let dir = std::env::temp_dir().join(format!("sl-digest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("abc");
        std::fs::write(&p, b"abc").unwrap();
        let (n, hex) = super::sha256_file(&p).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
