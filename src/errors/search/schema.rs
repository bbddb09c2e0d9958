//! The search schema and the documents written to it.
//!
//! Invariants: one index holds every organisation; every document carries `org` and `kind`,
//! and every query is restricted by both. An event document carries only the event's own
//! small fields; the stack text lives once in its group's document (`kind:group`), because
//! tokenising a whole stack per event costs more than the rest of ingest together. Only `id`
//! (and `group`) are stored: results are read back from redb, the source of truth. No field
//! holds a term of its own per event, since writing and merging segments costs by their
//! distinct terms: `id` is stored, not indexed (a document is replaced by the millisecond its
//! id was minted, `id_ms`: `replace.rs`), and `timestamp` is a column only (range filters and
//! newest-first searches read the column). A group's document is found by `kind:group` and
//! `group`. Changing a field changes the schema, and an index of another schema is rebuilt
//! from redb on start, in the background (`open_index`).

use tantivy::TantivyDocument;
use tantivy::schema::{
    FAST, Field, INDEXED, JsonObjectOptions, STORED, STRING, Schema, TEXT, TextFieldIndexing,
};

use crate::errors::ErrorEvent;

pub const KIND_EVENT: &str = "event";
pub const KIND_GROUP: &str = "group";

/// The fields, resolved once.
#[derive(Clone)]
pub struct Fields {
    pub kind: Field,
    pub org: Field,
    pub id: Field,
    pub group: Field,
    pub message: Field,
    pub name: Field,
    pub url: Field,
    pub stack: Field,
    pub release: Field,
    pub service: Field,
    pub environment: Field,
    pub level: Field,
    /// The client's session id, for a session's errors (`sessions.rs`).
    pub session: Field,
    pub tag: Field,
    pub timestamp: Field,
    /// The millisecond the event's id was minted (`replace.rs`).
    pub id_ms: Field,
}

pub fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let text = TEXT;
    let keyword = STRING;
    // Tags are searched as `tag.KEY:value`: a JSON field whose values are tokenised text.
    let tag_options = JsonObjectOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("default")
            .set_index_option(tantivy::schema::IndexRecordOption::WithFreqsAndPositions),
    );
    let fields = Fields {
        kind: builder.add_text_field("kind", keyword.clone()),
        org: builder.add_text_field("org", keyword.clone()),
        id: builder.add_text_field("id", STORED),
        group: builder.add_text_field("group", keyword.clone() | STORED),
        message: builder.add_text_field("message", text.clone()),
        name: builder.add_text_field("name", text.clone()),
        url: builder.add_text_field("url", text.clone()),
        stack: builder.add_text_field("stack", text),
        release: builder.add_text_field("release", keyword.clone()),
        service: builder.add_text_field("service", keyword.clone()),
        environment: builder.add_text_field("environment", keyword.clone()),
        level: builder.add_text_field("level", keyword.clone()),
        session: builder.add_text_field("session", keyword),
        tag: builder.add_json_field("tag", tag_options),
        timestamp: builder.add_i64_field("timestamp", FAST),
        id_ms: builder.add_u64_field("id_ms", INDEXED),
    };
    (builder.build(), fields)
}

/// The document of one stored event (its `group_id` set).
pub fn event_document(fields: &Fields, org: &str, event: &ErrorEvent) -> TantivyDocument {
    let mut document = TantivyDocument::default();
    document.add_text(fields.kind, KIND_EVENT);
    document.add_text(fields.org, org);
    document.add_text(fields.id, event.id.as_str());
    document.add_u64(fields.id_ms, super::replace::id_ms(event.id.as_str()));
    if let Some(group) = &event.group_id {
        document.add_text(fields.group, group);
    }
    document.add_text(fields.message, &event.message);
    document.add_text(fields.url, &event.url);
    document.add_text(fields.level, &event.level);
    let optional = [
        (fields.name, &event.name),
        (fields.release, &event.release),
        (fields.service, &event.service),
        (fields.environment, &event.environment),
        (fields.session, &event.session_id),
    ];
    for (field, value) in optional {
        if let Some(value) = value {
            document.add_text(field, value);
        }
    }
    if !event.tags.is_empty() {
        let tags: std::collections::BTreeMap<String, tantivy::schema::OwnedValue> = event
            .tags
            .iter()
            .map(|(key, value)| {
                let text = match value {
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                (key.clone(), tantivy::schema::OwnedValue::Str(text))
            })
            .collect();
        document.add_object(fields.tag, tags);
    }
    document.add_i64(fields.timestamp, event.timestamp.0);
    document
}

/// The document of a group: the stack text of its first indexed event, once.
pub fn group_document(fields: &Fields, org: &str, group: &str, stack: &str) -> TantivyDocument {
    let mut document = TantivyDocument::default();
    document.add_text(fields.kind, KIND_GROUP);
    document.add_text(fields.org, org);
    document.add_text(fields.id, group);
    document.add_text(fields.group, group);
    document.add_text(fields.stack, stack);
    document
}
