//! The alert evaluator: every `ALERT_EVAL_INTERVAL_SECONDS` it measures each enabled rule over
//! the rollup counters (`rollup.rs`) and the agent hub, steps the rule's state machine
//! (`rules_model::step`), and checks each organisation for a browser-error spike
//! (`WEB_ERROR_*`).
//!
//! Invariants: a tick measures in one read transaction and writes every change in one write
//! transaction, so the writer is never held while measuring. The write re-reads each rule's
//! state and skips a rule whose state changed since the read (an edit or a deletion won the
//! race; the next tick measures again). An alert, the rule or spike state naming it, its
//! incident and their outbound events commit together: a restart neither loses a firing alert
//! nor fires it twice. A spike alert fires at most once per cooldown.

pub mod db;
pub(crate) mod transitions;

use std::collections::HashMap;
use std::time::Duration;

use crate::accounts::model::OrgId;
use crate::agents::Agents;
use crate::alerting::alerts::model::AlertId;
use crate::alerting::evaluator::transitions::{RuleChange, SpikeChange, apply};
use crate::alerting::rollup::{self, Metric, Rollup};
use crate::alerting::rules;
use crate::alerting::rules::model::{AlertRule, RuleId, RuleKind, RuleState, Transition, step};
use crate::alerting::rules::readings::{Reading, RuleReadings};
use crate::clock::{Clock, Timestamp};
use crate::config::WebErrorAlertSettings;
use crate::notify::{self, Notify};
use crate::store::{ReadTxn, StoreError};

/// How often old rollup rows are swept.
const SWEEP_EVERY: Duration = Duration::from_secs(300);
/// Rollup rows removed per write transaction by the sweep.
const SWEEP_CHUNK: usize = 2_000;
/// The least time between two spike checks asked for by ingest.
const SPIKE_CHECK_SPACING: Duration = Duration::from_millis(250);

/// Asks the evaluator to check browser-error spikes now rather than at its next tick: ingest
/// nudges it after committing error events, so a spike alert fires within moments of the
/// spike. Nudges while a check runs or waits collapse into one.
#[derive(Clone, Default)]
pub struct SpikeWake(std::sync::Arc<tokio::sync::Notify>);

impl SpikeWake {
    pub fn nudge(&self) {
        self.0.notify_one();
    }
}

/// Everything the evaluator needs.
#[derive(Clone)]
pub struct Evaluator {
    notify: Notify,
    agents: Agents,
    spikes: WebErrorAlertSettings,
    wake: SpikeWake,
    /// Each enabled rule's value at the last tick, for the rules API.
    readings: RuleReadings,
    /// When this server started: an agent is not called offline for time the server was down.
    started: Timestamp,
}

/// What one tick did (for logs, tests and the benchmark).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TickReport {
    pub rules: usize,
    pub changes: usize,
    pub events: usize,
}

/// What the read half of a tick decided: the rule and spike changes to write, how many rules
/// there are, and what each enabled rule measured.
struct Decision {
    rules: Vec<RuleChange>,
    spikes: Vec<SpikeChange>,
    count: usize,
    readings: HashMap<RuleId, Reading>,
}

/// What a window total is known by within one tick: (org, metric, service, environment,
/// window seconds).
type WindowKey = (OrgId, Metric, Option<String>, Option<String>, i64);

/// What one tick has measured already.
#[derive(Default)]
struct TickCache {
    /// Per organisation: its disconnected agents (name, hostname, gone since).
    offline: HashMap<OrgId, Vec<(String, String, Timestamp)>>,
    /// Window totals by (org, metric, service, environment, window).
    windows: HashMap<WindowKey, Rollup>,
}

impl Evaluator {
    pub fn new(notify: Notify, agents: Agents, spikes: WebErrorAlertSettings) -> Self {
        let started = notify.clock().now();
        Evaluator {
            notify,
            agents,
            spikes,
            wake: SpikeWake::default(),
            readings: RuleReadings::default(),
            started,
        }
    }

    /// The handle ingest nudges after committing error events.
    pub fn spike_wake(&self) -> SpikeWake {
        self.wake.clone()
    }

    /// The handle the rules API reads each rule's last measurement from.
    pub fn readings(&self) -> RuleReadings {
        self.readings.clone()
    }

    fn clock(&self) -> &Clock {
        self.notify.clock()
    }

