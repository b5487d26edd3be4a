//! Text that is not UTF-8: a thesis saved by Chinese Windows is GB18030 (GBK), one from Taiwan
//! or Hong Kong Big5, one from Word "Unicode" UTF-16. Such bytes are detected (a byte order
//! mark, the shape of UTF-16, else `chardetng`, Firefox's detector) and decoded
//! (`encoding_rs`), and the record says which encoding it was read as; a guess that is not
//! confident is refused by name with the option that forces it (`--encoding`), never decoded
//! into replacement characters that would find nothing copied.

use std::fmt;

use encoding_rs::{Encoding, BIG5, EUC_JP, EUC_KR, GB18030, GBK, SHIFT_JIS, UTF_16BE, UTF_16LE};

use super::{InputError, InputErrorKind, ReadOptions};

/// A text encoding, by its WHATWG name (`GB18030`, `Big5`, `UTF-16LE`, ...).
pub type TextEncoding = &'static Encoding;

/// The encoding a label names (`gb18030`, `gbk`, `big5`, `utf-16`, `shift_jis`, `latin1`: the
/// WHATWG labels, case-insensitive); an error lists some.
pub fn encoding_for_label(label: &str) -> Result<TextEncoding, String> {
    // `utf-16` alone means little-endian, as Windows writes it.
    Encoding::for_label(label.trim().as_bytes()).ok_or_else(|| {
        format!(
            "unknown encoding {label:?}: give a WHATWG label such as utf-8, gb18030, gbk, big5, \
             utf-16le, utf-16be, shift_jis, euc-kr or windows-1252"
        )
    })
}

/// A document's bytes as text.
#[derive(Debug)]
pub(crate) struct Decoded {
    pub text: String,
    /// Bad sequences replaced (under `--lossy`).
    pub replaced: usize,
    /// The encoding it was read as, when not UTF-8.
    pub encoding: Option<TextEncoding>,
}

/// The name an encoding is reported by: GBK is read as GB18030, its superset, written as
/// its standard writes it (encoding_rs says `gb18030`).
pub fn encoding_name(e: TextEncoding) -> &'static str {
    if e == GBK || e == GB18030 {
        "GB18030"
    } else {
        e.name()
    }
}

/// What detection says of bytes that are not UTF-8.
struct Guess {
    encoding: TextEncoding,
    /// True when the bytes are that encoding beyond reasonable doubt: a byte order mark, or a
    /// multi-byte encoding that decodes every byte and many non-ASCII characters.
    confident: bool,
}

/// Decodes a document's bytes. UTF-8 is taken as it is (a byte order mark stays its first
/// character, so that offsets are the file's); other bytes are decoded as
/// [`ReadOptions::encoding`] says, else as `known` (the encoding an earlier record of the same
/// file was read as), else as detected when detection is confident. Otherwise the bytes are
/// refused, naming the encoding they look like, or, under `--lossy`, read as UTF-8 with bad
/// sequences replaced (counted).
pub(crate) fn decode_document(
    bytes: Vec<u8>,
    place: &(impl fmt::Display + ?Sized),
    base: usize,
    opts: &ReadOptions,
    known: &mut Option<TextEncoding>,
) -> Result<Decoded, InputError> {
    let bad = |message: String| InputError {
        place: place.to_string(),
        message,
        kind: InputErrorKind::Record,
    };
    if let Some(forced) = opts.encoding.filter(|e| *e != encoding_rs::UTF_8) {
        // A byte order mark wins over the label, as browsers decide.
        let (text, used, errors) = forced.decode(&bytes);
        let replaced = if errors { text.matches('\u{FFFD}').count() } else { 0 };
        if errors && !opts.lossy {
            return Err(bad(format!(
                "not valid {} (--encoding): {replaced} bad byte sequences (use --lossy to \
                 replace them)",
                encoding_name(used)
            )));
        }
        return Ok(Decoded { text: text.into_owned(), replaced, encoding: Some(used) });
    }
    let bytes = match String::from_utf8(bytes) {
        Ok(text) => return Ok(Decoded { text, replaced: 0, encoding: None }),
        Err(e) => e,
    };
    let invalid_at = base + bytes.utf8_error().valid_up_to();
    let bytes = bytes.into_bytes();
    let guess = match *known {
        Some(encoding) => Some(Guess { encoding, confident: true }),
        None => detect(&bytes),
    };
    if let Some(Guess { encoding, confident: true }) = guess {
        if let Some(text) = decode_strictly(encoding, &bytes) {
            *known = Some(encoding);
            return Ok(Decoded { text, replaced: 0, encoding: Some(encoding) });
        }
    }
    if opts.lossy {
        let replaced = super::count_invalid(&bytes);
        return Ok(Decoded {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            replaced,
            encoding: None,
        });
    }
    Err(bad(match guess {
        Some(g) => format!(
            "invalid UTF-8 at byte offset {invalid_at}; it looks like {name}, but not surely: \
             give --encoding {name} to read it so (or --lossy to replace bad bytes)",
            name = encoding_name(g.encoding)
        ),
        None => format!(
            "invalid UTF-8 at byte offset {invalid_at}, and no other encoding fits (give \
             --encoding NAME, or --lossy to replace bad bytes)"
        ),
    }))
}

