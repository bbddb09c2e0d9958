//! Forward-only schema migrations, recorded in `meta.schema_version`.
//!
//! Invariants: a released migration is never edited or removed; each runs in its own durable
//! transaction together with the version bump, so a crash leaves the database at the previous
//! version or the next, never between. A database newer than this binary is refused untouched.

use redb::{Database, Durability, ReadableDatabase, TableDefinition, WriteTransaction};

use super::StoreError;
use super::table::{IndexTable, ReadTxn, Scan};
use super::tables::{self, META};

const SCHEMA_VERSION_KEY: &str = "schema_version";

/// The schema this binary writes.
pub const CURRENT_VERSION: u32 = 21;

#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    #[error(
        "the database has schema version {found}, newer than this lookout supports ({supported}): \
         upgrade lookout"
    )]
    Newer { found: u32, supported: u32 },
    #[error("migration to schema version {version} failed: {source}")]
    Failed { version: u32, source: StoreError },
}

struct Migration {
    version: u32,
    description: &'static str,
    apply: fn(&WriteTransaction) -> Result<(), StoreError>,
}

/// Every migration, in order. Append only.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "accounts tables",
        apply: create_account_tables,
    },
    Migration {
        version: 2,
        description: "index of each user's organisations",
        apply: index_user_organisations,
    },
    Migration {
        version: 3,
        description: "identity and access tables",
        apply: create_identity_tables,
    },
    Migration {
        version: 4,
        description: "flags and experiments tables",
        apply: create_experiment_tables,
    },
    Migration {
        version: 5,
        description: "browser ingest tables",
        apply: create_ingest_tables,
    },
    Migration {
        version: 6,
        description: "notification channels and delivery queue tables",
        apply: create_notify_tables,
    },
    Migration {
        version: 7,
        description: "agent and shell ticket tables",
        apply: create_agent_tables,
    },
    Migration {
        version: 8,
        description: "error group tables",
        apply: create_error_group_tables,
    },
    Migration {
        version: 9,
        description: "inbound token, deployment, build and incident tables",
        apply: create_alerting_tables,
    },
    Migration {
        version: 10,
        description: "alert tables",
        apply: create_alert_tables,
    },
    Migration {
        version: 11,
        description: "shell session table",
        apply: create_shell_session_table,
    },
    Migration {
        version: 12,
        description: "alert rule, rule state, spike state and rollup tables",
        apply: create_alert_rule_tables,
    },
    Migration {
        version: 13,
        description: "session spans index",
        apply: |txn| create_index_table(txn, tables::SESSION_SPANS),
    },
    Migration {
        version: 14,
        description: "agent metric history",
        apply: create_agent_metrics_table,
    },
    Migration {
        version: 15,
        description: "SCIM token and provisioned user tables",
        apply: create_scim_tables,
    },
    Migration {
        version: 16,
        description: "SSO configuration, domain, link and used-nonce tables",
        apply: create_sso_tables,
    },
    Migration {
        version: 17,
        description: "group events waiting to be folded",
        apply: |txn| create_index_table(txn, tables::GROUP_EVENTS_UNFOLDED),
    },
    Migration {
        version: 18,
        description: "record compression dictionaries",
        apply: create_record_dictionaries_table,
    },
    Migration {
        version: 19,
        description: "error group events, many to a row",
        apply: |txn| create_index_table(txn, tables::GROUP_EVENT_RUNS),
    },
    Migration {
        version: 20,
        description: "error event records in segment files",
        apply: create_segment_state_table,
    },
    Migration {
        version: 21,
        description: "deleted error events waiting to leave their groups",
        apply: |txn| create_index_table(txn, tables::GROUP_EVENTS_GONE),
    },
];

/// Brings `database` up to `CURRENT_VERSION`.
pub fn migrate(database: &Database) -> Result<(), MigrationError> {
    migrate_to(database, CURRENT_VERSION)
}