    /// Runs ticks every `interval` until `stop` turns true.
    pub async fn run(self, interval: Duration, mut stop: tokio::sync::watch::Receiver<bool>) {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_sweep = std::time::Instant::now();
        loop {
            let spikes_only = tokio::select! {
                _ = ticker.tick() => false,
                _ = self.wake.0.notified(), if self.spikes.enabled => true,
                _ = stop.changed() => return,
            };
            if *stop.borrow() {
                return;
            }
            if spikes_only {
                if let Err(error) = self.check_spikes().await {
                    tracing::warn!(%error, "spike check failed; retrying next tick");
                }
                tokio::select! {
                    _ = tokio::time::sleep(SPIKE_CHECK_SPACING) => {}
                    _ = stop.changed() => return,
                }
                continue;
            }
            let started = std::time::Instant::now();
            match self.tick().await {
                Ok(report) => {
                    metrics::histogram!("lookout_alert_tick_seconds")
                        .record(started.elapsed().as_secs_f64());
                    if report.changes > 0 {
                        tracing::info!(
                            rules = report.rules,
                            changes = report.changes,
                            events = report.events,
                            "alert rules evaluated"
                        );
                    }
                }
                Err(error) => tracing::warn!(%error, "alert evaluation failed; retrying next tick"),
            }
            if last_sweep.elapsed() >= SWEEP_EVERY {
                last_sweep = std::time::Instant::now();
                match self.sweep_rollups().await {
                    Ok(removed) => tracing::debug!(removed, "old rollup rows swept"),
                    Err(error) => tracing::warn!(%error, "rollup sweep failed"),
                }
            }
        }
    }

    /// Measures every rule and spike once and writes what changed.
    pub async fn tick(&self) -> Result<TickReport, StoreError> {
        let now = self.clock().now();
        let this = self.clone();
        let Decision {
            rules: rule_changes,
            spikes: spike_changes,
            count,
            readings,
        } = self
            .notify
            .store()
            .read(move |txn| this.decide(txn, now))
            .await?;
        self.readings.replace(readings);
        let mut report = TickReport {
            rules: count,
            ..TickReport::default()
        };
        if rule_changes.is_empty() && spike_changes.is_empty() {
            return Ok(report);
        }
        let base_url = self.notify.base_url().to_string();
        let (changes, events) = self
            .notify
            .store()
            .write(move |txn| apply(txn, &rule_changes, &spike_changes, now, &base_url))
            .await?;
        report.changes = changes;
        report.events = events;
        if events > 0 {
            self.notify.wake();
        }
        Ok(report)
    }

    /// Removes rollup rows no window needs: found in a read, removed in small writes, so the
    /// writer is never held for a whole-table scan.
    async fn sweep_rollups(&self) -> Result<usize, StoreError> {
        let now = self.clock().now();
        let store = self.notify.store();
        let stale = store.read(move |txn| rollup::stale_rows(txn, now)).await?;
        let mut removed = 0;
        for chunk in stale.chunks(SWEEP_CHUNK) {
            let chunk = chunk.to_vec();
            removed += store
                .write(move |txn| rollup::remove_rows(txn, &chunk))
                .await?;
        }
        Ok(removed)
    }

    /// Checks browser-error spikes only (between ticks, when ingest asks).
    pub async fn check_spikes(&self) -> Result<usize, StoreError> {
        if !self.spikes.enabled {
            return Ok(0);
        }
        let now = self.clock().now();
        let this = self.clone();
        let spikes = self
            .notify
            .store()
            .read(move |txn| this.decide_spikes(txn, now))
            .await?;
        if spikes.is_empty() {
            return Ok(0);
        }
        let base_url = self.notify.base_url().to_string();
        let (changes, events) = self
            .notify
            .store()
            .write(move |txn| apply(txn, &[], &spikes, now, &base_url))
            .await?;
        if events > 0 {
            self.notify.wake();
        }
        Ok(changes)
    }

    /// The read half of a tick.
    fn decide(&self, txn: &impl ReadTxn, now: Timestamp) -> Result<Decision, StoreError> {
        let rules = rules::db::all_rules(txn)?;
        let count = rules.len();
        let mut cache = TickCache::default();
        let mut changes = Vec::new();
        let mut readings = HashMap::new();
        for (rule, state) in rules {
            if !rule.enabled {
                continue;
            }
            let value = self.measure(txn, &rule, now, &mut cache)?;
            let reading = Reading {
                value,
                measured_at: now,
            };
            readings.insert(rule.id.clone(), reading);
            let condition = value.is_some_and(|value| value >= rule.threshold);
            let (phase, transition) = step(
                &state.phase,
                condition,
                now,
                rule.for_seconds,
                rule.recovery_seconds,
                AlertId::generate(),
            );
            if transition == Transition::None {
                continue;
            }
            let after = RuleState {
                phase,
                value: value.or(state.value),
            };
            changes.push(RuleChange {
                rule,
                before: state,
                after,
                transition,
            });
        }
        let spikes = if self.spikes.enabled {
            self.decide_spikes(txn, now)?
        } else {
            Vec::new()
        };
        Ok(Decision {
            rules: changes,
            spikes,
            count,
            readings,
        })
    }

