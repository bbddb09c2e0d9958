//! Feature flags and A/B experiments: managed through `/api/v1/flags` and
//! `/api/v1/experiments`, served to browsers by `GET /ingest/ab-config`, and fed with exposure
//! counts by `POST /ingest/ab-uniques` (CONTRACT section 3).
//!
//! Invariants: a change is visible in `ab-config` on the next request (it is rendered from the
//! store, never cached past a commit); the ETag is a digest of the rendered bytes, so it
//! changes exactly when the document does; a visitor counts once per experiment, variant and
//! UTC day, decided inside the write transaction so concurrent batches cannot double-count.
//! An archived experiment is off and absent from `ab-config`; its counts stay readable.

pub mod api;
pub mod model;

use std::collections::BTreeMap;

use redb::WriteTransaction;
use serde::Serialize;
use serde_json::Value;

use crate::accounts::model::OrgId;
use crate::store::{IndexTable, ReadTxn, RecordTable, Scan, StoreError, tables};
use model::{Experiment, Exposure, ExposureCount, Flag, Variant};

const FLAGS: RecordTable<Flag> = RecordTable::new(tables::FLAGS);
const EXPERIMENTS: RecordTable<Experiment> = RecordTable::new(tables::EXPERIMENTS);
const EXPOSURE_VISITORS: IndexTable = IndexTable::new(tables::EXPOSURE_VISITORS);
const EXPOSURE_COUNTS: RecordTable<ExposureCount> = RecordTable::new(tables::EXPOSURE_COUNTS);

/// What a change of flags and experiments can meet inside its write transaction; the API
/// maps each to its answer (`api.rs`).
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no such flag")]
    FlagNotFound,
    #[error("no such experiment")]
    ExperimentNotFound,
    #[error("experiment {0:?} exists")]
    ExperimentExists(String),
    #[error("an archived experiment cannot be active; unarchive it first")]
    ArchivedAndActive,
}

/// The document of `GET /ingest/ab-config`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AbConfig {
    #[schema(value_type = Object)]
    pub flags: BTreeMap<String, Value>,
    pub experiments: Vec<AbExperiment>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AbExperiment {
    pub key: String,
    pub active: bool,
    pub variants: Vec<Variant>,
}

fn key(org: &OrgId, name: &str) -> String {
    tables::composite_key(org.as_str(), name)
}

pub fn flags_of(txn: &impl ReadTxn, org: &OrgId) -> Result<Vec<Flag>, StoreError> {
    let prefix = tables::owner_prefix(org.as_str());
    Ok(FLAGS
        .scan(txn, Scan::prefix(&prefix))?
        .into_iter()
        .map(|(_, flag)| flag)
        .collect())
}