/// Brings `database` up to `target` (older targets exist for building test fixtures).
#[doc(hidden)]
pub fn migrate_to(database: &Database, target: u32) -> Result<(), MigrationError> {
    let failed = |version| move |source| MigrationError::Failed { version, source };
    let found = stored_version(database).map_err(failed(0))?;
    if found > CURRENT_VERSION {
        return Err(MigrationError::Newer {
            found,
            supported: CURRENT_VERSION,
        });
    }
    for migration in MIGRATIONS
        .iter()
        .filter(|m| m.version > found && m.version <= target)
    {
        let run = || -> Result<(), StoreError> {
            let mut txn = database.begin_write()?;
            txn.set_durability(Durability::Immediate)
                .map_err(|err| StoreError::Storage(err.to_string()))?;
            (migration.apply)(&txn)?;
            txn.open_table(META)?.insert(
                SCHEMA_VERSION_KEY,
                migration.version.to_be_bytes().as_slice(),
            )?;
            txn.commit()?;
            Ok(())
        };
        run().map_err(failed(migration.version))?;
        tracing::info!(
            version = migration.version,
            migration = migration.description,
            "schema migrated"
        );
    }
    Ok(())
}

/// Refuses a database file written by a newer lookout without opening it for writing: a
/// read-write open alone makes redb rewrite its header and allocator state on close.
/// A file that cannot be opened read-only (missing, or needing crash repair) passes here and is
/// checked again by `migrate` once open.
pub fn refuse_newer(path: &std::path::Path) -> Result<(), MigrationError> {
    let Ok(database) = redb::Builder::new().open_read_only(path) else {
        return Ok(());
    };
    let found =
        version_in(&database).map_err(|source| MigrationError::Failed { version: 0, source })?;
    if found > CURRENT_VERSION {
        return Err(MigrationError::Newer {
            found,
            supported: CURRENT_VERSION,
        });
    }
    Ok(())
}

/// The schema version recorded in the database; 0 for a new, empty file.
pub fn stored_version(database: &Database) -> Result<u32, StoreError> {
    version_in(database)
}

fn version_in(database: &impl ReadableDatabase) -> Result<u32, StoreError> {
    let txn = database.begin_read()?;
    match txn.open_table(META) {
        Ok(_) => schema_version(&txn),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(0),
        Err(err) => Err(err.into()),
    }
}

pub fn schema_version(txn: &impl ReadTxn) -> Result<u32, StoreError> {
    let bytes = txn
        .open(META)?
        .get_with(SCHEMA_VERSION_KEY, <[u8]>::to_vec)?;
    match bytes {
        None => Ok(0),
        Some(bytes) => match <[u8; 4]>::try_from(bytes.as_slice()) {
            Ok(array) => Ok(u32::from_be_bytes(array)),
            Err(_) => Err(StoreError::Corrupt {
                what: "schema version",
                detail: format!("{bytes:?}"),
            }),
        },
    }
}

fn create_account_tables(txn: &WriteTransaction) -> Result<(), StoreError> {
    txn.open_table(META)?;
    for name in [tables::ORGS, tables::USERS, tables::MEMBERSHIPS] {
        txn.open_table(record_table(name))?;
    }
    for name in [tables::ORG_NAMES, tables::USER_EMAILS] {
        txn.open_table(IndexTable::new(name).definition())?;
    }
    Ok(())
}

/// Schema 2 answers "which orgs is this user in" without scanning every membership.
fn index_user_organisations(txn: &WriteTransaction) -> Result<(), StoreError> {
    let user_orgs = IndexTable::new(tables::USER_ORGS);
    txn.open_table(user_orgs.definition())?;
    // The membership key `{org}/{user}` holds all the index needs; no record is decoded.
    let keys = txn
        .open(record_table(tables::MEMBERSHIPS))?
        .scan_with(Scan::all(), |key, _| Ok(key.to_string()))?;
    for key in keys {
        let (org, user) = tables::split_composite_key(&key).ok_or_else(|| StoreError::Corrupt {
            what: "membership key",
            detail: key.clone(),
        })?;
        user_orgs.insert(txn, &tables::composite_key(user, org), org)?;
    }
    Ok(())
}

