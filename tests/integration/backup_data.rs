//! Data for the backup tests: a large database written with lookout's own record types and
//! codec (so it cannot drift from what the server stores), and backup files rewritten with a
//! changed manifest but valid sizes and hashes (to reach the checks behind the checksum), and
//! a snapshot of a directory tree to prove a refused restore left it byte-identical.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use redb::TableDefinition;
use serde_json::Value;
use sha2::{Digest, Sha256};

use lookout::accounts::model::{Org, org_name_key};
use lookout::clock::Timestamp;
use lookout::store::{codec, migrations, snapshot, tables};

/// Creates `dir` with a current-schema database of `orgs` organisations, each with a
/// 32-entry IP allowlist (about 1 KiB per record), and returns the number of orgs.
pub fn large_database(dir: &Path, orgs: u64) -> u64 {
    lookout::store::data_dir::create_private_dir(dir).unwrap();
    let database = redb::Database::create(dir.join("lookout.redb")).unwrap();
    migrations::migrate(&database).unwrap();
    let records = TableDefinition::<&str, &[u8]>::new(tables::ORGS);
    let names = TableDefinition::<&str, &str>::new(tables::ORG_NAMES);
    let txn = database.begin_write().unwrap();
    {
        let mut records = txn.open_table(records).unwrap();
        let mut names = txn.open_table(names).unwrap();
        for index in 0..orgs {
            let mut org = Org::new(
                format!("bulk-{index:07}"),
                Timestamp::from_unix_millis(1_795_348_800_000),
            );
            org.ip_allowlist = (0..32u64)
                .map(|n| {
                    let a = (index * 31 + n * 7) % 223 + 1;
                    format!("{a}.{}.{}.0/24", (index >> 8) % 256, index % 256)
                        .parse()
                        .unwrap()
                })
                .collect();
            records
                .insert(org.id.as_str(), codec::encode(&org).unwrap().as_slice())
                .unwrap();
            names
                .insert(org_name_key(&org.name).as_str(), org.id.as_str())
                .unwrap();
        }
    }
    txn.commit().unwrap();
    orgs
}

/// Writes `head` (a backup's header and payload) with `manifest` and a matching footer to `out`.
pub fn write_with_manifest(head: &[u8], manifest: &Value, out: &Path) {
    let manifest = serde_json::to_vec(manifest).unwrap();
    let payload_len = head.len() as u64 - snapshot::format::HEADER_LEN;
    let mut bytes = head.to_vec();
    bytes.extend_from_slice(&manifest);
    bytes.extend_from_slice(&snapshot::format::footer_prefix(
        payload_len,
        manifest.len() as u64,
    ));
    let digest = Sha256::digest(&bytes);
    bytes.extend_from_slice(&digest);
    std::fs::write(out, bytes).unwrap();
}

/// Each path under a directory with its mode and bytes (None for a directory).
pub type Tree = BTreeMap<PathBuf, (u32, Option<Vec<u8>>)>;

/// The `Tree` of `dir`, or None when it is absent.
pub fn tree(dir: &Path) -> Option<Tree> {
    if !dir.exists() {
        return None;
    }
    let mut entries = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        let metadata = std::fs::symlink_metadata(&path).unwrap();
        let relative = path.strip_prefix(dir).unwrap().to_path_buf();
        if metadata.is_dir() {
            pending.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            entries.insert(relative, (metadata.permissions().mode(), None));
        } else {
            entries.insert(
                relative,
                (
                    metadata.permissions().mode(),
                    Some(std::fs::read(&path).unwrap()),
                ),
            );
        }
    }
    Some(entries)
}

pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}{suffix}", path.display()))
}

/// Rewrites a valid backup with `manifest` changed by `change`, recomputing sizes and hash.
pub fn rewrite_manifest(file: &Path, out: &Path, change: impl FnOnce(&mut Value)) {
    let bytes = std::fs::read(file).unwrap();
    let footer = &bytes[bytes.len() - 64..];
    let payload_len = u64::from_be_bytes(footer[..8].try_into().unwrap()) as usize;
    let manifest_len = u64::from_be_bytes(footer[8..16].try_into().unwrap()) as usize;
    let manifest_at = 16 + payload_len;
    let mut manifest: Value =
        serde_json::from_slice(&bytes[manifest_at..manifest_at + manifest_len]).unwrap();
    change(&mut manifest);
    write_with_manifest(&bytes[..manifest_at], &manifest, out);
}
