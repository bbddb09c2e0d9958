//! The write half of an evaluator tick: applying each decided change to the alert it names,
//! with its incident and outbound events, in the tick's one write transaction. Also used by
//! the rules API to end a deleted or disabled rule's alert.
//!
//! Invariants: a change is applied only when the rule (or spike) state still equals what the
//! read half saw; an alert, the state naming it, its incident and their events are written in
//! the same transaction.

use redb::WriteTransaction;

use super::db::{self, SpikeState};
use crate::accounts::model::OrgId;
use crate::alerting::alerts::api::alert_event;
use crate::alerting::alerts::model::{Alert, AlertHistoryEntry, AlertId, AlertState};
use crate::alerting::incidents::api::incident_event;
use crate::alerting::incidents::model::IncidentId;
use crate::alerting::incidents::model::{Incident, IncidentStatus, TimelineEntry};
use crate::alerting::rules::model::{AlertRule, Phase, RuleState, Transition};
use crate::alerting::{alerts, incidents, rules};
use crate::clock::Timestamp;
use crate::notify;
use crate::store::StoreError;

/// One rule's change, decided from the read and applied in the write.
pub(super) struct RuleChange {
    pub rule: AlertRule,
    pub before: RuleState,
    pub after: RuleState,
    pub transition: Transition,
}

/// One organisation's spike decision.
pub(super) enum SpikeChange {
    Fire {
        org: OrgId,
        before: SpikeState,
        body: String,
        channels: Option<Vec<String>>,
        alert_id: AlertId,
    },
    Resolve {
        org: OrgId,
        before: SpikeState,
        count: u64,
    },
}

fn history(at: Timestamp, kind: &str) -> AlertHistoryEntry {
    AlertHistoryEntry {
        at,
        kind: kind.to_string(),
        actor_id: None,
    }
}

fn rule_alert(
    rule: &AlertRule,
    id: AlertId,
    state: AlertState,
    body: String,
    now: Timestamp,
) -> Alert {
    Alert {
        id,
        org_id: rule.org_id.clone(),
        source: "rule".to_string(),
        dedup_key: rule.dedup_key(),
        title: rule.name.clone(),
        body,
        severity: rule.severity.clone(),
        service: rule.service.clone(),
        environment: rule.environment.clone(),
        state,
        fired_at: now,
        resolved_at: None,
        acknowledged_by: None,
        acknowledged_at: None,
        labels: Default::default(),
        url: None,
        history: vec![history(
            now,
            if state == AlertState::Pending {
                "pending"
            } else {
                "fired"
            },
        )],
        rule_id: Some(rule.id.to_string()),
        channels: rule.alert_channels(),
        incident_id: None,
    }
}

/// Emits one of an alert's events to its channels; returns the deliveries enqueued.
fn emit_alert(
    txn: &WriteTransaction,
    name: &'static str,
    alert: &Alert,
    base_url: &str,
) -> Result<usize, StoreError> {
    let event = alert_event(name, alert, base_url);
    Ok(notify::emit_to(txn, &event, alert.channels.as_deref())?.len())
}

/// Opens the incident of a rule's firing alert (`open_incident`), linking both ways.
fn open_incident(
    txn: &WriteTransaction,
    alert: &mut Alert,
    now: Timestamp,
    base_url: &str,
) -> Result<usize, StoreError> {
    let text = format!("Opened by alert {}: {}", alert.id, alert.body);
    let incident = Incident {
        id: IncidentId::generate(),
        org_id: alert.org_id.clone(),
        title: alert.title.clone(),
        severity: alert.severity.clone(),
        description: Some(alert.body.clone()),
        service: alert.service.clone(),
        environment: alert.environment.clone(),
        status: IncidentStatus::Open,
        opened_at: now,
        resolved_at: None,
        alert_ids: vec![alert.id.to_string()],
        timeline: vec![TimelineEntry {
            at: now,
            kind: "opened".to_string(),
            actor_id: None,
            text: text.clone(),
            changes: Vec::new(),
        }],
    };
    incidents::db::put_incident(txn, &incident)?;
    alert.incident_id = Some(incident.id.to_string());
    let event = incident_event("incident.opened", &incident, &text, base_url);
    Ok(notify::emit_to(txn, &event, alert.channels.as_deref())?.len())
}

/// Notes a linked alert's resolution on its (still open) incident's timeline. People resolve
/// incidents; the entry tells them the condition is gone. No event: nothing about the
/// incident itself changed.
fn note_on_incident(
    txn: &WriteTransaction,
    alert: &Alert,
    now: Timestamp,
) -> Result<(), StoreError> {
    let Some(id) = alert
        .incident_id
        .as_deref()
        .and_then(|id| IncidentId::parse(id).ok())
    else {
        return Ok(());
    };
    let Some(mut incident) = incidents::db::incident_of_org(txn, &alert.org_id, &id)? else {
        return Ok(());
    };
    if incident.status != IncidentStatus::Open
        || incident.timeline.len() >= crate::alerting::incidents::model::MAX_TIMELINE
    {
        return Ok(());
    }
    incident.timeline.push(TimelineEntry {
        at: now,
        kind: "alert_resolved".to_string(),
        actor_id: None,
        text: format!("Alert {} resolved", alert.id),
        changes: Vec::new(),
    });
    incidents::db::put_incident(txn, &incident)
}

