//! Browser sessions (`POST /ingest/web-sessions`): the stored session, reading one item, and
//! the upsert by the client's id.
//!
//! Invariants: a session is keyed by the client's id within its organisation; sending the same
//! id again updates it (fields sent replace the stored ones, fields left out are kept), and its
//! start-order and age index rows move with it in the same transaction.

use redb::WriteTransaction;
use serde::{Deserialize, Serialize};

use super::fields::Fields;
use super::item::Item;
use crate::accounts::model::OrgId;
use crate::alerting::{Activity, record_activity};
use crate::clock::Timestamp;
use crate::store::ages::{self, Kind};
use crate::store::codec::Record;
use crate::store::tables::time_key;
use crate::store::{IndexTable, RecordTable, StoreError, tables};

/// The age index tag of a browser session (in stored keys: never changes).
pub const SESSION_AGE: Kind = Kind::new("ses");
pub const WEB_SESSIONS: RecordTable<WebSession> = RecordTable::new(tables::WEB_SESSIONS);
pub const SESSION_STARTS: IndexTable = IndexTable::new(tables::SESSION_STARTS);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebSession {
    pub id: String,
    pub started_at: Timestamp,
    #[serde(default)]
    pub ended_at: Option<Timestamp>,
    #[serde(default)]
    pub duration_ms: Option<u64>,
    pub url: String,
    #[serde(default)]
    pub referrer: Option<String>,
    #[serde(default)]
    pub user_agent: Option<String>,
    #[serde(default)]
    pub release: Option<String>,
    #[serde(default)]
    pub environment: Option<String>,
    #[serde(default)]
    pub service: Option<String>,
    #[serde(default)]
    pub user_id: Option<String>,
    #[serde(default)]
    pub page_views: Option<u64>,
    #[serde(default)]
    pub errors: Option<u64>,
    /// When the session first arrived, and when it was last updated.
    pub first_received_at: Timestamp,
    pub updated_at: Timestamp,
    /// Only when `WEB_INGEST_SCRUB_IP=false`.
    #[serde(default)]
    pub client_ip: Option<String>,
}

impl Record for WebSession {
    const KIND: &'static str = "web session";
}

impl WebSession {
    /// The latest time the client reported for the session, bounded by its last arrival.
    fn age(&self) -> Timestamp {
        let client_time = self
            .ended_at
            .unwrap_or(self.started_at)
            .max(self.started_at);
        ages::age_of(client_time, self.updated_at)
    }

    /// The session as updated by `newer` (same id): what `newer` says wins, the rest stays.
    pub fn updated_by(self, newer: WebSession) -> WebSession {
        WebSession {
            id: newer.id,
            started_at: newer.started_at,
            ended_at: newer.ended_at.or(self.ended_at),
            duration_ms: newer.duration_ms.or(self.duration_ms),
            url: newer.url,
            referrer: newer.referrer.or(self.referrer),
            user_agent: newer.user_agent.or(self.user_agent),
            release: newer.release.or(self.release),
            environment: newer.environment.or(self.environment),
            service: newer.service.or(self.service),
            user_id: newer.user_id.or(self.user_id),
            page_views: newer.page_views.or(self.page_views),
            errors: newer.errors.or(self.errors),
            first_received_at: self.first_received_at,
            updated_at: newer.updated_at,
            client_ip: newer.client_ip.or(self.client_ip),
        }
    }
}

pub fn session_key(org: &OrgId, id: &str) -> String {
    tables::composite_key(org.as_str(), id)
}

fn start_key(org: &OrgId, session: &WebSession) -> String {
    format!(
        "{}/{}/{}",
        org.as_str(),
        time_key(session.started_at),
        session.id
    )
}