fn create_identity_tables(txn: &WriteTransaction) -> Result<(), StoreError> {
    let records = [
        tables::API_KEYS,
        tables::LOGIN_STATES,
        tables::SESSION_CUTOFFS,
        tables::REVOKED_SESSIONS,
        tables::TWO_FACTOR,
        tables::AUDIT_EVENTS,
        tables::INVITATIONS,
        tables::SERVICES,
    ];
    for name in records {
        txn.open_table(record_table(name))?;
    }
    for name in [tables::API_KEY_DIGESTS, tables::ORG_API_KEYS] {
        txn.open_table(IndexTable::new(name).definition())?;
    }
    Ok(())
}

fn create_experiment_tables(txn: &WriteTransaction) -> Result<(), StoreError> {
    for name in [tables::FLAGS, tables::EXPERIMENTS, tables::EXPOSURE_COUNTS] {
        txn.open_table(record_table(name))?;
    }
    txn.open_table(IndexTable::new(tables::EXPOSURE_VISITORS).definition())?;
    Ok(())
}

fn create_ingest_tables(txn: &WriteTransaction) -> Result<(), StoreError> {
    let records = [
        tables::EVENTS,
        tables::WEB_SESSIONS,
        tables::SPANS,
        tables::SOURCEMAPS,
        tables::SOURCEMAP_BLOBS,
    ];
    for name in records {
        txn.open_table(record_table(name))?;
    }
    let indexes = [
        tables::EVENT_CLIENT_IDS,
        tables::SESSION_EVENTS,
        tables::SESSION_STARTS,
        tables::TELEMETRY_AGES,
    ];
    for name in indexes {
        txn.open_table(IndexTable::new(name).definition())?;
    }
    Ok(())
}

fn create_notify_tables(txn: &WriteTransaction) -> Result<(), StoreError> {
    for name in [tables::CHANNELS, tables::DELIVERIES] {
        txn.open_table(record_table(name))?;
    }
    let indexes = [
        tables::ORG_CHANNELS,
        tables::CHANNEL_DELIVERIES,
        tables::DUE_DELIVERIES,
        tables::DEAD_DELIVERIES,
    ];
    for name in indexes {
        txn.open_table(IndexTable::new(name).definition())?;
    }
    Ok(())
}

fn create_agent_tables(txn: &WriteTransaction) -> Result<(), StoreError> {
    let records = [
        tables::ENROLMENT_TOKENS,
        tables::AGENTS,
        tables::SHELL_TICKETS,
    ];
    for name in records {
        txn.open_table(record_table(name))?;
    }
    for name in [tables::ENROLMENT_TOKEN_DIGESTS, tables::AGENT_IDENTITIES] {
        txn.open_table(IndexTable::new(name).definition())?;
    }
    Ok(())
}

fn create_error_group_tables(txn: &WriteTransaction) -> Result<(), StoreError> {
    txn.open_table(record_table(tables::ERROR_GROUPS))?;
    let indexes = [
        tables::GROUP_FINGERPRINTS,
        tables::GROUP_LAST_SEEN,
        tables::GROUP_USERS,
        tables::GROUP_EVENTS,
    ];
    for name in indexes {
        txn.open_table(IndexTable::new(name).definition())?;
    }
    Ok(())
}

fn create_alerting_tables(txn: &WriteTransaction) -> Result<(), StoreError> {
    let records = [
        tables::INBOUND_TOKENS,
        tables::DEPLOYMENTS,
        tables::BUILDS,
        tables::INCIDENTS,
    ];
    for name in records {
        txn.open_table(record_table(name))?;
    }
    let indexes = [
        tables::INBOUND_TOKEN_DIGESTS,
        tables::DEPLOYMENT_EXTERNAL_IDS,
        tables::DEPLOYMENT_TIMES,
        tables::BUILD_NUMBERS,
    ];
    for name in indexes {
        txn.open_table(IndexTable::new(name).definition())?;
    }
    Ok(())
}

