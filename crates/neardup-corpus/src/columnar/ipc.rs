//! Arrow IPC files and streams read in a schema of our choosing.
//!
//! `arrow-ipc`'s readers decode each batch in the file's own schema and validate it whole, so
//! one string that is not UTF-8 loses the batch. These readers decode the same messages with the
//! string columns typed as binary (the buffers are laid out alike), through the crate's public
//! decoders ([`FileDecoder`], [`read_record_batch`], [`read_dictionary`]); the caller checks the
//! strings value by value ([`super::strings::restore`]).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_buffer::{Buffer, MutableBuffer};
use arrow_ipc::reader::{read_dictionary, read_record_batch, FileDecoder};
use arrow_ipc::{Block, MessageHeader, MetadataVersion};
use arrow_schema::{ArrowError, Schema, SchemaRef};

/// A file's batches, as they are decoded.
pub(crate) type Batches = Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send>;

/// How to decode a file's batches: in `hint`'s types (the file's schema with strings as
/// binary), keeping the columns of `projection` (all when `None`).
pub(crate) struct Plan<'a> {
    pub hint: &'a dyn Fn(&Schema) -> SchemaRef,
    pub projection: &'a dyn Fn(&Schema) -> Option<Vec<usize>>,
}

/// The batches of an IPC file (`ARROW1` ... footer), and the file's own schema.
pub(crate) fn file_batches(
    mut file: File,
    plan: &Plan<'_>,
) -> Result<(SchemaRef, Batches), ArrowError> {
    let mut tail = [0u8; 10];
    file.seek(SeekFrom::End(-10))?;
    file.read_exact(&mut tail)?;
    let footer_len = arrow_ipc::reader::read_footer_length(tail)?;
    let mut footer = vec![0; footer_len];
    file.seek(SeekFrom::End(-10 - footer_len as i64))?;
    file.read_exact(&mut footer)?;
    let footer = arrow_ipc::root_as_footer(&footer)
        .map_err(|e| ArrowError::ParseError(format!("not an Arrow IPC footer: {e:?}")))?;
    let ipc_schema = footer
        .schema()
        .ok_or_else(|| ArrowError::ParseError("the IPC footer has no schema".into()))?;
    let schema = Arc::new(arrow_ipc::convert::try_fb_to_schema(ipc_schema)?);
    let mut decoder = FileDecoder::new((plan.hint)(&schema), footer.version());
    if let Some(projection) = (plan.projection)(&schema) {
        decoder = decoder.with_projection(projection);
    }
    for block in footer.dictionaries().iter().flatten() {
        decoder.read_dictionary(block, &read_block(&mut file, block)?)?;
    }
    let blocks: Vec<Block> = footer.recordBatches().iter().flatten().copied().collect();
    let mut blocks = blocks.into_iter();
    let batches = std::iter::from_fn(move || loop {
        let block = blocks.next()?;
        let batch = read_block(&mut file, &block)
            .and_then(|buf| decoder.read_record_batch(&block, &buf))
            .transpose();
        if batch.is_some() {
            return batch;
        }
    });
    Ok((schema, Box::new(batches)))
}

fn read_block(file: &mut File, block: &Block) -> Result<Buffer, ArrowError> {
    let length = |n: i64| {
        usize::try_from(n).map_err(|_| ArrowError::ParseError(format!("a block of {n} bytes")))
    };
    let total = length(block.bodyLength())? + length(i64::from(block.metaDataLength()))?;
    file.seek(SeekFrom::Start(block.offset() as u64))?;
    let mut buf = Vec::new();
    let read = (&mut *file).take(total as u64).read_to_end(&mut buf)?;
    if read != total {
        return Err(ArrowError::ParseError(format!(
            "the file ends inside a block ({read} of {total} bytes)"
        )));
    }
    Ok(Buffer::from_vec(buf))
}

/// An IPC stream's batches, decoded as [`Plan`] says.
struct Stream {
    reader: BufReader<File>,
    hint: SchemaRef,
    projection: Option<Vec<usize>>,
    dictionaries: HashMap<i64, ArrayRef>,
    done: bool,
}

