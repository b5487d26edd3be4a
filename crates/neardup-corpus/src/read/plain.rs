//! One plain-text document per file, and the UTF-8 rules every reader shares.

use std::fmt;
use std::io::Read;

use serde_json::value::RawValue;

use super::{io_message, Body, Digester, InputError, InputErrorKind, ReadOptions, Record};

pub(super) fn read_plain<R: Read>(
    reader: R,
    name: &str,
    id: Box<RawValue>,
    opts: &ReadOptions,
    digest: &mut Digester,
) -> Result<Record, InputError> {
    let mut bytes = Vec::new();
    // Read one byte past the limit to know whether it was exceeded, without reading it all.
    let limit = opts.max_doc_bytes as u64 + 1;
    reader.take(limit).read_to_end(&mut bytes).map_err(|e| InputError {
        place: name.to_string(),
        message: format!("read error: {}", io_message(&e)),
        kind: InputErrorKind::Stream,
    })?;
    digest.update(&bytes);
    if bytes.len() > opts.max_doc_bytes {
        return Err(InputError {
            place: name.to_string(),
            message: format!(
                "document is larger than --max-doc-bytes {} (raise the limit to read it)",
                opts.max_doc_bytes
            ),
            kind: InputErrorKind::Record,
        });
    }
    // A byte order mark stays the text's first character (U+FEFF), as Python's
    // `open(encoding="utf-8").read()` keeps it: offsets into the text (the passage check's)
    // are then the file's. It is no word, no unit of the passage check, and changes no
    // fingerprint of the default features.
    let d = super::encoding::decode_document(bytes, name, 0, opts, &mut None)?;
    Ok(Record {
        id,
        body: Body::Text(d.text),
        replaced: d.replaced,
        encoding: d.encoding,
        line: 0,
        rank: None,
    })
}

/// The number of U+FFFD that lossy decoding inserts.
pub(crate) fn count_invalid(mut bytes: &[u8]) -> usize {
    let mut n = 0;
    while !bytes.is_empty() {
        match std::str::from_utf8(bytes) {
            Ok(_) => break,
            Err(e) => {
                n += 1;
                let skip = e.valid_up_to() + e.error_len().unwrap_or(bytes.len() - e.valid_up_to());
                bytes = &bytes[skip..];
            }
        }
    }
    n
}

pub(super) fn check_size(
    record: Record,
    place: &(impl fmt::Display + ?Sized),
    opts: &ReadOptions,
) -> Result<Record, InputError> {
    if record.body.len() > opts.max_doc_bytes {
        return Err(InputError {
            place: place.to_string(),
            message: format!("document is larger than --max-doc-bytes {}", opts.max_doc_bytes),
            kind: InputErrorKind::Record,
        });
    }
    Ok(record)
}
