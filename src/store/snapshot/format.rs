//! The byte layout of a backup file, and the manifest it carries. Pure: no I/O beyond the
//! slices and readers handed in.
//!
//! ```text
//! offset 0   header   16 bytes  MAGIC (12) + format version (u32, big endian)
//! 16         payload  P bytes   one zstd frame: the snapshot's redb file
//! 16+P       manifest M bytes   JSON (`Manifest`)
//! 16+P+M     footer   64 bytes  P (u64 BE), M (u64 BE), END_MAGIC (16),
//!                               SHA-256 of every byte before the hash (32)
//! ```
//!
//! Invariants: the header alone says whether this lookout can read the rest (a newer format is
//! refused before anything else is trusted); the manifest follows the payload so that a backup
//! can be streamed while it is compressed; the footer is written last, so a file cut short at any
//! point lacks `END_MAGIC` at its end and reads as truncated, never as complete; the whole-file
//! hash covers header, payload, manifest and the footer's sizes, so any changed byte is caught.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::SnapshotError;

/// Starts every backup file. The first byte has the high bit set and the tail holds CR LF, SUB
/// and LF (as in PNG), so text-mode transfers and truncation to 7 bits are detected at once.
pub const MAGIC: [u8; 12] = *b"\x89LOOKOUT\r\n\x1a\n";
/// Ends the footer's fixed part; absent at the end of a file that was cut short.
pub const END_MAGIC: [u8; 16] = *b"\x89LOOKOUT-END\r\n\x1a\n";
/// The layout this binary writes, and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;

pub const HEADER_LEN: u64 = 16;
pub const FOOTER_LEN: u64 = 64;
/// The footer bytes the whole-file hash covers (everything but the hash itself).
const FOOTER_HASHED_LEN: usize = 32;
/// A manifest is a few kilobytes; anything far larger is damage, not data.
const MAX_MANIFEST_LEN: u64 = 16 * 1024 * 1024;

/// What a backup holds, written as JSON between the payload and the footer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: u32,
    /// Always `lookout`.
    pub product: String,
    /// The lookout version that wrote the backup.
    pub product_version: String,
    /// RFC 3339 UTC: when the snapshot's read transaction began.
    pub created_at: String,
    /// `meta.schema_version` of the snapshot; restore refuses a schema newer than it knows.
    pub schema_version: u32,
    /// Rows per table, counted in the snapshot's read transaction.
    pub tables: BTreeMap<String, u64>,
    /// The sum of `tables`.
    pub records: u64,
    pub payload: PayloadInfo,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayloadInfo {
    /// Always `zstd`.
    pub compression: String,
    /// Bytes of the compressed payload in the file.
    pub length: u64,
    /// Lowercase hex SHA-256 of the compressed payload.
    pub sha256: String,
    /// Bytes of the redb file once decompressed.
    pub database_length: u64,
}

/// The fixed header.
pub fn header() -> [u8; HEADER_LEN as usize] {
    let mut bytes = [0u8; HEADER_LEN as usize];
    bytes[..12].copy_from_slice(&MAGIC);
    bytes[12..].copy_from_slice(&FORMAT_VERSION.to_be_bytes());
    bytes
}