/// The text of `bytes` in `encoding` (a byte order mark of it removed), or `None` when some
/// bytes are not valid in it.
fn decode_strictly(encoding: TextEncoding, bytes: &[u8]) -> Option<String> {
    let encoding = if encoding == GBK { GB18030 } else { encoding };
    let (text, errors) = encoding.decode_with_bom_removal(bytes);
    (!errors).then(|| text.into_owned())
}

/// What `bytes` (not UTF-8) look like.
fn detect(bytes: &[u8]) -> Option<Guess> {
    match bytes {
        [0xFF, 0xFE, ..] => return Some(Guess { encoding: UTF_16LE, confident: true }),
        [0xFE, 0xFF, ..] => return Some(Guess { encoding: UTF_16BE, confident: true }),
        _ => {}
    }
    if let Some(encoding) = utf16_without_bom(bytes) {
        return Some(Guess { encoding, confident: true });
    }
    let mut detector = chardetng::EncodingDetector::new();
    detector.feed(bytes, true);
    let (encoding, assessed) = detector.guess_assess(None, false);
    // Single-byte encodings decode any bytes: a guess among them is never sure enough to
    // check a thesis by. A multi-byte one that decodes every byte, with enough non-ASCII
    // characters to have been tested, is.
    let multi_byte = [GBK, GB18030, BIG5, SHIFT_JIS, EUC_JP, EUC_KR].contains(&encoding);
    let confident = assessed
        && multi_byte
        && decode_strictly(encoding, bytes)
            .is_some_and(|t| t.chars().filter(|c| !c.is_ascii()).count() >= 8);
    Some(Guess { encoding, confident })
}

/// UTF-16 without a byte order mark: an even length whose code units, in one byte order and
/// not the other, decode to characters a text is made of (ASCII, Latin, CJK, kana, full-width
/// forms, punctuation) with no broken surrogate.
fn utf16_without_bom(bytes: &[u8]) -> Option<TextEncoding> {
    if bytes.len() < 8 || !bytes.len().is_multiple_of(2) {
        return None;
    }
    let plausible = |encoding: TextEncoding| {
        let (text, errors) = encoding.decode_without_bom_handling(bytes);
        if errors {
            return false;
        }
        let (mut good, mut all) = (0usize, 0usize);
        for c in text.chars() {
            all += 1;
            let u = c as u32;
            if matches!(u, 0x09 | 0x0A | 0x0D | 0x20..=0x7E | 0xA0..=0x24F | 0x2000..=0x206F
                | 0x3000..=0x30FF | 0x4E00..=0x9FFF | 0xFF00..=0xFFEF)
            {
                good += 1;
            }
        }
        all > 0 && good * 100 >= all * 95
    };
    match (plausible(UTF_16LE), plausible(UTF_16BE)) {
        (true, false) => Some(UTF_16LE),
        (false, true) => Some(UTF_16BE),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8], opts: &ReadOptions) -> Result<Decoded, InputError> {
        decode_document(bytes.to_vec(), "f.txt", 0, opts, &mut None)
    }

    const THESIS: &str =
        "本文研究城市轨道交通客流预测的方法，综合考虑人口分布、就业岗位与票价政策。";

    #[test]
    fn legacy_chinese_and_utf16_are_detected_and_decoded() {
        let opts = ReadOptions::default();
        for encoding in [GB18030, BIG5] {
            let (bytes, _, _) = encoding.encode(THESIS);
            let d = read(&bytes, &opts).expect("detected");
            assert_eq!(d.encoding.map(encoding_name), Some(encoding_name(encoding)));
            if encoding == GB18030 {
                assert_eq!(d.text, THESIS);
            }
        }
        let mut le: Vec<u8> = vec![0xFF, 0xFE];
        let mut bare = Vec::new();
        for u in THESIS.encode_utf16() {
            le.extend(u.to_le_bytes());
            bare.extend(u.to_be_bytes());
        }
        assert_eq!(read(&le, &opts).expect("a BOM").text, THESIS);
        let d = read(&bare, &opts).expect("the shape of UTF-16");
        assert_eq!((d.text.as_str(), d.encoding), (THESIS, Some(UTF_16BE)));
    }

    #[test]
    fn a_guess_that_is_not_sure_is_refused_by_name_and_can_be_forced() {
        // Two Latin-1 bytes: windows-1252 fits, as would any single-byte encoding.
        let bytes = b"Caf\xe9 au lait, cr\xe8me";
        let e = read(bytes, &ReadOptions::default()).expect_err("not sure");
        assert!(e.message.contains("windows-1252") && e.message.contains("--encoding"), "{e}");
        let forced = ReadOptions {
            encoding: Some(encoding_for_label("latin1").expect("a label")),
            ..ReadOptions::default()
        };
        assert_eq!(read(bytes, &forced).expect("forced").text, "Café au lait, crème");
        let lossy = ReadOptions { lossy: true, ..ReadOptions::default() };
        assert_eq!(read(bytes, &lossy).expect("lossy").replaced, 2);
        assert!(encoding_for_label("no-such").is_err());
    }
}
