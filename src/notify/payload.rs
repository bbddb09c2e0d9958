//! The outbound webhook payload (SPEC.md section 2 plus CONTRACT.md section 5) and its
//! signature.
//!
//! Invariants: every SPEC field is always present (`alert_id` is `null` when no alert is
//! involved); incident events add `incident_id`, deployment events add `deployment_id`,
//! `version` and `status`; the body is serialised once, at emit time, and the signature is the
//! lowercase hex HMAC-SHA256 of exactly those bytes.

use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;

use crate::accounts::model::OrgId;
use crate::clock::Timestamp;

/// An event for the notification pipeline. Other capabilities build one and pass it to
/// `notify::emit` inside their own write transaction.
#[derive(Debug, Clone)]
pub struct Event {
    /// One of `model::EVENT_NAMES`.
    pub name: &'static str,
    pub org_id: OrgId,
    pub alert_id: Option<String>,
    pub title: String,
    pub body: String,
    pub severity: String,
    pub service: String,
    pub environment: String,
    /// Link to the subject under `BASE_URL`.
    pub url: String,
    pub timestamp: Timestamp,
    pub extra: EventExtra,
}

/// The fields specific to incident and deployment events.
#[derive(Debug, Clone, Default)]
pub enum EventExtra {
    #[default]
    None,
    Incident {
        incident_id: String,
    },
    Deployment {
        deployment_id: String,
        version: String,
        status: String,
    },
}

/// The wire shape; field order is the SPEC's, so receivers see a stable layout.
#[derive(Serialize)]
struct Payload<'a> {
    event: &'a str,
    org_id: &'a str,
    alert_id: Option<&'a str>,
    title: &'a str,
    body: &'a str,
    severity: &'a str,
    service: &'a str,
    environment: &'a str,
    url: &'a str,
    timestamp: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    incident_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deployment_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a str>,
}

/// The JSON body every channel receives for `event`.
pub fn render(event: &Event) -> String {
    let (incident_id, deployment_id, version, status) = match &event.extra {
        EventExtra::None => (None, None, None, None),
        EventExtra::Incident { incident_id } => (Some(incident_id.as_str()), None, None, None),
        EventExtra::Deployment {
            deployment_id,
            version,
            status,
        } => (
            None,
            Some(deployment_id.as_str()),
            Some(version.as_str()),
            Some(status.as_str()),
        ),
    };
    let payload = Payload {
        event: event.name,
        org_id: event.org_id.as_str(),
        alert_id: event.alert_id.as_deref(),
        title: &event.title,
        body: &event.body,
        severity: &event.severity,
        service: &event.service,
        environment: &event.environment,
        url: &event.url,
        timestamp: event.timestamp.to_rfc3339(),
        incident_id,
        deployment_id,
        version,
        status,
    };
    // Serialising plain strings and options cannot fail; an empty object would still be JSON.
    serde_json::to_string(&payload).unwrap_or_else(|_| "{}".to_string())
}

/// `X-Lookout-Signature`: lowercase hex HMAC-SHA256 of the raw body under the channel secret.
pub fn sign(secret: &str, body: &[u8]) -> String {
    // HMAC accepts keys of any length, so `new_from_slice` cannot fail here.
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// `User-Agent` of every webhook request.
pub fn user_agent() -> String {
    format!("lookout-webhook/{}", env!("CARGO_PKG_VERSION"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(extra: EventExtra) -> Event {
        Event {
            name: "alert.fired",
            org_id: OrgId::generate(),
            alert_id: None,
            title: "t".into(),
            body: "b".into(),
            severity: "info".into(),
            service: "s".into(),
            environment: "e".into(),
            url: "http://x/".into(),
            timestamp: Timestamp(0),
            extra,
        }
    }

    #[test]
    fn every_spec_field_is_present() {
        let json: serde_json::Value =
            serde_json::from_str(&render(&event(EventExtra::None))).unwrap();
        for field in [
            "event",
            "org_id",
            "alert_id",
            "title",
            "body",
            "severity",
            "service",
            "environment",
            "url",
            "timestamp",
        ] {
            assert!(json.get(field).is_some(), "{field} missing");
        }
        assert!(json["alert_id"].is_null());
        assert_eq!(json["timestamp"], "1970-01-01T00:00:00.000Z");
        assert!(json.get("incident_id").is_none());
    }

    #[test]
    fn deployment_events_add_their_fields() {
        let extra = EventExtra::Deployment {
            deployment_id: "dep_1".into(),
            version: "1.2".into(),
            status: "succeeded".into(),
        };
        let json: serde_json::Value = serde_json::from_str(&render(&event(extra))).unwrap();
        assert_eq!(json["deployment_id"], "dep_1");
        assert_eq!(json["version"], "1.2");
        assert_eq!(json["status"], "succeeded");
    }

    #[test]
    fn signature_matches_rfc_4231_case_2() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        assert_eq!(
            sign("Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
