//! The one versioned codec between stored records and bytes.
//!
//! Invariant: every stored record starts with a one-byte codec version; version 1 is JSON,
//! version 2 is zstd-compressed JSON (a zstd frame that records its size), written for records
//! whose JSON is longer than `COMPRESS_ABOVE`; version 3 is a short tag (at most 255 bytes)
//! followed by a version 1 or 2 record, for records encoded before the tag was known (an
//! error event is encoded on a request's thread, its group id is known only inside the write;
//! `Record::attach_tag` puts the tag back on decoding); version 4 is the id of a dictionary
//! (8 bytes, little-endian) followed by JSON compressed with it (`dictionaries.rs`: records of
//! an owner with a trained dictionary, whatever their length); version 5 is a tag followed by
//! where a version 1, 2 or 4 record is in an event segment (`segments.rs`: tagged records
//! written by the store's writer, read on threads that entered the store). All decode, so records written
//! before compression existed read as they are. Records evolve by adding `#[serde(default)]` fields;
//! a change that cannot be expressed that way gets a migration, never a silent
//! reinterpretation of old bytes.

use std::borrow::Cow;
use std::cell::RefCell;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::StoreError;
use super::dictionaries::{self, Dictionary};
use super::segments::{self, Pointer};

/// Version byte of records stored as plain JSON.
pub const CODEC_VERSION: u8 = 1;
/// Version byte of records stored as zstd-compressed JSON.
pub const CODEC_VERSION_ZSTD: u8 = 2;
/// Version byte of a tag followed by a record of version 1 or 2.
pub const CODEC_VERSION_TAGGED: u8 = 3;
/// Version byte of records compressed with a stored dictionary.
pub const CODEC_VERSION_DICTIONARY: u8 = 4;
/// Version byte of a tag followed by where, in an event segment, a record of version 1, 2 or 4
/// is (`segments.rs`): written by the store's writer for tagged records.
pub const CODEC_VERSION_SEGMENT: u8 = 5;
/// JSON longer than this is compressed (without a dictionary). An error event (a stack, a URL, tags) is about 2 KB
/// of JSON and about a third of that compressed: more records to a page and fewer bytes to
/// write and sync; short records would gain little and pay the frame's header.
pub const COMPRESS_ABOVE: usize = 768;
/// zstd level -1: matches are found as at level 1, but literals are stored as they are, so no
/// Huffman table is built and written per record, which was most of the cost of compressing a
/// 2-4 KB record. Records come out about a quarter larger; any zstd decoder reads them.
const ZSTD_LEVEL: i32 = -1;
/// No record decodes to more than this; a frame claiming more is corrupt.
const MAX_RECORD_BYTES: usize = 64 * 1024 * 1024;

/// A type that is stored as a record (distinct from any wire type, see STYLE.md).
pub trait Record: Serialize + DeserializeOwned {
    /// A short name used in corruption reports, e.g. `"user"`.
    const KIND: &'static str;

    /// Takes back the tag a record was stored with (`Encoded::tagged_into`); `false` for a kind
    /// that is never tagged, whose tagged bytes are then corrupt.
    fn attach_tag(&mut self, tag: &str) -> bool {
        let _ = tag;
        false
    }
}

/// What `decode` reads: a `Record`, or a part of one (a type holding some of a record's
/// fields, for a reader that needs no more: the others are skipped, not decoded).
pub trait Decode: DeserializeOwned {
    /// The record's kind, in corruption reports.
    const KIND: &'static str;

    /// `Record::attach_tag`.
    fn attach_tag(&mut self, tag: &str) -> bool;
}

impl<R: Record> Decode for R {
    const KIND: &'static str = <R as Record>::KIND;

    fn attach_tag(&mut self, tag: &str) -> bool {
        Record::attach_tag(self, tag)
    }
}

/// A record's bytes, encoded ahead of its write (off the store's writer thread), to be stored
/// with a tag known only later (`tagged_into`).
pub struct Encoded<R> {
    bytes: Vec<u8>,
    record: std::marker::PhantomData<fn() -> R>,
}

