//! Source maps in redb: one record per release and minified file (keyed
//! `{org}/{escaped release}/{file}`), and per debug id (keyed `{org}/{debug id}`) for maps that
//! carry one, and the map itself, zstd-compressed, in its own table under the record's id;
//! what `resolve.rs` reads to turn minified frames into source positions.
//!
//! Invariants: a debug id is a lowercase hyphenated UUID (`debug_id`), so it holds no `/` and
//! its key can never meet a release key, which always has two (the release part is escaped).
//! One upload is one record and one map, found under both keys when it has a release and a
//! debug id. Uploading for the same release and file, or the same debug id, again replaces
//! the record in one transaction; a map leaves with the last record naming it (no orphaned map),
//! and a record always has its map.

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
    /// Empty for a map known only by its debug id (an artifact bundle without a release).
    pub release: String,
    pub file: String,
    /// The map's debug id (`debug_id`/`debugId` in the map, or an artifact bundle's
    /// `debug-id` header), normalised by `debug_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug_id: Option<String>,
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

fn debug_id_key(org: &OrgId, debug_id: &str) -> String {
    format!("{}/{debug_id}", org.as_str())
}

/// A debug id as stored and looked up: the lowercase hyphenated UUID of 32 hex digits sent
/// with or without hyphens (or braces); `None` for anything else.
pub fn debug_id(sent: &str) -> Option<String> {
    let hex: String = sent
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .chars()
        .filter(|c| *c != '-')
        .collect();
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let hex = hex.to_ascii_lowercase();
    Some(format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    ))
}

/// The keys a record is found under: its release and file (when it has a release), its debug
/// id (when it has one).
fn keys_of(org: &OrgId, record: &SourceMap) -> Vec<String> {
    let mut keys = Vec::with_capacity(2);
    if !record.release.is_empty() {
        keys.push(map_key(org, &record.release, &record.file));
    }
    if let Some(debug_id) = &record.debug_id {
        keys.push(debug_id_key(org, debug_id));
    }
    keys
}

/// Stores (or replaces) a map under its release and file and under its debug id; a replaced
/// record's map is removed once no key names it any more.
pub fn put(
    txn: &WriteTransaction,
    org: &OrgId,
    record: &SourceMap,
    compressed: &[u8],
) -> Result<(), StoreError> {
    let keys = keys_of(org, record);
    let mut replaced = Vec::new();
    for key in &keys {
        if let Some(old) = SOURCEMAPS.get(txn, key)?
            && old.id != record.id
        {
            replaced.push(old);
        }
        SOURCEMAPS.insert(txn, key, record)?;
    }
    let mut blobs = txn.open_table(BLOBS)?;
    blobs.insert(record.id.as_str(), compressed)?;
    for old in replaced {
        let mut still_named = false;
        for key in keys_of(org, &old) {
            still_named |= SOURCEMAPS
                .get(txn, &key)?
                .is_some_and(|now| now.id == old.id);
        }
        if !still_named {
            blobs.remove(old.id.as_str())?;
        }
    }
    drop(blobs);
    // A map named by release and file regroups the release's stored events (`regroup.rs`);
    // one uploaded by debug id only names no release to walk.
    if !record.release.is_empty() {
        super::regroup::enqueue(txn, org, &record.release, &record.file)?;
    }
    Ok(())
}

/// The record of the map uploaded with `debug_id` (normalised), without reading the map.
pub fn find_record_by_debug_id(
    txn: &ReadTransaction,
    org: &OrgId,
    debug_id: &str,
) -> Result<Option<SourceMap>, StoreError> {
    SOURCEMAPS.get(txn, &debug_id_key(org, debug_id))
}

/// The text of a record's map.
pub fn map_text(txn: &ReadTransaction, record: &SourceMap) -> Result<String, StoreError> {
    let blobs = txn.open_table(BLOBS)?;
    let Some(compressed) = blobs.get(record.id.as_str())? else {
        return Err(corrupt("no map stored for the record"));
    };
    let bytes =
        zstd::stream::decode_all(compressed.value()).map_err(|e| corrupt(&e.to_string()))?;
    String::from_utf8(bytes).map_err(|e| corrupt(&e.to_string()))
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
/// text.
#[cfg(test)]
fn find(
    txn: &ReadTransaction,
    org: &OrgId,
    release: &str,
    file: &str,
) -> Result<Option<(SourceMap, String)>, StoreError> {
    let Some(record) = SOURCEMAPS.get(txn, &map_key(org, release, file))? else {
        return Ok(None);
    };
    let text = map_text(txn, &record)?;
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
            debug_id: None,
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

    #[test]
    fn debug_ids_find_maps_and_a_map_leaves_with_its_last_key() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let org = OrgId::generate();
        let id = "68393A25-88EE-5071-AD32-702DF8B402AD";
        let normal = debug_id(id).unwrap();
        assert_eq!(normal, "68393a25-88ee-5071-ad32-702df8b402ad");
        assert_eq!(
            debug_id("68393a2588ee5071ad32702df8b402ad"),
            Some(normal.clone())
        );
        for bad in [
            "",
            "68393a25",
            "x8393a25-88ee-5071-ad32-702df8b402ad",
            "a/b",
        ] {
            assert_eq!(debug_id(bad), None, "{bad}");
        }
        let record = |release: &str, debug: Option<&str>| SourceMap {
            id: SourceMapId::generate(),
            release: release.into(),
            file: "~/app.min.js".into(),
            size: 3,
            uploaded_at: Timestamp(1_000),
            debug_id: debug.map(str::to_string),
        };
        let both = record("1.0", Some(&normal));
        let by_id_only = record("", Some(&normal));
        let compressed = |text: &str| zstd::stream::encode_all(text.as_bytes(), 3).unwrap();
        let txn = database.begin_write().unwrap();
        put(&txn, &org, &both, &compressed("one")).unwrap();
        // The same debug id again, without a release: the release key still names the first.
        put(&txn, &org, &by_id_only, &compressed("two")).unwrap();
        txn.commit().unwrap();
        let txn = database.begin_read().unwrap();
        let found = find_record_by_debug_id(&txn, &org, &normal)
            .unwrap()
            .unwrap();
        assert_eq!(found.id, by_id_only.id);
        assert_eq!(map_text(&txn, &found).unwrap(), "two");
        let (by_release, text) = find(&txn, &org, "1.0", "~/app.min.js").unwrap().unwrap();
        assert_eq!((by_release.id, text.as_str()), (both.id.clone(), "one"));
        assert!(release_has_maps(&txn, &org, "1.0").unwrap());
        drop(txn);
        // Replaced under its last key, the first map leaves.
        let txn = database.begin_write().unwrap();
        put(&txn, &org, &record("1.0", None), &compressed("three")).unwrap();
        txn.commit().unwrap();
        let txn = database.begin_read().unwrap();
        assert_eq!(txn.open_table(BLOBS).unwrap().len().unwrap(), 2);
    }
}
