//! Typed table access for alert rules and their states (`RULE_STATES`).

use redb::WriteTransaction;

use crate::accounts::model::OrgId;
use crate::store::tables::{self, composite_key};
use crate::store::{ReadTxn, RecordTable, StoreError};

use super::model::{AlertRule, RuleId, RuleState};

const RULES: RecordTable<AlertRule> = RecordTable::new(tables::ALERT_RULES);
const RULE_STATES: RecordTable<RuleState> = RecordTable::new(tables::RULE_STATES);

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