impl<R: Record> Encoded<R> {
    /// `record` encoded as `encode` does; its own copy of what the tag will say is left out by
    /// the caller (it is put back by `Record::attach_tag`).
    pub fn new(record: &R) -> Result<Encoded<R>, StoreError> {
        Encoded::with_dictionary(record, None)
    }

    /// `new`, compressed with `dictionary` when there is one (`encode_with`).
    pub fn with_dictionary(
        record: &R,
        dictionary: Option<&'static Dictionary>,
    ) -> Result<Encoded<R>, StoreError> {
        Ok(Encoded {
            bytes: encode_with(record, dictionary)?,
            record: std::marker::PhantomData,
        })
    }

    #[cfg(test)]
    fn tagged(&self, tag: &str) -> Result<Vec<u8>, StoreError> {
        let mut bytes = Vec::new();
        self.tagged_into(tag, &mut bytes)?;
        Ok(bytes)
    }

    /// The stored bytes, written over `bytes` (a buffer the writer keeps from one row to the
    /// next): on the store's writer, version 5, the tag's length and the tag, then where the
    /// record was appended in the current event segment; elsewhere version 3 and the record
    /// itself after the tag.
    pub fn tagged_into(&self, tag: &str, bytes: &mut Vec<u8>) -> Result<(), StoreError> {
        let length = u8::try_from(tag.len()).map_err(|_| StoreError::Corrupt {
            what: R::KIND,
            detail: format!("a tag of {} bytes", tag.len()),
        })?;
        bytes.clear();
        match segments::append_here(&self.bytes) {
            Some(pointer) => {
                let pointer = pointer?;
                bytes.extend_from_slice(&[CODEC_VERSION_SEGMENT, length]);
                bytes.extend_from_slice(tag.as_bytes());
                bytes.extend_from_slice(&pointer.to_bytes());
            }
            None => {
                bytes.extend_from_slice(&[CODEC_VERSION_TAGGED, length]);
                bytes.extend_from_slice(tag.as_bytes());
                bytes.extend_from_slice(&self.bytes);
            }
        }
        Ok(())
    }
}

pub fn encode<R: Record>(record: &R) -> Result<Vec<u8>, StoreError> {
    encode_with(record, None)
}

/// `encode`, but with `dictionary` (version 4) when there is one. The JSON and the compressed
/// frame are written in this thread's scratch buffers (`SCRATCH`): the one allocation is the
/// record's stored bytes, of their exact size.
pub fn encode_with<R: Record>(
    record: &R,
    dictionary: Option<&'static Dictionary>,
) -> Result<Vec<u8>, StoreError> {
    SCRATCH.with_borrow_mut(|scratch| {
        let stored = scratch.encode(record, dictionary);
        scratch.shrink_after_a_large_record();
        stored
    })
}

/// The largest scratch buffer kept between records: a larger record's is freed after it.
const SCRATCH_KEPT: usize = 64 << 10;

/// One thread's space for encoding a record.
#[derive(Default)]
struct Scratch {
    json: Vec<u8>,
    compressed: Vec<u8>,
}

impl Scratch {
    fn encode<R: Record>(
        &mut self,
        record: &R,
        dictionary: Option<&'static Dictionary>,
    ) -> Result<Vec<u8>, StoreError> {
        let cannot = |err: std::io::Error| StoreError::Corrupt {
            what: R::KIND,
            detail: format!("cannot compress: {err}"),
        };
        self.json.clear();
        serde_json::to_writer(&mut self.json, record).map_err(|err| StoreError::Corrupt {
            what: R::KIND,
            detail: format!("cannot encode: {err}"),
        })?;
        let json = &self.json[..];
        Ok(match dictionary {
            Some(dictionary) => {
                let compressed =
                    compress(&mut self.compressed, json, Some(dictionary)).map_err(cannot)?;
                let id = dictionary.id().to_le_bytes();
                joined(&[CODEC_VERSION_DICTIONARY], &id, compressed)
            }
            None if json.len() <= COMPRESS_ABOVE => joined(&[CODEC_VERSION], &[], json),
            None => {
                let compressed = compress(&mut self.compressed, json, None).map_err(cannot)?;
                joined(&[CODEC_VERSION_ZSTD], &[], compressed)
            }
        })
    }

