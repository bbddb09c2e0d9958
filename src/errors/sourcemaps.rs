//! Source maps in redb: one record per release and minified file (keyed
//! `{org}/{escaped release}/{file}`) and the map itself, zstd-compressed, in its own table;
//! what `resolve.rs` reads to turn minified frames into source positions.
//!
//! Invariants: uploading for the same release and file again replaces the record and its map
//! in one transaction (no orphaned map); a record always has its map.

use redb::{ReadTransaction, TableDefinition, WriteTransaction};
use serde::{Deserialize, Serialize};

use crate::accounts::model::OrgId;
use crate::clock::Timestamp;
use crate::store::codec::Record;
use crate::store::tables::escape_key_part;
use crate::store::{RecordTable, Scan, StoreError, tables};

crate::typed_id!(
    /// `smp_…`
    SourceMapId,
    "smp_"
);

const SOURCEMAPS: RecordTable<SourceMap> = RecordTable::new(tables::SOURCEMAPS);
const BLOBS: TableDefinition<'static, &str, &[u8]> = TableDefinition::new(tables::SOURCEMAP_BLOBS);

/// A stored source map's description; the map itself is in `SOURCEMAP_BLOBS` under `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceMap {
    pub id: SourceMapId,
    pub release: String,
    pub file: String,
    /// Bytes of the map as uploaded (before compression).
    pub size: u64,
    pub uploaded_at: Timestamp,
}

impl Record for SourceMap {
    const KIND: &'static str = "source map";
}

fn map_key(org: &OrgId, release: &str, file: &str) -> String {
    format!("{}/{}/{file}", org.as_str(), escape_key_part(release))
}

/// Stores (or replaces) the map of a release and file.
pub fn put(
    txn: &WriteTransaction,
    org: &OrgId,
    record: &SourceMap,
    compressed: &[u8],
) -> Result<(), StoreError> {
    let key = map_key(org, &record.release, &record.file);
    let mut blobs = txn.open_table(BLOBS)?;
    if let Some(old) = SOURCEMAPS.get(txn, &key)? {
        blobs.remove(old.id.as_str())?;
    }
    blobs.insert(record.id.as_str(), compressed)?;
    drop(blobs);
    SOURCEMAPS.insert(txn, &key, record)?;
    super::regroup::enqueue(txn, org, &record.release, &record.file)
}

/// Whether any map was uploaded for `release`: the frames of a release without maps need no
/// lookups, one per frame and file name (most releases of most sites have none).
pub fn release_has_maps(
    txn: &ReadTransaction,
    org: &OrgId,
    release: &str,
) -> Result<bool, StoreError> {
    let prefix = map_key(org, release, "");
    let scan = Scan {
        prefix: &prefix,
        after: None,
        limit: 1,
    };
    Ok(!SOURCEMAPS.scan(txn, scan)?.is_empty())
}

/// The record of the map uploaded for `release` and `file`, without reading the map: enough to
/// tell whether a cached, decoded map (keyed by the record's id) is still the current one.
pub fn find_record(
    txn: &ReadTransaction,
    org: &OrgId,
    release: &str,
    file: &str,
) -> Result<Option<SourceMap>, StoreError> {
    SOURCEMAPS.get(txn, &map_key(org, release, file))
}

/// The map uploaded for `release` and `file` (exactly as uploaded, after scrubbing), with its
/// text: what resolving frames reads.
pub fn find(
    txn: &ReadTransaction,
    org: &OrgId,
    release: &str,
    file: &str,
) -> Result<Option<(SourceMap, String)>, StoreError> {
    let Some(record) = SOURCEMAPS.get(txn, &map_key(org, release, file))? else {
        return Ok(None);
    };
    let blobs = txn.open_table(BLOBS)?;
    let Some(compressed) = blobs.get(record.id.as_str())? else {
        return Err(corrupt("no map stored for the record"));
    };
    let bytes =
        zstd::stream::decode_all(compressed.value()).map_err(|e| corrupt(&e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|e| corrupt(&e.to_string()))?;
    Ok(Some((record, text)))
}

fn corrupt(detail: &str) -> StoreError {
    StoreError::Corrupt {
        what: "source map",
        detail: detail.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use redb::{ReadableDatabase, ReadableTableMetadata};

    use super::*;

    #[test]
    fn a_map_uploaded_again_replaces_the_first() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let org = OrgId::generate();
        let record = |id| SourceMap {
            id,
            release: "1.0".into(),
            file: "https://cdn.test/app.js".into(),
            size: 4,
            uploaded_at: Timestamp(1_000),
        };
        let (first, second) = (
            record(SourceMapId::generate()),
            record(SourceMapId::generate()),
        );
        let compressed = |text: &str| zstd::stream::encode_all(text.as_bytes(), 3).unwrap();
        let txn = database.begin_write().unwrap();
        put(&txn, &org, &first, &compressed("one")).unwrap();
        put(&txn, &org, &second, &compressed("two")).unwrap();
        txn.commit().unwrap();
        let txn = database.begin_read().unwrap();
        let (found, text) = find(&txn, &org, "1.0", &second.file).unwrap().unwrap();
        assert_eq!((found.id, text.as_str()), (second.id.clone(), "two"));
        assert_eq!(
            txn.open_table(BLOBS).unwrap().len().unwrap(),
            1,
            "replaced, not added"
        );
        assert!(release_has_maps(&txn, &org, "1.0").unwrap());
        assert!(!release_has_maps(&txn, &org, "2.0").unwrap());
        assert_eq!(
            find_record(&txn, &org, "1.0", &second.file).unwrap(),
            Some(second)
        );
    }
}
