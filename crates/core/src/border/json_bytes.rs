//! Fast steps over JSON text for the guard's lexer, which follows it byte by byte.
//!
//! The lexer only cares about a few bytes: quotes, backslashes, brackets, commas, colons and
//! blanks. A results file is nearly all digits and short keys (`{"start_ns":…,"end_ns":…}` a
//! block), and stepping through each digit, or calling `memchr` for every six-byte key, took
//! most of `judge`'s time on a file of a million stamps. These take a run of bytes at once: a
//! table lookup per byte with nothing stored between bytes, and a short look before `memchr`
//! for strings, which are mostly keys.

/// The bytes of a number or a literal (`true`, `false`, `null`).
const SCALAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || c == b'.' || c == b'-' || c == b'+';
        b += 1;
    }
    t
};

/// How many of the first bytes are decimal digits, taken eight at a time: the digits of the
/// stamps are most of a results file.
#[inline]
fn digits(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0xF0 * ONES;
    let mut i = 0;
    while let Some(word) = bytes.get(i..i + 8) {
        let w = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        // Every byte is 0x30..=0x39: its high nibble is 3, and adding 6 keeps it 3.
        if w & HIGH != 0x30 * ONES || w.wrapping_add(0x06 * ONES) & HIGH != 0x30 * ONES {
            break;
        }
        i += 8;
    }
    i
}

/// How many of the first bytes are part of a number or a literal.
#[inline]
pub fn scalar_run(bytes: &[u8]) -> usize {
    let i = digits(bytes);
    i + bytes[i..]
        .iter()
        .position(|&b| !SCALAR[b as usize])
        .unwrap_or(bytes.len() - i)
}

/// Where the first quote or backslash is: the end of a string's plain run. Strings are mostly
/// keys of a few bytes, for which a look at the first ones is faster than setting up `memchr`.
#[inline]
pub fn quote_or_backslash(bytes: &[u8]) -> Option<usize> {
    const SHORT: usize = 24;
    let head = &bytes[..bytes.len().min(SHORT)];
    match head.iter().position(|&b| b == b'"' || b == b'\\') {
        Some(k) => Some(k),
        None if bytes.len() <= SHORT => None,
        None => memchr::memchr2(b'"', b'\\', &bytes[SHORT..]).map(|k| k + SHORT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_stop_at_the_first_byte_of_another_kind() {
        assert_eq!(scalar_run(b"1234,5"), 4);
        assert_eq!(scalar_run(b"-1.5e+3}"), 7);
        assert_eq!(scalar_run(b"true"), 4);
        assert_eq!(scalar_run(b" 1"), 0);
        // Eight at a time and one at a time agree, wherever the run ends.
        for n in 0..20 {
            for tail in [b'"', b',', b'a', b'/', b':', b'}'] {
                let mut text = b"1234567890".repeat(2)[..n].to_vec();
                text.push(tail);
                text.extend_from_slice(b"99");
                let scalar = SCALAR[tail as usize];
                assert_eq!(
                    scalar_run(&text),
                    if scalar { n + 3 } else { n },
                    "{n} {tail}"
                );
            }
        }
    }

    #[test]
    fn the_end_of_a_string_is_found_near_and_far() {
        assert_eq!(quote_or_backslash(b"start_ns\":1"), Some(8));
        assert_eq!(quote_or_backslash(b"a\\\"b"), Some(1));
        assert_eq!(quote_or_backslash(b"abc"), None);
        let mut far = vec![b'x'; 100];
        assert_eq!(quote_or_backslash(&far), None);
        far.push(b'"');
        assert_eq!(quote_or_backslash(&far), Some(100));
        far[30] = b'\\';
        assert_eq!(quote_or_backslash(&far), Some(30));
    }
}