/// One page of the organisation's flags, in name order, after the name `after`.
pub fn flags_page_of(
    txn: &impl ReadTxn,
    org: &OrgId,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<Flag>, StoreError> {
    FLAGS.page_of_owner(txn, org.as_str(), after, limit)
}

pub fn put_flag(txn: &WriteTransaction, org: &OrgId, flag: &Flag) -> Result<(), StoreError> {
    FLAGS.insert(txn, &key(org, &flag.name), flag)
}

pub fn remove_flag(txn: &WriteTransaction, org: &OrgId, name: &str) -> Result<bool, StoreError> {
    FLAGS.remove(txn, &key(org, name))
}

pub fn experiments_of(txn: &impl ReadTxn, org: &OrgId) -> Result<Vec<Experiment>, StoreError> {
    let prefix = tables::owner_prefix(org.as_str());
    Ok(EXPERIMENTS
        .scan(txn, Scan::prefix(&prefix))?
        .into_iter()
        .map(|(_, e)| e)
        .collect())
}

/// One page of the organisation's experiments, in key order, after the key `after`.
pub fn experiments_page_of(
    txn: &impl ReadTxn,
    org: &OrgId,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<Experiment>, StoreError> {
    EXPERIMENTS.page_of_owner(txn, org.as_str(), after, limit)
}

pub fn get_experiment(
    txn: &impl ReadTxn,
    org: &OrgId,
    key_: &str,
) -> Result<Option<Experiment>, StoreError> {
    EXPERIMENTS.get(txn, &key(org, key_))
}

pub fn put_experiment(
    txn: &WriteTransaction,
    org: &OrgId,
    experiment: &Experiment,
) -> Result<(), StoreError> {
    EXPERIMENTS.insert(txn, &key(org, &experiment.key), experiment)
}

/// Removes an experiment and its counts (the visitor sets go with it).
pub fn remove_experiment(
    txn: &WriteTransaction,
    org: &OrgId,
    key_: &str,
) -> Result<bool, StoreError> {
    let prefix = tables::owner_prefix(&key(org, key_));
    for (row, _) in EXPOSURE_COUNTS.scan(txn, Scan::prefix(&prefix))? {
        EXPOSURE_COUNTS.remove(txn, &row)?;
    }
    for (row, _) in EXPOSURE_VISITORS.scan(txn, Scan::prefix(&prefix))? {
        EXPOSURE_VISITORS.remove(txn, &row)?;
    }
    EXPERIMENTS.remove(txn, &key(org, key_))
}

/// The browser-facing configuration of `org`.
pub fn ab_config(txn: &impl ReadTxn, org: &OrgId) -> Result<AbConfig, StoreError> {
    let flags = flags_of(txn, org)?
        .into_iter()
        .map(|flag| (flag.name, flag.value))
        .collect();
    let experiments = experiments_of(txn, org)?
        .into_iter()
        .filter(|e| !e.archived)
        .map(|e| AbExperiment {
            key: e.key,
            active: e.active,
            variants: e.variants,
        })
        .collect();
    Ok(AbConfig { flags, experiments })
}

/// The rendered `ab-config` body and its strong ETag.
pub fn render_ab_config(config: &AbConfig) -> (Vec<u8>, String) {
    let body = serde_json::to_vec(config).unwrap_or_else(|_| b"{}".to_vec());
    let digest = crate::secrets::token_digest(&String::from_utf8_lossy(&body));
    let etag = format!("\"{}\"", hex::encode(&digest[..16]));
    (body, etag)
}

/// Counts `exposures` for `org`. Returns, per item, `None` when accepted or the reason it was
/// rejected (unknown experiment or variant). A visitor already counted that day is accepted
/// and not counted again.
pub fn record_exposures(
    txn: &WriteTransaction,
    org: &OrgId,
    exposures: &[Exposure],
) -> Result<Vec<Option<String>>, StoreError> {
    let mut experiments: BTreeMap<String, Option<Experiment>> = BTreeMap::new();
    let mut outcomes = Vec::with_capacity(exposures.len());
    for exposure in exposures {
        let experiment = match experiments.get(&exposure.experiment) {
            Some(found) => found.clone(),
            None => {
                let found = get_experiment(txn, org, &exposure.experiment)?;
                experiments.insert(exposure.experiment.clone(), found.clone());
                found
            }
        };
        let Some(experiment) = experiment else {
            outcomes.push(Some(format!(
                "unknown experiment {:?}",
                exposure.experiment
            )));
            continue;
        };
        if !experiment
            .variants
            .iter()
            .any(|v| v.key == exposure.variant)
        {
            outcomes.push(Some(format!("unknown variant {:?}", exposure.variant)));
            continue;
        }
        let bucket = format!(
            "{}/{}/{}/{}",
            org, exposure.experiment, exposure.day, exposure.variant
        );
        let visitor = tables::composite_key(&bucket, &exposure.visitor_digest);
        if EXPOSURE_VISITORS.get(txn, &visitor)?.is_none() {
            EXPOSURE_VISITORS.insert(txn, &visitor, "")?;
            let mut count = EXPOSURE_COUNTS.get(txn, &bucket)?.unwrap_or_default();
            count.visitors += 1;
            EXPOSURE_COUNTS.insert(txn, &bucket, &count)?;
        }
        outcomes.push(None);
    }
    Ok(outcomes)
}

/// Unique visitors per variant of one UTC day.
pub type DayCounts = (String, BTreeMap<String, u64>);

/// Unique visitors per day and variant, days in order.
pub fn results(txn: &impl ReadTxn, org: &OrgId, key_: &str) -> Result<Vec<DayCounts>, StoreError> {
    let prefix = tables::owner_prefix(&key(org, key_));
    let mut days: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for (row, count) in EXPOSURE_COUNTS.scan(txn, Scan::prefix(&prefix))? {
        let rest = &row[prefix.len()..];
        if let Some((day, variant)) = rest.split_once('/') {
            days.entry(day.to_string())
                .or_default()
                .insert(variant.to_string(), count.visitors);
        }
    }
    Ok(days.into_iter().collect())
}
