//! Typed table access for inbound tokens, deployments, builds and incidents. Every function
//! takes the transaction first, so a change, its audit entry and its outbound events commit
//! together.
//!
//! Invariants: an inbound token has one row in `INBOUND_TOKENS` and one in
//! `INBOUND_TOKEN_DIGESTS`, written together; a deployment with an `external_id` has one row
//! in `DEPLOYMENT_EXTERNAL_IDS`, and every deployment one row in `DEPLOYMENT_TIMES` keyed by its
//! current `started_at`, moved by `put_deployment` when that changes; a build has one row in
//! `BUILD_NUMBERS`, so a job and number name exactly one build. Free-text key parts (service,
//! environment, job, external id) are escaped so a `/` in them cannot split a composite key.

use redb::WriteTransaction;

use super::alerts_model::{Alert, AlertId, AlertState};
use super::incidents_model::Incident;
use super::model::{Build, BuildId, Deployment, DeploymentId, InboundToken, IncidentId};
use super::rules_model::{AlertRule, RuleId, RuleState};
use crate::accounts::model::OrgId;
use crate::clock::Timestamp;
use crate::store::codec;
use crate::store::tables::{self, composite_key};
use crate::store::{
    IndexTable, ReadTxn, RecordTable, SecretTable, StoreError, page_of_owner_newest_first,
};

/// Inbound tokens and their digests (created, listed and revoked by `auth::token_flow`).
pub static TOKENS: SecretTable<InboundToken> =
    SecretTable::new(tables::INBOUND_TOKENS, tables::INBOUND_TOKEN_DIGESTS);
const DEPLOYMENTS: RecordTable<Deployment> = RecordTable::new(tables::DEPLOYMENTS);
const EXTERNAL_IDS: IndexTable = IndexTable::new(tables::DEPLOYMENT_EXTERNAL_IDS);
const DEPLOYMENT_TIMES: IndexTable = IndexTable::new(tables::DEPLOYMENT_TIMES);
const BUILDS: RecordTable<Build> = RecordTable::new(tables::BUILDS);
const BUILD_NUMBERS: IndexTable = IndexTable::new(tables::BUILD_NUMBERS);
const INCIDENTS: RecordTable<Incident> = RecordTable::new(tables::INCIDENTS);
const ALERTS: RecordTable<Alert> = RecordTable::new(tables::ALERTS);
const LIVE_ALERTS: IndexTable = IndexTable::new(tables::LIVE_ALERTS);
const RULES: RecordTable<AlertRule> = RecordTable::new(tables::ALERT_RULES);
const RULE_STATES: RecordTable<RuleState> = RecordTable::new(tables::RULE_STATES);
const SPIKE_STATES: RecordTable<SpikeState> = RecordTable::new(tables::SPIKE_STATES);

/// An organisation's browser-error spike state.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SpikeState {
    /// The spike alert firing now, if any.
    pub live: Option<AlertId>,
    /// When the last spike alert fired (the cooldown runs from here).
    pub last_fired_at: Option<crate::clock::Timestamp>,
}

impl crate::store::codec::Record for SpikeState {
    const KIND: &'static str = "spike state";
}

/// `/` and `%` escaped, so free text is one part of a composite key.
pub fn key_part(text: &str) -> String {
    text.replace('%', "%25").replace('/', "%2F")
}

fn corrupt(what: &'static str, key: &str) -> StoreError {
    StoreError::Corrupt {
        what,
        detail: format!("{key} is indexed but missing"),
    }
}

// ---- inbound tokens ----

crate::store::secret_record!(InboundToken);

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

// ---- incidents ----

pub fn put_incident(txn: &WriteTransaction, incident: &Incident) -> Result<(), StoreError> {
    let key = composite_key(incident.org_id.as_str(), incident.id.as_str());
    INCIDENTS.insert(txn, &key, incident)
}

pub fn incident_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    id: &IncidentId,
) -> Result<Option<Incident>, StoreError> {
    INCIDENTS.get(txn, &composite_key(org.as_str(), id.as_str()))
}

/// Up to `limit` incidents of `org` after `after`, oldest first.
pub fn incidents_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    after: Option<&IncidentId>,
    limit: usize,
) -> Result<Vec<Incident>, StoreError> {
    INCIDENTS.page_of_owner(txn, org.as_str(), after.map(|id| id.as_str()), limit)
}

// ---- alerts ----

fn live_key(org: &OrgId, dedup_key: &str) -> String {
    composite_key(org.as_str(), &key_part(dedup_key))
}

/// The firing alert of `org` with `dedup_key`, if any.
pub fn live_alert(
    txn: &impl ReadTxn,
    org: &OrgId,
    dedup_key: &str,
) -> Result<Option<Alert>, StoreError> {
    let Some(id) = LIVE_ALERTS.get(txn, &live_key(org, dedup_key))? else {
        return Ok(None);
    };
    let key = composite_key(org.as_str(), &id);
    ALERTS
        .get(txn, &key)?
        .map(Some)
        .ok_or_else(|| corrupt("live alert index", &key))
}

