//! Browser errors and warnings off the wire (`POST /ingest/web-errors`): reading one scrubbed
//! item into the error event that `errors` stores, groups and indexes.
//!
//! Invariants: an item is read as sent, its fields checked one by one (a reason names the field,
//! never its value); the event's id is minted on arrival; breadcrumbs past
//! `errors::MAX_BREADCRUMBS` are dropped oldest first, not refused; frames a client did not send
//! stay `None` (they are derived from the stack where they are read).

use super::fields::Fields;
use super::item::Item;
use crate::clock::Timestamp;
use crate::errors::{ErrorEvent, EventId, MAX_BREADCRUMBS};

/// Reads one (already scrubbed) item. `client_ip` is the sender's address when it may be kept.
pub fn parse_event(
    item: &Item<'_>,
    received_at: Timestamp,
    client_ip: Option<&str>,
) -> Result<ErrorEvent, String> {
    let fields = Fields::of(item)?;
    let level = fields.required_text("level")?;
    if level != "error" && level != "warning" {
        return Err("level must be \"error\" or \"warning\"".into());
    }
    let event_id = match fields.id("event_id")? {
        Some(id) => Some(id),
        None => fields.id("id")?,
    };
    let frames = fields.array("frames")?;
    if frames
        .as_ref()
        .is_some_and(|frames| frames.iter().any(|frame| !frame.is_object()))
    {
        return Err("frames must be an array of objects".into());
    }
    // Frames are derived from the stack when the client sent none (CONTRACT section 3), when
    // they are read (`ErrorEvent::frames_or_derived`).
    let stack = fields.text("stack")?;
    let fingerprint = fields.array("fingerprint")?;
    if fingerprint
        .as_ref()
        .is_some_and(|parts| parts.iter().any(|part| !part.is_string()))
    {
        return Err("fingerprint must be an array of strings".into());
    }
    let breadcrumbs = fields.array("breadcrumbs")?;
    if breadcrumbs
        .as_ref()
        .is_some_and(|crumbs| crumbs.iter().any(|crumb| !crumb.is_object()))
    {
        return Err("breadcrumbs must be an array of objects".into());
    }
    // The newest are the ones that explain the error; older ones are dropped, not refused.
    let breadcrumbs = breadcrumbs.map(|mut crumbs| {
        let excess = crumbs.len().saturating_sub(MAX_BREADCRUMBS);
        crumbs.drain(..excess);
        crumbs
    });
    Ok(ErrorEvent {
        id: EventId::generate(),
        event_id,
        level,
        message: fields.required_text("message")?,
        name: fields.text("name")?,
        stack,
        frames,
        url: fields.required_text("url")?,
        release: fields.name("release")?,
        environment: fields.name("environment")?,
        service: fields.name("service")?,
        session_id: fields.id("session_id")?,
        user_id: fields.text("user_id")?,
        user_agent: fields.text("user_agent")?,
        timestamp: fields.timestamp("timestamp")?.unwrap_or(received_at),
        received_at,
        tags: fields.object("tags")?.unwrap_or_default(),
        fingerprint,
        breadcrumbs,
        client_ip: client_ip.map(str::to_string),
        group_id: None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const NOW: Timestamp = Timestamp(1_795_348_800_000);

    #[test]
    fn frames_parsed_from_the_stack_are_derived_not_stored() {
        let stack = "TypeError: x is undefined\n    at pay (https://a.test/app.js:10:5)\n    at https://a.test/vendor.js:1:2";
        let item = json!({"level": "error", "message": "m", "url": "u", "stack": stack});
        let mut event = parse_event(&Item::from(item.clone()), NOW, None).unwrap();
        assert_eq!(event.frames, None, "not stored");
        let derived = event.frames_or_derived().into_owned();
        assert_eq!(derived.len(), 2);
        assert_eq!(derived[0]["function"], "pay");
        assert_eq!(derived[0]["line"], 10);
        assert_eq!(event.frames_mut().cloned(), Some(derived));

        let sent = json!({"level": "error", "message": "m", "url": "u", "stack": stack,
            "frames": [{"file": "b.js", "line": 3, "column": 4}]});
        let event = parse_event(&Item::from(sent.clone()), NOW, None).unwrap();
        assert_eq!(
            event.frames_or_derived()[0]["file"],
            "b.js",
            "sent frames win"
        );
        let bare = json!({"level": "error", "message": "m", "url": "u"});
        let mut event = parse_event(&Item::from(bare.clone()), NOW, None).unwrap();
        assert!(event.frames_or_derived().is_empty());
        assert_eq!(event.frames_mut(), None);
    }

    #[test]
    fn items_become_events_or_reasons() {
        let item = json!({"level": "error", "message": "boom", "url": "https://a.test/",
            "event_id": "e-1", "frames": [{"file": "a.js", "line": 1, "column": 2}],
            "tags": {"plan": "pro"}, "timestamp": "2026-11-22T11:00:00Z", "service": "web"});
        let event = parse_event(&Item::from(item.clone()), NOW, None).unwrap();
        assert_eq!(event.event_id.as_deref(), Some("e-1"));
        assert_eq!(event.timestamp, Timestamp(NOW.0 - 3_600_000));
        assert_eq!(event.tags["plan"], "pro");
        assert!(event.id.as_str().starts_with("evt_"));
        let with_id = json!({"level": "warning", "message": "m", "url": "u", "id": "x"});
        assert_eq!(
            parse_event(&Item::from(with_id.clone()), NOW, None)
                .unwrap()
                .event_id
                .as_deref(),
            Some("x")
        );

        let bad = [
            json!({"message": "m", "url": "u"}),
            json!({"level": "fatal", "message": "m", "url": "u"}),
            json!({"level": "error", "url": "u"}),
            json!({"level": "error", "message": 5, "url": "u"}),
            json!({"level": "error", "message": "m"}),
            json!({"level": "error", "message": "m", "url": "u", "frames": [1]}),
            json!({"level": "error", "message": "m", "url": "u", "tags": []}),
            json!({"level": "error", "message": "m", "url": "u", "timestamp": -5}),
            json!({"level": "error", "message": "m", "url": "u", "session_id": "a/b"}),
            json!({"level": "error", "message": "m", "url": "u", "fingerprint": [{}]}),
            json!("not an object"),
        ];
        for item in bad {
            assert!(
                parse_event(&Item::from(item.clone()), NOW, None).is_err(),
                "{item}"
            );
        }
    }
}