/// One message of a stream: its header (flatbuffer bytes) and body; `None` at the end.
fn next_message(reader: &mut impl Read) -> Result<Option<(Vec<u8>, Buffer)>, ArrowError> {
    let mut word = [0u8; 4];
    if let Err(e) = reader.read_exact(&mut word) {
        return match e.kind() {
            std::io::ErrorKind::UnexpectedEof => Ok(None),
            _ => Err(e.into()),
        };
    }
    if word == [0xff; 4] {
        reader.read_exact(&mut word)?;
    }
    let length = i32::from_le_bytes(word);
    if length == 0 {
        return Ok(None);
    }
    let length = usize::try_from(length)
        .map_err(|_| ArrowError::ParseError(format!("a message length of {length}")))?;
    let mut meta = Vec::new();
    if (&mut *reader).take(length as u64).read_to_end(&mut meta)? != length {
        return Err(ArrowError::ParseError("the stream ends inside a message".into()));
    }
    let body_length = arrow_ipc::root_as_message(&meta)
        .map_err(|e| ArrowError::ParseError(format!("not an IPC message: {e:?}")))?
        .bodyLength();
    let body_length = usize::try_from(body_length)
        .map_err(|_| ArrowError::ParseError(format!("a body of {body_length} bytes")))?;
    let mut body = MutableBuffer::new(0);
    let mut chunk = vec![0u8; body_length.min(1 << 20)];
    let mut left = body_length;
    while left > 0 {
        let n = left.min(chunk.len());
        reader.read_exact(&mut chunk[..n])?;
        body.extend_from_slice(&chunk[..n]);
        left -= n;
    }
    Ok(Some((meta, body.into())))
}

impl Stream {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>, ArrowError> {
        while let Some((meta, body)) = next_message(&mut self.reader)? {
            let message = arrow_ipc::root_as_message(&meta)
                .map_err(|e| ArrowError::ParseError(format!("not an IPC message: {e:?}")))?;
            let version: MetadataVersion = message.version();
            match message.header_type() {
                MessageHeader::RecordBatch => {
                    let batch = message.header_as_record_batch().ok_or_else(|| {
                        ArrowError::ParseError("a record batch message without its header".into())
                    })?;
                    let projection = self.projection.as_deref();
                    return read_record_batch(
                        &body,
                        batch,
                        self.hint.clone(),
                        &self.dictionaries,
                        projection,
                        &version,
                    )
                    .map(Some);
                }
                MessageHeader::DictionaryBatch => {
                    let batch = message.header_as_dictionary_batch().ok_or_else(|| {
                        ArrowError::ParseError("a dictionary message without its header".into())
                    })?;
                    read_dictionary(&body, batch, &self.hint, &mut self.dictionaries, &version)?;
                }
                MessageHeader::Schema => {
                    return Err(ArrowError::ParseError("a second schema in the stream".into()))
                }
                other => {
                    return Err(ArrowError::ParseError(format!("an IPC message of type {other:?}")))
                }
            }
        }
        Ok(None)
    }
}

impl Iterator for Stream {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.next_batch().transpose();
        self.done = !matches!(next, Some(Ok(_)));
        next
    }
}

/// The batches of an IPC stream (a schema message, then dictionaries and batches), and its
/// schema.
pub(crate) fn stream_batches(
    file: File,
    plan: &Plan<'_>,
) -> Result<(SchemaRef, Batches), ArrowError> {
    let mut reader = BufReader::new(file);
    let (meta, _) = next_message(&mut reader)?
        .ok_or_else(|| ArrowError::ParseError("an empty stream: no schema".into()))?;
    let message = arrow_ipc::root_as_message(&meta)
        .map_err(|e| ArrowError::ParseError(format!("not an IPC message: {e:?}")))?;
    let ipc_schema = message
        .header_as_schema()
        .ok_or_else(|| ArrowError::ParseError("the stream does not start with a schema".into()))?;
    let schema = Arc::new(arrow_ipc::convert::try_fb_to_schema(ipc_schema)?);
    let stream = Stream {
        reader,
        hint: (plan.hint)(&schema),
        projection: (plan.projection)(&schema),
        dictionaries: HashMap::new(),
        done: false,
    };
    Ok((schema, Box::new(stream)))
}