/// Resolves a rule's alert (firing: `alert.resolved`) or removes it (pending); used when the
/// condition recovers and when the rule is deleted or disabled. Returns the events enqueued.
pub(crate) fn end_rule_alert(
    txn: &WriteTransaction,
    org: &OrgId,
    phase: &Phase,
    now: Timestamp,
    base_url: &str,
) -> Result<usize, StoreError> {
    let Some(id) = phase.alert_id() else {
        return Ok(0);
    };
    let Some(mut alert) = alerts::db::alert_of_org(txn, org, id)? else {
        return Ok(0);
    };
    match alert.state {
        AlertState::Pending => {
            alerts::db::remove_alert(txn, &alert)?;
            Ok(0)
        }
        AlertState::Firing => {
            alert.state = AlertState::Resolved;
            alert.resolved_at = Some(now);
            alert.record(history(now, "resolved"));
            alerts::db::put_alert(txn, &alert)?;
            note_on_incident(txn, &alert, now)?;
            emit_alert(txn, "alert.resolved", &alert, base_url)
        }
        AlertState::Resolved => Ok(0),
    }
}

/// The write half of a tick: returns (changes applied, deliveries enqueued).
pub(super) fn apply(
    txn: &WriteTransaction,
    rules: &[RuleChange],
    spikes: &[SpikeChange],
    now: Timestamp,
    base_url: &str,
) -> Result<(usize, usize), StoreError> {
    let (mut applied, mut events) = (0, 0);
    for change in rules {
        // The rule may have been edited, disabled or deleted since the read.
        let Some(rule) = rules::db::rule_of_org(txn, &change.rule.org_id, &change.rule.id)? else {
            continue;
        };
        if !rule.enabled || rules::db::rule_state(txn, &rule)? != change.before {
            continue;
        }
        let body = rule.kind.describe(
            change.after.value.unwrap_or(0.0),
            rule.threshold,
            rule.window_seconds,
        );
        let org = &rule.org_id;
        match (change.transition, &change.after.phase) {
            (Transition::Pend, Phase::Pending { alert_id, .. }) => {
                let alert = rule_alert(&rule, alert_id.clone(), AlertState::Pending, body, now);
                alerts::db::put_alert(txn, &alert)?;
            }
            (Transition::FireNew, Phase::Firing { alert_id, .. }) => {
                let mut alert = rule_alert(&rule, alert_id.clone(), AlertState::Firing, body, now);
                if rule.open_incident {
                    events += open_incident(txn, &mut alert, now, base_url)?;
                }
                alerts::db::put_alert(txn, &alert)?;
                events += emit_alert(txn, "alert.fired", &alert, base_url)?;
            }
            (Transition::Fire, Phase::Firing { alert_id, .. }) => {
                let mut alert = match alerts::db::alert_of_org(txn, org, alert_id)? {
                    Some(alert) => alert,
                    // Acknowledged pending alerts are kept; a missing one is raised afresh.
                    None => rule_alert(
                        &rule,
                        alert_id.clone(),
                        AlertState::Pending,
                        body.clone(),
                        now,
                    ),
                };
                alert.state = AlertState::Firing;
                alert.fired_at = now;
                alert.body = body;
                alert.record(history(now, "fired"));
                if rule.open_incident {
                    events += open_incident(txn, &mut alert, now, base_url)?;
                }
                alerts::db::put_alert(txn, &alert)?;
                events += emit_alert(txn, "alert.fired", &alert, base_url)?;
            }
            (Transition::Cancel, _) | (Transition::Resolve, _) => {
                events += end_rule_alert(txn, org, &change.before.phase, now, base_url)?;
            }
            (Transition::Quiet, _) => {}
            // A transition always comes with its phase; anything else is skipped.
            _ => continue,
        }
        rules::db::put_rule_state(txn, &rule, &change.after)?;
        applied += 1;
    }
    for change in spikes {
        match change {
            SpikeChange::Fire {
                org,
                before,
                body,
                channels,
                alert_id,
            } => {
                if db::spike_state(txn, org)? != *before {
                    continue;
                }
                let alert = spike_alert(org, alert_id.clone(), body, channels.clone(), now);
                alerts::db::put_alert(txn, &alert)?;
                events += emit_alert(txn, "alert.fired", &alert, base_url)?;
                let state = SpikeState {
                    live: Some(alert.id.clone()),
                    last_fired_at: Some(now),
                };
                db::put_spike_state(txn, org, &state)?;
            }
            SpikeChange::Resolve { org, before, count } => {
                if db::spike_state(txn, org)? != *before {
                    continue;
                }
                if let Some(id) = &before.live
                    && let Some(mut alert) = alerts::db::alert_of_org(txn, org, id)?
                    && alert.state == AlertState::Firing
                {
                    alert.state = AlertState::Resolved;
                    alert.resolved_at = Some(now);
                    alert.body = format!("{}; now {count} in the window", alert.body);
                    alert.record(history(now, "resolved"));
                    alerts::db::put_alert(txn, &alert)?;
                    events += emit_alert(txn, "alert.resolved", &alert, base_url)?;
                }
                let state = SpikeState {
                    live: None,
                    last_fired_at: before.last_fired_at,
                };
                db::put_spike_state(txn, org, &state)?;
            }
        }
        applied += 1;
    }
    Ok((applied, events))
}

fn spike_alert(
    org: &OrgId,
    id: AlertId,
    body: &str,
    channels: Option<Vec<String>>,
    now: Timestamp,
) -> Alert {
    Alert {
        id,
        org_id: org.clone(),
        source: "spike".to_string(),
        dedup_key: "spike:web-errors".to_string(),
        title: "Browser error spike".to_string(),
        body: body.to_string(),
        severity: "high".to_string(),
        service: None,
        environment: None,
        state: AlertState::Firing,
        fired_at: now,
        resolved_at: None,
        acknowledged_by: None,
        acknowledged_at: None,
        labels: Default::default(),
        url: None,
        history: vec![history(now, "fired")],
        rule_id: None,
        channels,
        incident_id: None,
    }
}