    /// The rule's value now; `None` when there is nothing to measure (no spans).
    fn measure(
        &self,
        txn: &impl ReadTxn,
        rule: &AlertRule,
        now: Timestamp,
        cache: &mut TickCache,
    ) -> Result<Option<f64>, StoreError> {
        let (service, environment) = (rule.service.as_deref(), rule.environment.as_deref());
        let mut window = |metric| -> Result<Rollup, StoreError> {
            // Rules often share a counter and window (say, two thresholds): read it once.
            let key = (
                rule.org_id.clone(),
                metric,
                rule.service.clone(),
                rule.environment.clone(),
                rule.window_seconds,
            );
            if let Some(known) = cache.windows.get(&key) {
                return Ok(known.clone());
            }
            let total = rollup::window(
                txn,
                &rule.org_id,
                metric,
                service,
                environment,
                now,
                rule.window_seconds,
            )?;
            cache.windows.insert(key, total.clone());
            Ok(total)
        };
        Ok(match rule.kind {
            RuleKind::ErrorCount => Some(window(Metric::Errors)?.count as f64),
            RuleKind::NewErrorGroup => Some(window(Metric::NewGroups)?.count as f64),
            RuleKind::SpanP95Ms => window(Metric::Spans)?.quantile(0.95),
            RuleKind::AgentOffline => {
                if !cache.offline.contains_key(&rule.org_id) {
                    let offline = self.offline_agents(txn, &rule.org_id)?;
                    cache.offline.insert(rule.org_id.clone(), offline);
                }
                let gone_for = rule.window_seconds.saturating_mul(1000);
                let offline = cache.offline[&rule.org_id]
                    .iter()
                    .filter(|(name, hostname, since)| {
                        service.is_none_or(|wanted| wanted == name || wanted == hostname)
                            && now.unix_millis() - since.unix_millis() >= gone_for
                    })
                    .count();
                Some(offline as f64)
            }
        })
    }

    /// The agents of `org` not connected now, enrolled with a live token: (name, hostname,
    /// gone since). "Gone since" is the later of the last heartbeat and this server's start.
    fn offline_agents(
        &self,
        txn: &impl ReadTxn,
        org: &OrgId,
    ) -> Result<Vec<(String, String, Timestamp)>, StoreError> {
        let mut offline = Vec::new();
        for agent in crate::agents::agents_with_live_tokens(txn, org)? {
            if self.agents.hub().is_online(&agent.id) {
                continue;
            }
            let since = Timestamp(agent.last_seen.0.max(self.started.0));
            offline.push((agent.name, agent.hostname, since));
        }
        Ok(offline)
    }

    fn decide_spikes(
        &self,
        txn: &impl ReadTxn,
        now: Timestamp,
    ) -> Result<Vec<SpikeChange>, StoreError> {
        let window = i64::try_from(self.spikes.spike_window.as_secs()).unwrap_or(i64::MAX);
        let cooldown_ms = i64::try_from(self.spikes.cooldown.as_millis()).unwrap_or(i64::MAX);
        let mut changes = Vec::new();
        for org in crate::accounts::all_orgs(txn)? {
            let count =
                rollup::window(txn, &org.id, Metric::Errors, None, None, now, window)?.count;
            let spiking = count >= u64::from(self.spikes.spike_threshold);
            let state = self::db::spike_state(txn, &org.id)?;
            match (&state.live, spiking) {
                (None, true) => {
                    let cooled = state
                        .last_fired_at
                        .is_none_or(|at| now.unix_millis() - at.unix_millis() >= cooldown_ms);
                    if cooled {
                        changes.push(SpikeChange::Fire {
                            channels: self.spike_channels(txn, &org.id)?,
                            org: org.id,
                            before: state,
                            body: format!(
                                "{count} browser error events in the last {window} s \
                                 (threshold {})",
                                self.spikes.spike_threshold
                            ),
                            alert_id: AlertId::generate(),
                        });
                    }
                }
                (Some(_), false) => changes.push(SpikeChange::Resolve {
                    org: org.id,
                    before: state,
                    count,
                }),
                _ => {}
            }
        }
        Ok(changes)
    }

    /// `WEB_ERROR_ALERT_CHANNELS` for one organisation: each entry is a channel id or name of
    /// that organisation. Unset means every channel whose filter matches.
    fn spike_channels(
        &self,
        txn: &impl ReadTxn,
        org: &OrgId,
    ) -> Result<Option<Vec<String>>, StoreError> {
        if self.spikes.channels.is_empty() {
            return Ok(None);
        }
        let channels = notify::channels_of_org(txn, org)?;
        let chosen = channels
            .iter()
            .filter(|channel| {
                self.spikes
                    .channels
                    .iter()
                    .any(|wanted| wanted == channel.id.as_str() || wanted == &channel.name)
            })
            .map(|channel| channel.id.to_string())
            .collect();
        Ok(Some(chosen))
    }
}
