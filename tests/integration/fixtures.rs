//! Database files as older (or newer) lookout versions left them, built with redb directly in
//! the stored format of `src/accounts/model.rs` (codec byte 0x01 + JSON, ids `org_`/`usr_` +
//! ULID, composite keys `{org_id}/{user_id}`), and read back without opening them for writing.
//! Used by `durability.rs`; each fixture is written by code, not checked
//! in, so it cannot drift from what the test asserts.

use std::path::Path;

use redb::{ReadableDatabase, TableDefinition};
use serde_json::{Value, json};

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

/// A schema-1 database: one org (`Legacy`, enterprise), one user (`old@example.com`) and their
/// membership (`member`), and no `userid_orgid` index, which schema 2 adds. Returns the ids.
pub fn write_schema_1(path: &Path) -> (String, String) {
    let org_id = format!("org_{}", ulid::Ulid::generate());
    let user_id = format!("usr_{}", ulid::Ulid::generate());
    let now: i64 = 1_795_348_800_000;
    let record = |value: Value| [&[1u8][..], value.to_string().as_bytes()].concat();
    let org = record(json!({"id": org_id, "name": "Legacy", "plan": "enterprise",
        "two_factor_required": false, "created_at": now}));
    let hash = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2g";
    let user = record(json!({"id": user_id, "email": "old@example.com",
        "password_hash": hash, "created_at": now}));
    let membership = record(
        json!({"org_id": org_id, "user_id": user_id, "role": "member",
        "created_at": now}),
    );
    let membership_key = format!("{org_id}/{user_id}");
    // Records and `meta` map text to bytes; indexes map text to text.
    let records: [(&str, &str, &[u8]); 4] = [
        ("meta", "schema_version", &1u32.to_be_bytes()),
        ("orgid_org", &org_id, &org),
        ("userid_user", &user_id, &user),
        ("orgid_userid_membership", &membership_key, &membership),
    ];
    let indexes = [
        ("orgname_orgid", "legacy", org_id.as_str()),
        ("email_userid", "old@example.com", user_id.as_str()),
    ];

    let database = redb::Database::create(path).unwrap();
    let txn = database.begin_write().unwrap();
    for (table, key, value) in records {
        let definition = TableDefinition::<&str, &[u8]>::new(table);
        txn.open_table(definition)
            .unwrap()
            .insert(key, value)
            .unwrap();
    }
    for (table, key, value) in indexes {
        let definition = TableDefinition::<&str, &str>::new(table);
        txn.open_table(definition)
            .unwrap()
            .insert(key, value)
            .unwrap();
    }
    txn.commit().unwrap();
    (org_id, user_id)
}

/// A database whose only content is `meta.schema_version` = `version`.
pub fn write_schema_version_only(path: &Path, version: u32) {
    let database = redb::Database::create(path).unwrap();
    let txn = database.begin_write().unwrap();
    let bytes = version.to_be_bytes();
    txn.open_table(META)
        .unwrap()
        .insert("schema_version", bytes.as_slice())
        .unwrap();
    txn.commit().unwrap();
}

/// `meta.schema_version` of the database at `path`.
pub fn stored_schema_version(path: &Path) -> u32 {
    let database = redb::ReadOnlyDatabase::open(path).unwrap();
    let txn = database.begin_read().unwrap();
    let meta = txn.open_table(META).unwrap();
    let bytes = meta
        .get("schema_version")
        .unwrap()
        .expect("schema_version is set");
    u32::from_be_bytes(bytes.value().try_into().expect("a 4-byte schema version"))
}

/// The target of `key` in the index table `table` (a text -> text table), which must exist.
pub fn index_entry(path: &Path, table: &str, key: &str) -> Option<String> {
    let database = redb::ReadOnlyDatabase::open(path).unwrap();
    let txn = database.begin_read().unwrap();
    let definition = TableDefinition::<&str, &str>::new(table);
    let index = txn
        .open_table(definition)
        .unwrap_or_else(|err| panic!("table {table} cannot be opened: {err}"));
    index
        .get(key)
        .unwrap()
        .map(|target| target.value().to_string())
}