/// Writes an alert; an external alert's dedup key stays in `LIVE_ALERTS` exactly while it
/// fires (rule and spike alerts are found through their rule or spike state instead).
pub fn put_alert(txn: &WriteTransaction, alert: &Alert) -> Result<(), StoreError> {
    let key = composite_key(alert.org_id.as_str(), alert.id.as_str());
    ALERTS.insert(txn, &key, alert)?;
    if !alert.is_external() {
        return Ok(());
    }
    let live = live_key(&alert.org_id, &alert.dedup_key);
    match alert.state {
        AlertState::Firing => LIVE_ALERTS.insert(txn, &live, alert.id.as_str()),
        AlertState::Pending | AlertState::Resolved => {
            // Only this alert's own row: a newer alert may hold the key by now.
            if LIVE_ALERTS.get(txn, &live)?.as_deref() == Some(alert.id.as_str()) {
                LIVE_ALERTS.remove(txn, &live)?;
            }
            Ok(())
        }
    }
}

/// Removes a pending rule alert whose condition went away before its For period ended.
pub fn remove_alert(txn: &WriteTransaction, alert: &Alert) -> Result<(), StoreError> {
    ALERTS.remove(
        txn,
        &composite_key(alert.org_id.as_str(), alert.id.as_str()),
    )?;
    Ok(())
}

pub fn alert_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    id: &AlertId,
) -> Result<Option<Alert>, StoreError> {
    ALERTS.get(txn, &composite_key(org.as_str(), id.as_str()))
}

/// Up to `limit` alerts of `org` after `after`, oldest first.
pub fn alerts_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    after: Option<&AlertId>,
    limit: usize,
) -> Result<Vec<Alert>, StoreError> {
    ALERTS.page_of_owner(txn, org.as_str(), after.map(|id| id.as_str()), limit)
}

// ---- alert rules ----

pub fn put_rule(txn: &WriteTransaction, rule: &AlertRule) -> Result<(), StoreError> {
    RULES.insert(
        txn,
        &composite_key(rule.org_id.as_str(), rule.id.as_str()),
        rule,
    )
}

/// Removes a rule and its state.
pub fn remove_rule(txn: &WriteTransaction, rule: &AlertRule) -> Result<(), StoreError> {
    let key = composite_key(rule.org_id.as_str(), rule.id.as_str());
    RULE_STATES.remove(txn, &key)?;
    RULES.remove(txn, &key)?;
    Ok(())
}

pub fn rule_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    id: &RuleId,
) -> Result<Option<AlertRule>, StoreError> {
    RULES.get(txn, &composite_key(org.as_str(), id.as_str()))
}

/// Up to `limit` rules of `org` after `after`, oldest first.
pub fn rules_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    after: Option<&RuleId>,
    limit: usize,
) -> Result<Vec<AlertRule>, StoreError> {
    RULES.page_of_owner(txn, org.as_str(), after.map(|id| id.as_str()), limit)
}

/// How many rules `org` has.
pub fn rule_count(txn: &impl ReadTxn, org: &OrgId) -> Result<usize, StoreError> {
    let prefix = tables::owner_prefix(org.as_str());
    Ok(txn
        .open(RULES.definition())?
        .scan_with(crate::store::Scan::prefix(&prefix), |_, _| Ok(()))?
        .len())
}

/// Every rule of every organisation, with its state (the evaluator's read).
pub fn all_rules(txn: &impl ReadTxn) -> Result<Vec<(AlertRule, RuleState)>, StoreError> {
    let rules = RULES.scan(txn, crate::store::Scan::all())?;
    let mut states = RULE_STATES
        .scan(txn, crate::store::Scan::all())?
        .into_iter()
        .peekable();
    // Both tables are keyed `{org}/{rule}`: walk them together.
    let mut joined = Vec::with_capacity(rules.len());
    for (key, rule) in rules {
        while states.peek().is_some_and(|(state_key, _)| *state_key < key) {
            states.next();
        }
        let state = match states.peek() {
            Some((state_key, _)) if *state_key == key => states.next().map(|(_, s)| s),
            _ => None,
        };
        joined.push((rule, state.unwrap_or_default()));
    }
    Ok(joined)
}

pub fn rule_state(txn: &impl ReadTxn, rule: &AlertRule) -> Result<RuleState, StoreError> {
    let key = composite_key(rule.org_id.as_str(), rule.id.as_str());
    Ok(RULE_STATES.get(txn, &key)?.unwrap_or_default())
}

pub fn put_rule_state(
    txn: &WriteTransaction,
    rule: &AlertRule,
    state: &RuleState,
) -> Result<(), StoreError> {
    let key = composite_key(rule.org_id.as_str(), rule.id.as_str());
    RULE_STATES.insert(txn, &key, state)
}

// ---- browser-error spikes ----

pub fn spike_state(txn: &impl ReadTxn, org: &OrgId) -> Result<SpikeState, StoreError> {
    Ok(SPIKE_STATES.get(txn, org.as_str())?.unwrap_or_default())
}

pub fn put_spike_state(
    txn: &WriteTransaction,
    org: &OrgId,
    state: &SpikeState,
) -> Result<(), StoreError> {
    SPIKE_STATES.insert(txn, org.as_str(), state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_parts_cannot_split_a_key() {
        assert_eq!(key_part("a/b%c"), "a%2Fb%25c");
        assert_ne!(key_part("a/b"), key_part("a%2Fb"));
    }
}