    fn shrink_after_a_large_record(&mut self) {
        for buffer in [&mut self.json, &mut self.compressed] {
            if buffer.capacity() > SCRATCH_KEPT {
                *buffer = Vec::new();
            }
        }
    }
}

/// Compresses `json` into `into` (its old bytes dropped), with `dictionary` when there is one.
fn compress<'b>(
    into: &'b mut Vec<u8>,
    json: &[u8],
    dictionary: Option<&'static Dictionary>,
) -> std::io::Result<&'b [u8]> {
    into.clear();
    into.reserve(zstd::compress_bound(json.len()));
    // A `Vec` given to zstd as a write buffer is written from its start.
    match dictionary {
        Some(dictionary) => DICTIONARY_COMPRESSOR.with_borrow_mut(|compressor| {
            compressor.set_prepared_dictionary(dictionary.encoder())?;
            compressor.compress_to_buffer(json, into)
        }),
        None => COMPRESSOR.with_borrow_mut(|compressor| compressor.compress_to_buffer(json, into)),
    }?;
    Ok(&into[..])
}

/// The stored bytes, `version`, `id` and `body`, in one allocation of their exact size.
fn joined(version: &[u8], id: &[u8], body: &[u8]) -> Vec<u8> {
    let mut stored = Vec::with_capacity(version.len() + id.len() + body.len());
    stored.extend_from_slice(version);
    stored.extend_from_slice(id);
    stored.extend_from_slice(body);
    stored
}

pub fn decode<R: Decode>(bytes: &[u8]) -> Result<R, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        what: R::KIND,
        detail,
    };
    let json = |body: &[u8]| {
        serde_json::from_slice(body).map_err(|err| corrupt(format!("cannot decode: {err}")))
    };
    match bytes.split_first() {
        Some((&CODEC_VERSION, body)) => json(body),
        Some((&CODEC_VERSION_ZSTD, body)) => json(&decompress(body, None).map_err(corrupt)?),
        Some((&CODEC_VERSION_DICTIONARY, body)) => {
            let (id, frame) = body
                .split_at_checked(8)
                .ok_or_else(|| corrupt("a dictionary record cut short".to_string()))?;
            let id = u64::from_le_bytes(id.try_into().expect("8 bytes"));
            let dictionary = dictionaries::by_id(id).ok_or_else(|| {
                corrupt(format!(
                    "compressed with dictionary {id:016x}, which this store does not hold"
                ))
            })?;
            json(&decompress(frame, Some(dictionary)).map_err(corrupt)?)
        }
        Some((&version @ (CODEC_VERSION_TAGGED | CODEC_VERSION_SEGMENT), body)) => {
            let (tag, rest) = split_tag(body).map_err(corrupt)?;
            let read;
            let inner = match version {
                CODEC_VERSION_SEGMENT => {
                    let pointer = Pointer::from_bytes(rest)
                        .ok_or_else(|| corrupt("a segment record's place cut short".into()))?;
                    read = segments::read_here(pointer)?;
                    &read[..]
                }
                _ => rest,
            };
            if matches!(
                inner.first(),
                Some(&(CODEC_VERSION_TAGGED | CODEC_VERSION_SEGMENT))
            ) {
                return Err(corrupt("a tagged record inside another".to_string()));
            }
            let mut record: R = decode(inner)?;
            if !record.attach_tag(tag) {
                return Err(corrupt("a tag on a record kind without tags".to_string()));
            }
            Ok(record)
        }
        Some((version, _)) => Err(corrupt(format!("unknown codec version {version}"))),
        None => Err(corrupt("empty record".to_string())),
    }
}

/// A tagged row's tag and what follows it.
fn split_tag(body: &[u8]) -> Result<(&str, &[u8]), String> {
    let (&length, rest) = body
        .split_first()
        .ok_or_else(|| "a tagged record without its tag".to_string())?;
    let (tag, rest) = rest
        .split_at_checked(usize::from(length))
        .ok_or_else(|| "a tagged record cut short".to_string())?;
    let tag = std::str::from_utf8(tag).map_err(|_| "a tag that is not UTF-8".to_string())?;
    Ok((tag, rest))
}

