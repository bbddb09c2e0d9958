//! Typed table access for deployments and builds. Every function takes the transaction first.
//!
//! Invariants: a deployment with an `external_id` has one row in `DEPLOYMENT_EXTERNAL_IDS`, and
//! every deployment one row in `DEPLOYMENT_TIMES` keyed by its current `started_at`, moved by
//! `put_deployment` when that changes; a build has one row in `BUILD_NUMBERS`, so a job and
//! number name exactly one build. Free-text key parts (service, environment, job, external id)
//! are escaped so a `/` in them cannot split a composite key.

use redb::WriteTransaction;

use crate::accounts::model::OrgId;
use crate::store::tables::{self, composite_key};
use crate::store::{IndexTable, ReadTxn, RecordTable, StoreError, page_of_owner_newest_first};

use super::model::{Build, BuildId, Deployment, DeploymentId};
use crate::alerting::db::{corrupt, key_part};
use crate::clock::Timestamp;
use crate::store::codec;

const DEPLOYMENTS: RecordTable<Deployment> = RecordTable::new(tables::DEPLOYMENTS);
const EXTERNAL_IDS: IndexTable = IndexTable::new(tables::DEPLOYMENT_EXTERNAL_IDS);
const DEPLOYMENT_TIMES: IndexTable = IndexTable::new(tables::DEPLOYMENT_TIMES);
const BUILDS: RecordTable<Build> = RecordTable::new(tables::BUILDS);
const BUILD_NUMBERS: IndexTable = IndexTable::new(tables::BUILD_NUMBERS);

// ---- deployments ----

fn time_key(deployment: &Deployment) -> String {
    format!(
        "{}/{}/{}/{:020}/{}",
        deployment.org_id,
        key_part(&deployment.service),
        key_part(&deployment.environment),
        deployment.started_at.unix_millis().max(0),
        deployment.id
    )
}

/// Writes `new`, moving its index rows from what `old` had (None for a new deployment).
pub fn put_deployment(
    txn: &WriteTransaction,
    old: Option<&Deployment>,
    new: &Deployment,
) -> Result<(), StoreError> {
    let key = composite_key(new.org_id.as_str(), new.id.as_str());
    DEPLOYMENTS.insert(txn, &key, new)?;
    if let Some(old) = old {
        DEPLOYMENT_TIMES.remove(txn, &time_key(old))?;
    }
    DEPLOYMENT_TIMES.insert(txn, &time_key(new), new.id.as_str())?;
    if let Some(external) = &new.external_id {
        let index = composite_key(new.org_id.as_str(), &key_part(external));
        EXTERNAL_IDS.insert(txn, &index, new.id.as_str())?;
    }
    Ok(())
}

pub fn deployment_by_external_id(
    txn: &impl ReadTxn,
    org: &OrgId,
    external_id: &str,
) -> Result<Option<Deployment>, StoreError> {
    let index = composite_key(org.as_str(), &key_part(external_id));
    let Some(id) = EXTERNAL_IDS.get(txn, &index)? else {
        return Ok(None);
    };
    let key = composite_key(org.as_str(), &id);
    DEPLOYMENTS
        .get(txn, &key)?
        .map(Some)
        .ok_or_else(|| corrupt("deployment external id index", &key))
}

pub fn deployment_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    id: &DeploymentId,
) -> Result<Option<Deployment>, StoreError> {
    DEPLOYMENTS.get(txn, &composite_key(org.as_str(), id.as_str()))
}

/// Which deployments a list keeps: started in `[from, to)`, of `service`, in `environment`
/// (each only when set).
#[derive(Debug, Default, Clone)]
pub struct DeploymentFilter {
    pub from: Option<Timestamp>,
    pub to: Option<Timestamp>,
    pub service: Option<String>,
    pub environment: Option<String>,
}

impl DeploymentFilter {
    fn is_empty(&self) -> bool {
        self.from.is_none()
            && self.to.is_none()
            && self.service.is_none()
            && self.environment.is_none()
    }

    fn keeps(&self, deployment: &Deployment) -> bool {
        self.from.is_none_or(|from| deployment.started_at >= from)
            && self.to.is_none_or(|to| deployment.started_at < to)
            && self
                .service
                .as_ref()
                .is_none_or(|service| deployment.service == *service)
            && (self.environment.as_ref()).is_none_or(|env| deployment.environment == *env)
    }
}

/// Up to `limit` deployments of `org` that `filter` keeps, after the cursor `after` in the
/// list's order: oldest first, or newest first. Without a filter one read is the page; with
/// one (a re-run moves `started_at` later than the id's time) the walk reads the org's
/// deployments in pages until it has `limit` or none are left.
pub fn deployments_of_org_matching(
    txn: &impl ReadTxn,
    org: &OrgId,
    after: Option<&DeploymentId>,
    limit: usize,
    filter: &DeploymentFilter,
    newest_first: bool,
) -> Result<Vec<Deployment>, StoreError> {
    let page_size = if filter.is_empty() { limit } else { 256 };
    let mut cursor = after.map(|id| id.to_string());
    let mut found = Vec::new();
    loop {
        let (owner, from) = (org.as_str(), cursor.as_deref());
        let page = match newest_first {
            false => DEPLOYMENTS.page_of_owner(txn, owner, from, page_size)?,
            true => page_of_owner_newest_first(
                txn,
                DEPLOYMENTS.definition(),
                (owner, from),
                page_size,
                |_, bytes| codec::decode(bytes),
            )?,
        };
        let full = page.len() == page_size;
        cursor = page.last().map(|deployment| deployment.id.to_string());
        found.extend(
            page.into_iter()
                .filter(|deployment| filter.keeps(deployment)),
        );
        if found.len() >= limit || !full {
            found.truncate(limit);
            return Ok(found);
        }
    }
}

// ---- builds ----

fn number_key(org: &OrgId, job: &str, number: u64) -> String {
    format!("{}/{}/{:020}", org, key_part(job), number)
}

pub fn build_by_number(
    txn: &impl ReadTxn,
    org: &OrgId,
    job: &str,
    number: u64,
) -> Result<Option<Build>, StoreError> {
    let Some(id) = BUILD_NUMBERS.get(txn, &number_key(org, job, number))? else {
        return Ok(None);
    };
    let key = composite_key(org.as_str(), &id);
    BUILDS
        .get(txn, &key)?
        .map(Some)
        .ok_or_else(|| corrupt("build number index", &key))
}

pub fn put_build(txn: &WriteTransaction, build: &Build) -> Result<(), StoreError> {
    let key = composite_key(build.org_id.as_str(), build.id.as_str());
    BUILDS.insert(txn, &key, build)?;
    let number = number_key(&build.org_id, &build.job, build.number);
    BUILD_NUMBERS.insert(txn, &number, build.id.as_str())
}

/// Up to `limit` builds of `org` after the cursor `after`, in order of their first
/// notification, or newest first.
pub fn builds_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    after: Option<&BuildId>,
    limit: usize,
    newest_first: bool,
) -> Result<Vec<Build>, StoreError> {
    let (owner, after) = (org.as_str(), after.map(|id| id.as_str()));
    match newest_first {
        false => BUILDS.page_of_owner(txn, owner, after, limit),
        true => {
            page_of_owner_newest_first(txn, BUILDS.definition(), (owner, after), limit, |_, b| {
                codec::decode(b)
            })
        }
    }
}
