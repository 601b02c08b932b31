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

/// What a byte is between an array's items: part of a number or a literal, the comma between
/// items, a blank, or anything else (a quote, a bracket), which the lexer steps alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InArray {
    Scalar,
    Comma,
    Blank,
    Other,
}

/// [`InArray`] of every byte; blanks are `u8::is_ascii_whitespace`'s.
pub const IN_ARRAY: [InArray; 256] = {
    let mut t = [InArray::Other; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = if SCALAR[b] {
            InArray::Scalar
        } else if c == b',' {
            InArray::Comma
        } else if c.is_ascii_whitespace() {
            InArray::Blank
        } else {
            InArray::Other
        };
        b += 1;
    }
    t
};

/// Eight bytes of an array's items that are all digits, commas and spaces: how many commas,
/// and how many spaces end them (8: all are spaces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainItems {
    pub commas: u64,
    pub trailing_blanks: u64,
}

/// [`PlainItems`] of the eight bytes of `w` (little-endian), or `None` where any is another
/// byte. Each test sets a byte's high bit where it holds, without carries between bytes: every
/// byte is first checked to be below 0x80.
#[inline]
pub fn plain_items(w: u64) -> Option<PlainItems> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x80 * ONES;
    const LOW: u64 = 0x7F * ONES;
    if w & HIGH != 0 {
        return None;
    }
    // A byte equal to `c`: its xor is zero, and a zero byte plus 0x7F keeps the high bit clear.
    let equal = |c: u64| {
        let x = w ^ (c * ONES);
        !(((x & LOW) + LOW) | x) & HIGH
    };
    let (commas, spaces) = (equal(b',' as u64), equal(b' ' as u64));
    // 0x30..=0x39: at least 0x30 (adding 0x50 reaches 0x80) and below 0x3A (adding 0x46 does not).
    let digits = (w + 0x50 * ONES) & !(w + 0x46 * ONES) & HIGH;
    if digits | commas | spaces != HIGH {
        return None;
    }
    let items = digits | commas;
    Some(PlainItems {
        // One bit a comma, at the bottom of its byte: the product's top byte sums them (at
        // most 8, no carry), without the popcount instruction x86-64's baseline lacks.
        commas: (commas >> 7).wrapping_mul(ONES) >> 56,
        trailing_blanks: u64::from(items.leading_zeros() / 8),
    })
}

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

/// Whether `b` can be part of a number or a literal.
#[inline]
pub fn is_scalar(b: u8) -> bool {
    SCALAR[b as usize]
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

    proptest::proptest! {
        /// Eight bytes at once say what the bytes one by one say.
        #[test]
        fn plain_items_are_what_each_byte_is(
            word in proptest::array::uniform8(proptest::sample::select(
                b"0123456789, /:\t\n-\xb0\xac\xa0\x10".to_vec())),
        ) {
            let plain = word.iter().all(|&b| b.is_ascii_digit() || b == b',' || b == b' ');
            let want = plain.then(|| PlainItems {
                commas: word.iter().filter(|&&b| b == b',').count() as u64,
                trailing_blanks: word.iter().rev().take_while(|&&b| b == b' ').count() as u64,
            });
            proptest::prop_assert_eq!(plain_items(u64::from_le_bytes(word)), want);
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