fn create_alert_tables(txn: &WriteTransaction) -> Result<(), StoreError> {
    txn.open_table(record_table(tables::ALERTS))?;
    txn.open_table(IndexTable::new(tables::LIVE_ALERTS).definition())?;
    Ok(())
}

fn create_shell_session_table(txn: &WriteTransaction) -> Result<(), StoreError> {
    txn.open_table(record_table(tables::SHELL_SESSIONS))?;
    Ok(())
}

fn create_alert_rule_tables(txn: &WriteTransaction) -> Result<(), StoreError> {
    for name in [
        tables::ROLLUPS,
        tables::ALERT_RULES,
        tables::RULE_STATES,
        tables::SPIKE_STATES,
    ] {
        txn.open_table(record_table(name))?;
    }
    Ok(())
}

fn create_agent_metrics_table(txn: &WriteTransaction) -> Result<(), StoreError> {
    txn.open_table(record_table(tables::AGENT_METRICS))?;
    Ok(())
}

fn create_scim_tables(txn: &WriteTransaction) -> Result<(), StoreError> {
    txn.open_table(record_table(tables::SCIM_TOKENS))?;
    txn.open_table(record_table(tables::SCIM_USERS))?;
    txn.open_table(IndexTable::new(tables::SCIM_TOKEN_DIGESTS).definition())?;
    Ok(())
}

fn create_sso_tables(txn: &WriteTransaction) -> Result<(), StoreError> {
    txn.open_table(record_table(tables::SSO_CONFIGS))?;
    txn.open_table(IndexTable::new(tables::SSO_DOMAINS).definition())?;
    txn.open_table(record_table(tables::SSO_LINKS))?;
    txn.open_table(IndexTable::new(tables::SSO_USED_NONCES).definition())?;
    Ok(())
}

fn create_record_dictionaries_table(txn: &WriteTransaction) -> Result<(), StoreError> {
    txn.open_table(record_table(tables::RECORD_DICTIONARIES))?;
    Ok(())
}

fn create_segment_state_table(txn: &WriteTransaction) -> Result<(), StoreError> {
    txn.open_table(record_table(tables::SEGMENT_STATE))?;
    Ok(())
}

/// Creates the index table `name` (a migration that adds just that).
fn create_index_table(txn: &WriteTransaction, name: &'static str) -> Result<(), StoreError> {
    txn.open_table(IndexTable::new(name).definition())?;
    Ok(())
}

/// The untyped definition of a record table, for migrations that must not depend on record types.
fn record_table(name: &'static str) -> TableDefinition<'static, &'static str, &'static [u8]> {
    TableDefinition::new(name)
}

/// A migrated database in a temporary directory, for unit tests of code that runs inside a
/// transaction; the directory is removed when the returned guard drops.
#[cfg(test)]
pub fn scratch_database() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let database = Database::create(dir.path().join("db.redb")).expect("a database");
    migrate(&database).expect("migrations");
    (dir, database)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_database_reaches_current_version_and_newer_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let database = Database::create(dir.path().join("db.redb")).unwrap();
        assert_eq!(stored_version(&database).unwrap(), 0);
        migrate(&database).unwrap();
        assert_eq!(stored_version(&database).unwrap(), CURRENT_VERSION);
        // Running again is a no-op.
        migrate(&database).unwrap();

        let txn = database.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert(SCHEMA_VERSION_KEY, 99u32.to_be_bytes().as_slice())
            .unwrap();
        txn.commit().unwrap();
        assert!(matches!(
            migrate(&database),
            Err(MigrationError::Newer { found: 99, .. })
        ));
    }

    #[test]
    fn migrations_are_numbered_in_order() {
        for (index, migration) in MIGRATIONS.iter().enumerate() {
            assert_eq!(migration.version as usize, index + 1);
        }
        assert_eq!(MIGRATIONS.last().unwrap().version, CURRENT_VERSION);
    }
}