/// Reads one (already scrubbed) item.
pub fn parse_session(
    item: &Item<'_>,
    received_at: Timestamp,
    client_ip: Option<&str>,
) -> Result<WebSession, String> {
    let fields = Fields::of(item)?;
    let id = fields.id("id")?.ok_or("id is required")?;
    let started_at = fields.required_timestamp("started_at")?;
    let ended_at = fields.timestamp("ended_at")?;
    if ended_at.is_some_and(|ended| ended < started_at) {
        return Err("ended_at must not be before started_at".into());
    }
    Ok(WebSession {
        id,
        started_at,
        ended_at,
        duration_ms: fields.count("duration_ms")?,
        url: fields.required_text("url")?,
        referrer: fields.text("referrer")?,
        user_agent: fields.text("user_agent")?,
        release: fields.name("release")?,
        environment: fields.name("environment")?,
        service: fields.name("service")?,
        user_id: fields.text("user_id")?,
        page_views: fields.count("page_views")?,
        errors: fields.count("errors")?,
        first_received_at: received_at,
        updated_at: received_at,
        client_ip: client_ip.map(str::to_string),
    })
}

/// Inserts or updates each session, with its index rows and the services registry.
pub fn upsert_sessions(
    txn: &WriteTransaction,
    org: &OrgId,
    sessions: &[WebSession],
) -> Result<(), StoreError> {
    let mut activity = Vec::new();
    for session in sessions {
        let key = session_key(org, &session.id);
        let merged = match WEB_SESSIONS.get(txn, &key)? {
            Some(old) => {
                SESSION_STARTS.remove(txn, &start_key(org, &old))?;
                ages::remove_age(txn, SESSION_AGE, old.age(), &key)?;
                old.updated_by(session.clone())
            }
            None => session.clone(),
        };
        WEB_SESSIONS.insert(txn, &key, &merged)?;
        SESSION_STARTS.insert(txn, &start_key(org, &merged), "")?;
        ages::put_age(txn, SESSION_AGE, merged.age(), &key)?;
        if let Some(service) = &merged.service {
            activity.push(Activity {
                service: service.clone(),
                environment: merged.environment.clone(),
                at: session.updated_at,
                errors: 0,
            });
        }
    }
    record_activity(txn, org, &activity)
}

/// Removes a session and its start row (retention); its errors age out on their own.
pub fn remove_session(txn: &WriteTransaction, key: &str) -> Result<bool, StoreError> {
    let Some(session) = WEB_SESSIONS.get(txn, key)? else {
        return Ok(false);
    };
    let (org, _) = tables::split_composite_key(key).unwrap_or((key, ""));
    let start = format!("{org}/{}/{}", time_key(session.started_at), session.id);
    SESSION_STARTS.remove(txn, &start)?;
    ages::remove_age(txn, SESSION_AGE, session.age(), key)?;
    WEB_SESSIONS.remove(txn, key)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const NOW: Timestamp = Timestamp(1_795_348_800_000);

    #[test]
    fn sessions_parse_and_updates_keep_what_is_not_resent() {
        let first = json!({"id": "s-1", "started_at": NOW.0 - 60_000, "url": "https://a.test/",
            "service": "web", "page_views": 1, "referrer": "https://b.test/"});
        let first = parse_session(&Item::from(first.clone()), NOW, None).unwrap();
        let later = json!({"id": "s-1", "started_at": NOW.0 - 60_000, "url": "https://a.test/x",
            "ended_at": NOW.0, "page_views": 3});
        let later = parse_session(&Item::from(later.clone()), Timestamp(NOW.0 + 5), None).unwrap();
        let merged = first.clone().updated_by(later);
        assert_eq!(merged.page_views, Some(3));
        assert_eq!(merged.referrer.as_deref(), Some("https://b.test/"));
        assert_eq!(merged.service.as_deref(), Some("web"));
        assert_eq!(merged.url, "https://a.test/x");
        assert_eq!(merged.first_received_at, NOW);
        assert_eq!(merged.updated_at, Timestamp(NOW.0 + 5));
        assert_eq!(merged.age(), NOW);

        for bad in [
            json!({"started_at": 1, "url": "u"}),
            json!({"id": "s", "url": "u"}),
            json!({"id": "s", "started_at": 1}),
            json!({"id": "s", "started_at": 10, "ended_at": 5, "url": "u"}),
            json!({"id": "s", "started_at": 1, "url": "u", "page_views": -1}),
        ] {
            assert!(
                parse_session(&Item::from(bad.clone()), NOW, None).is_err(),
                "{bad}"
            );
        }
    }
}
