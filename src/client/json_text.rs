//! The bytes of a JSON string: finding the run of bytes that need no escape, for the chunk
//! scan that reads strings and for the request body that writes them. Eight bytes at a time:
//! serde_json's escaper and reader look at one byte at a time, which made a long prompt's
//! serialization the largest per-request cost after the scan.

/// Bytes that end a run of plain string bytes: the quote, the backslash and raw control
/// characters.
pub(crate) const STRING_STOP: [bool; 256] = {
    let mut stop = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        stop[b] = true;
        b += 1;
    }
    stop[b'"' as usize] = true;
    stop[b'\\' as usize] = true;
    stop
};

/// A mask whose lowest set bit is the high bit of the first of eight little-endian bytes that
/// ends a run of plain string bytes ([`STRING_STOP`]); zero when none does. Bits above the
/// lowest may be false alarms (a borrow runs on), so only the lowest is read.
fn string_stops(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // A byte below `n` (at most 0x80) sets its high bit in `(x - n) & !x`.
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGHS;
    below(word, 0x20)
        | below(word ^ (ONES * u64::from(b'"')), 1)
        | below(word ^ (ONES * u64::from(b'\\')), 1)
}

/// The length of the run of plain string bytes at the start of `b`: up to the first byte in
/// [`STRING_STOP`], or all of it.
pub(crate) fn plain_run(b: &[u8]) -> usize {
    // Eight bytes at a time beats memchr's set-up on short strings, and checks for raw
    // control characters (invalid JSON) in the same pass.
    let mut i = 0;
    while let Some(word) = b.get(i..i + 8) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let stops = string_stops(u64::from_le_bytes(bytes));
        if stops != 0 {
            return i + (stops.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while b
        .get(i)
        .is_some_and(|&byte| !STRING_STOP[usize::from(byte)])
    {
        i += 1;
    }
    i
}

/// The length of the run of plain string bytes at the start of `b` ([`plain_run`]) when the
/// run is UTF-8. An ASCII run, the usual one, is known as such from the same pass.
#[inline]
pub(crate) fn plain_utf8_run(b: &[u8]) -> Option<usize> {
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut i = 0;
    let mut seen = 0u64;
    while let Some(word) = b.get(i..i + 8) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let word = u64::from_le_bytes(bytes);
        let stops = string_stops(word);
        if stops != 0 {
            let plain = (stops.trailing_zeros() / 8) as usize;
            seen |= word & ((1u64 << (8 * plain)) - 1);
            i += plain;
            return (seen & HIGHS == 0 || std::str::from_utf8(&b[..i]).is_ok()).then_some(i);
        }
        seen |= word;
        i += 8;
    }
    while let Some(&byte) = b.get(i) {
        if STRING_STOP[usize::from(byte)] {
            break;
        }
        seen |= u64::from(byte);
        i += 1;
    }
    (seen & HIGHS == 0 || std::str::from_utf8(&b[..i]).is_ok()).then_some(i)
}

/// Append `text` as a JSON string, escaped exactly as serde_json escapes it.
pub(crate) fn push_str(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut rest = text.as_bytes();
    out.reserve(rest.len() + 2);
    out.push(b'"');
    loop {
        let plain = plain_run(rest);
        out.extend_from_slice(&rest[..plain]);
        let Some(&byte) = rest.get(plain) else {
            break;
        };
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0x0f)],
            ]),
        }
        rest = &rest[plain + 1..];
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        // No regression files: the top level of the repository is fixed.
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::default()
        })]
        #[test]
        fn a_word_stops_where_the_byte_table_stops(bytes in prop::array::uniform8(prop_oneof![
            Just(b'"'), Just(b'\\'), 0u8..0x20, 0x20u8..0x80, 0x80u8..=0xff,
        ])) {
            let first = bytes.iter().position(|&b| STRING_STOP[usize::from(b)]);
            let stops = string_stops(u64::from_le_bytes(bytes));
            let found = (stops != 0).then(|| (stops.trailing_zeros() / 8) as usize);
            prop_assert_eq!(found, first, "{:?}", bytes);
        }

        #[test]
        fn a_plain_run_is_utf8_exactly_when_its_bytes_are(bytes in prop::collection::vec(prop_oneof![
            Just(b'"'), Just(b'\\'), 0u8..0x20, 0x20u8..0x80, 0x80u8..=0xff,
            Just(0xc3), Just(0xa9), Just(0xe2), Just(0x82), Just(0xac),
        ], 0..40)) {
            let plain = bytes
                .iter()
                .position(|&b| STRING_STOP[usize::from(b)])
                .unwrap_or(bytes.len());
            let expected = std::str::from_utf8(&bytes[..plain]).is_ok().then_some(plain);
            prop_assert_eq!(plain_run(&bytes), plain);
            prop_assert_eq!(plain_utf8_run(&bytes), expected, "{:?}", bytes);
        }

        #[test]
        fn strings_are_written_as_serde_writes_them(text in "(?s).{0,40}|[a-z \"\\\\\\n\\t\\x00-\\x1f\\x7fé]{0,40}") {
            let mut out = Vec::new();
            push_str(&mut out, &text);
            prop_assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&text).unwrap());
        }
    }

    #[test]
    fn a_long_plain_string_is_copied_whole() {
        let text = "alpha beta ".repeat(100);
        let mut out = Vec::new();
        push_str(&mut out, &text);
        assert_eq!(out.len(), text.len() + 2);
    }
}