/// Where the record of a stored row is, when it is in an event segment (version 5).
pub fn segment_pointer(row: &[u8]) -> Option<Pointer> {
    match row.split_first() {
        Some((&CODEC_VERSION_SEGMENT, body)) => Pointer::from_bytes(split_tag(body).ok()?.1),
        _ => None,
    }
}

/// A stored row that is about to be removed or written over: its record's place in a
/// segment, if it has one, is given back once that commits (`segments.rs`).
pub fn releasing(row: &[u8]) {
    if let Some(pointer) = segment_pointer(row) {
        segments::release_here(pointer);
    }
}

/// `row` with its record in it: a version 5 row read back into version 3 (a backup holds
/// every record whole); any other row as it is.
pub fn inline(row: &[u8]) -> Result<Cow<'_, [u8]>, StoreError> {
    let Some((&CODEC_VERSION_SEGMENT, body)) = row.split_first() else {
        return Ok(Cow::Borrowed(row));
    };
    let corrupt = |detail: String| StoreError::Corrupt {
        what: "event record segment",
        detail,
    };
    let (tag, rest) = split_tag(body).map_err(corrupt)?;
    let pointer = Pointer::from_bytes(rest)
        .ok_or_else(|| corrupt("a segment record's place cut short".into()))?;
    let record = segments::read_here(pointer)?;
    let mut whole = Vec::with_capacity(2 + tag.len() + record.len());
    whole.extend_from_slice(&[CODEC_VERSION_TAGGED, tag.len() as u8]);
    whole.extend_from_slice(tag.as_bytes());
    whole.extend_from_slice(&record);
    Ok(Cow::Owned(whole))
}

fn decompress(frame: &[u8], dictionary: Option<&'static Dictionary>) -> Result<Vec<u8>, String> {
    let size = match zstd::zstd_safe::get_frame_content_size(frame) {
        Ok(Some(size)) if size <= MAX_RECORD_BYTES as u64 => size as usize,
        Ok(Some(size)) => return Err(format!("compressed record claims {size} bytes")),
        Ok(None) | Err(_) => return Err("compressed record without its size".to_string()),
    };
    let mut json = Vec::with_capacity(size);
    match dictionary {
        None => DECOMPRESSOR
            .with_borrow_mut(|decompressor| decompressor.decompress_to_buffer(frame, &mut json)),
        Some(dictionary) => DICTIONARY_DECOMPRESSOR.with_borrow_mut(|decompressor| {
            decompressor.set_prepared_dictionary(dictionary.decoder())?;
            decompressor.decompress_to_buffer(frame, &mut json)
        }),
    }
    .map_err(|err| format!("cannot decompress: {err}"))?;
    Ok(json)
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::default();
    // One context per thread, reused: creating a zstd context costs more than compressing
    // a record.
    static COMPRESSOR: RefCell<zstd::bulk::Compressor<'static>> = RefCell::new(
        zstd::bulk::Compressor::new(ZSTD_LEVEL).expect("a zstd compression context"),
    );
    static DECOMPRESSOR: RefCell<zstd::bulk::Decompressor<'static>> = RefCell::new(
        zstd::bulk::Decompressor::new().expect("a zstd decompression context"),
    );
    // Contexts that take a dictionary (prepared, referenced, not copied, per call); kept apart
    // from the two above so that a record without one never meets a dictionary left set.
    static DICTIONARY_COMPRESSOR: RefCell<zstd::bulk::Compressor<'static>> = RefCell::new(
        zstd::bulk::Compressor::new(ZSTD_LEVEL).expect("a zstd compression context"),
    );
    static DICTIONARY_DECOMPRESSOR: RefCell<zstd::bulk::Decompressor<'static>> = RefCell::new(
        zstd::bulk::Decompressor::new().expect("a zstd decompression context"),
    );
}

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