/// Reads the format version from the first bytes of a file, refusing other files and newer
/// formats. `file_len` tells a short file (truncated) from a foreign one.
pub fn parse_header(bytes: &[u8], file_len: u64) -> Result<u32, SnapshotError> {
    let available = bytes.len().min(MAGIC.len());
    if bytes[..available] != MAGIC[..available] {
        return Err(SnapshotError::Corrupt(
            "not a lookout backup (the file does not start with the backup signature)".into(),
        ));
    }
    if file_len < HEADER_LEN || bytes.len() < HEADER_LEN as usize {
        return Err(SnapshotError::Truncated(format!(
            "only {file_len} bytes, shorter than the {HEADER_LEN}-byte header"
        )));
    }
    let version = u32::from_be_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]);
    if version > FORMAT_VERSION {
        return Err(SnapshotError::NewerFormat {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    if version == 0 {
        return Err(SnapshotError::Corrupt(
            "format version 0 does not exist".into(),
        ));
    }
    Ok(version)
}

/// The footer's first 32 bytes: the two lengths and the end marker (the hash follows).
pub fn footer_prefix(payload_len: u64, manifest_len: u64) -> [u8; FOOTER_HASHED_LEN] {
    let mut bytes = [0u8; FOOTER_HASHED_LEN];
    bytes[..8].copy_from_slice(&payload_len.to_be_bytes());
    bytes[8..16].copy_from_slice(&manifest_len.to_be_bytes());
    bytes[16..].copy_from_slice(&END_MAGIC);
    bytes
}

/// Where things are in a file, as its footer says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub payload_len: u64,
    pub manifest_len: u64,
    pub sha256: [u8; 32],
}

impl Layout {
    pub fn manifest_offset(&self) -> u64 {
        HEADER_LEN + self.payload_len
    }

    /// Bytes covered by the whole-file hash.
    pub fn hashed_len(&self) -> u64 {
        HEADER_LEN + self.payload_len + self.manifest_len + FOOTER_HASHED_LEN as u64
    }
}

/// Parses the last `FOOTER_LEN` bytes of a file of `file_len` bytes.
pub fn parse_footer(footer: &[u8], file_len: u64) -> Result<Layout, SnapshotError> {
    if file_len < HEADER_LEN + FOOTER_LEN || footer.len() != FOOTER_LEN as usize {
        return Err(SnapshotError::Truncated(format!(
            "only {file_len} bytes, too short to hold a header and a footer"
        )));
    }
    if footer[16..32] != END_MAGIC {
        return Err(SnapshotError::Truncated(
            "the end marker is missing: the file was cut short (or its last bytes were damaged)"
                .into(),
        ));
    }
    let payload_len = u64::from_be_bytes(footer[..8].try_into().unwrap_or([0; 8]));
    let manifest_len = u64::from_be_bytes(footer[8..16].try_into().unwrap_or([0; 8]));
    let mut sha256 = [0u8; 32];
    sha256.copy_from_slice(&footer[32..]);
    let expected = HEADER_LEN
        .checked_add(payload_len)
        .and_then(|len| len.checked_add(manifest_len))
        .and_then(|len| len.checked_add(FOOTER_LEN));
    if expected != Some(file_len) || manifest_len > MAX_MANIFEST_LEN {
        return Err(SnapshotError::Corrupt(format!(
            "the footer's sizes (payload {payload_len}, manifest {manifest_len}) do not add up \
             to the file's {file_len} bytes"
        )));
    }
    Ok(Layout {
        payload_len,
        manifest_len,
        sha256,
    })
}

/// Parses and cross-checks the manifest against the header and footer.
pub fn parse_manifest(
    bytes: &[u8],
    layout: &Layout,
    format: u32,
) -> Result<Manifest, SnapshotError> {
    let manifest: Manifest = serde_json::from_slice(bytes)
        .map_err(|err| SnapshotError::Corrupt(format!("the manifest is not valid: {err}")))?;
    let mismatch = |what: String| Err(SnapshotError::Corrupt(format!("the manifest {what}")));
    if manifest.product != "lookout" {
        return mismatch(format!("names product {:?}, not lookout", manifest.product));
    }
    if manifest.format_version != format {
        return mismatch(format!(
            "says format {}, the header {format}",
            manifest.format_version
        ));
    }
    if manifest.payload.compression != "zstd" {
        return mismatch(format!(
            "names compression {:?}; only zstd exists",
            manifest.payload.compression
        ));
    }
    if manifest.payload.length != layout.payload_len {
        return mismatch(format!(
            "gives a payload of {} bytes, the footer {}",
            manifest.payload.length, layout.payload_len
        ));
    }
    if manifest.tables.values().sum::<u64>() != manifest.records {
        return mismatch("record total differs from the sum of its tables".into());
    }
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout_of(payload: u64, manifest: u64) -> (Vec<u8>, u64) {
        let mut footer = footer_prefix(payload, manifest).to_vec();
        footer.extend_from_slice(&[7u8; 32]);
        let file_len = HEADER_LEN.wrapping_add(payload).wrapping_add(manifest);
        (footer, file_len.wrapping_add(FOOTER_LEN))
    }

    #[test]
    fn header_round_trips_and_refuses_others() {
        let header = header();
        assert_eq!(parse_header(&header, 1000).unwrap(), FORMAT_VERSION);

        let mut newer = header;
        newer[12..].copy_from_slice(&2u32.to_be_bytes());
        assert!(matches!(
            parse_header(&newer, 1000),
            Err(SnapshotError::NewerFormat {
                found: 2,
                supported: 1
            })
        ));
        let mut zero = header;
        zero[12..].copy_from_slice(&0u32.to_be_bytes());
        assert!(matches!(
            parse_header(&zero, 1000),
            Err(SnapshotError::Corrupt(_))
        ));
        assert!(matches!(
            parse_header(b"SQLite format 3\0", 1000),
            Err(SnapshotError::Corrupt(_))
        ));
        // A prefix of the signature is a backup cut short, not a foreign file.
        assert!(matches!(
            parse_header(&header[..5], 5),
            Err(SnapshotError::Truncated(_))
        ));
        assert!(matches!(
            parse_header(b"", 0),
            Err(SnapshotError::Truncated(_))
        ));
    }

    #[test]
    fn footer_round_trips() {
        let (footer, file_len) = layout_of(1234, 56);
        let layout = parse_footer(&footer, file_len).unwrap();
        assert_eq!((layout.payload_len, layout.manifest_len), (1234, 56));
        assert_eq!(layout.sha256, [7u8; 32]);
        assert_eq!(layout.manifest_offset(), 16 + 1234);
        assert_eq!(layout.hashed_len(), file_len - 32);
    }

    #[test]
    fn footer_damage_is_classified() {
        let (footer, file_len) = layout_of(1234, 56);
        // Cut short: the last 64 bytes are then payload, without the end marker.
        assert!(matches!(
            parse_footer(&[0u8; 64], file_len - 100),
            Err(SnapshotError::Truncated(_))
        ));
        assert!(matches!(
            parse_footer(&footer, 40),
            Err(SnapshotError::Truncated(_))
        ));
        // Sizes that do not add up, or overflow, are corruption.
        assert!(matches!(
            parse_footer(&footer, file_len + 1),
            Err(SnapshotError::Corrupt(_))
        ));
        let (huge, _) = layout_of(u64::MAX - 10, 56);
        assert!(matches!(
            parse_footer(&huge, file_len),
            Err(SnapshotError::Corrupt(_))
        ));
    }

    fn manifest() -> Manifest {
        Manifest {
            format_version: 1,
            product: "lookout".into(),
            product_version: "0.1.0".into(),
            created_at: "2026-11-22T12:00:00.000Z".into(),
            schema_version: 2,
            tables: BTreeMap::from([("meta".to_string(), 2), ("orgid_org".to_string(), 3)]),
            records: 5,
            payload: PayloadInfo {
                compression: "zstd".into(),
                length: 1234,
                sha256: "00".repeat(32),
                database_length: 4096,
            },
        }
    }

    #[test]
    fn manifest_is_cross_checked() {
        let (footer, file_len) = layout_of(1234, 56);
        let layout = parse_footer(&footer, file_len).unwrap();
        let good = serde_json::to_vec(&manifest()).unwrap();
        assert_eq!(parse_manifest(&good, &layout, 1).unwrap(), manifest());
        let variants: [fn(&mut Manifest); 5] = [
            |m| m.product = "other".into(),
            |m| m.format_version = 9,
            |m| m.payload.compression = "gzip".into(),
            |m| m.payload.length = 1,
            |m| m.records = 99,
        ];
        for change in variants {
            let mut bad = manifest();
            change(&mut bad);
            let bytes = serde_json::to_vec(&bad).unwrap();
            assert!(matches!(
                parse_manifest(&bytes, &layout, 1),
                Err(SnapshotError::Corrupt(_))
            ));
        }
        assert!(matches!(
            parse_manifest(b"{not json", &layout, 1),
            Err(SnapshotError::Corrupt(_))
        ));
    }
}
