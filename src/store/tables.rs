//! Every redb table of the service, in one place, named `key_value`.
//!
//! Invariants: a table listed here is created by a migration before any code reads it; its
//! name never changes once released (renaming is a migration). Composite keys join their parts
//! with `/`, which never occurs in an id, so a prefix scan over `"{first}/"` lists one owner's rows.
//! Every table also appears in `ALL` with its value kind: backups copy exactly the tables of
//! `ALL`, and a unit test compares `ALL` with a freshly migrated database, so a table added by a
//! migration but missing here fails `cargo test` instead of being left out of backups.

use redb::TableDefinition;

/// Schema version, setup token hash and other single values. Raw bytes, no codec.
pub const META: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("meta");

// Record tables: string key -> codec-encoded record. Capabilities give them their record type
// (`RecordTable::<Org>::new(tables::ORGS)`); the store itself never decodes them.

/// Organisations by id.
pub const ORGS: &str = "orgid_org";
/// Lower-cased organisation name -> org id (names are unique, case-insensitively).
pub const ORG_NAMES: &str = "orgname_orgid";
/// Users by id.
pub const USERS: &str = "userid_user";
/// Normalised e-mail -> user id.
pub const USER_EMAILS: &str = "email_userid";
/// `{org_id}/{user_id}` -> membership (role in that org).
pub const MEMBERSHIPS: &str = "orgid_userid_membership";
/// `{user_id}/{org_id}` -> org id: the reverse of MEMBERSHIPS (schema 2).
pub const USER_ORGS: &str = "userid_orgid";

// Identity and access (schema 3).

/// API keys by id.
pub const API_KEYS: &str = "keyid_apikey";
/// Hex SHA-256 of an API key's secret -> key id.
pub const API_KEY_DIGESTS: &str = "keydigest_keyid";
/// `{org_id}/{key_id}` -> key id: the keys of an organisation.
pub const ORG_API_KEYS: &str = "orgid_keyid";
/// Normalised e-mail -> failed sign-ins and lock (whether or not the user exists).
pub const LOGIN_STATES: &str = "email_loginstate";
/// User id -> the instant before which every session of the user is void.
pub const SESSION_CUTOFFS: &str = "userid_sessioncutoff";
/// Session `jti` -> revoked session (until the token's own expiry).
pub const REVOKED_SESSIONS: &str = "jti_revokedsession";
/// User id -> TOTP enrolment and recovery-code digests.
pub const TWO_FACTOR: &str = "userid_twofactor";
/// `{org_id or -}/{audit_id}` -> security event.
pub const AUDIT_EVENTS: &str = "orgid_auditid_event";
/// Hex SHA-256 of an invitation token -> invitation.
pub const INVITATIONS: &str = "invitedigest_invitation";
/// `{org_id}/{service name}` -> service seen by ingest or deployments.
pub const SERVICES: &str = "orgid_service_service";

/// What a table's values are (keys are always text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// `&str -> &[u8]`: codec-encoded records, and `meta`'s raw values.
    Bytes,
    /// `&str -> &str`: indexes and membership sets.
    Text,
}

/// One table of `ALL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableSpec {
    pub name: &'static str,
    pub value: ValueKind,
}

const fn bytes(name: &'static str) -> TableSpec {
    TableSpec {
        name,
        value: ValueKind::Bytes,
    }
}

const fn text(name: &'static str) -> TableSpec {
    TableSpec {
        name,
        value: ValueKind::Text,
    }
}

/// Every table of the current schema with its value kind. Backups copy these and refuse a
/// database holding any other table, so add each new table here in the change that creates it.
pub const ALL: &[TableSpec] = &[
    bytes("meta"),
    bytes(ORGS),
    text(ORG_NAMES),
    bytes(USERS),
    text(USER_EMAILS),
    bytes(MEMBERSHIPS),
    text(USER_ORGS),
    bytes(API_KEYS),
    text(API_KEY_DIGESTS),
    text(ORG_API_KEYS),
    bytes(LOGIN_STATES),
    bytes(SESSION_CUTOFFS),
    bytes(REVOKED_SESSIONS),
    bytes(TWO_FACTOR),
    bytes(AUDIT_EVENTS),
    bytes(INVITATIONS),
    bytes(SERVICES),
    bytes(FLAGS),
    bytes(EXPERIMENTS),
    text(EXPOSURE_VISITORS),
    bytes(EXPOSURE_COUNTS),
    bytes(EVENTS),
    text(EVENT_CLIENT_IDS),
    text(SESSION_EVENTS),
    bytes(WEB_SESSIONS),
    text(SESSION_STARTS),
    bytes(SPANS),
    bytes(SOURCEMAPS),
    bytes(SOURCEMAP_BLOBS),
    text(TELEMETRY_AGES),
    bytes(RECORD_DICTIONARIES),
    bytes(SEGMENT_STATE),
    bytes(CHANNELS),
    text(ORG_CHANNELS),
    bytes(DELIVERIES),
    text(CHANNEL_DELIVERIES),
    text(DUE_DELIVERIES),
    text(DEAD_DELIVERIES),
    bytes(ENROLMENT_TOKENS),
    text(ENROLMENT_TOKEN_DIGESTS),
    bytes(AGENTS),
    text(AGENT_IDENTITIES),
    bytes(SHELL_TICKETS),
    bytes(ERROR_GROUPS),
    text(GROUP_FINGERPRINTS),
    text(GROUP_LAST_SEEN),
    text(GROUP_USERS),
    text(GROUP_EVENTS),
    text(GROUP_EVENTS_UNFOLDED),
    text(GROUP_EVENT_RUNS),
    text(GROUP_EVENTS_GONE),
    bytes(INBOUND_TOKENS),
    text(INBOUND_TOKEN_DIGESTS),
    bytes(DEPLOYMENTS),
    text(DEPLOYMENT_EXTERNAL_IDS),
    text(DEPLOYMENT_TIMES),
    bytes(BUILDS),
    text(BUILD_NUMBERS),
    bytes(INCIDENTS),
    bytes(ALERTS),
    text(LIVE_ALERTS),
    bytes(SHELL_SESSIONS),
    bytes(ROLLUPS),
    bytes(ALERT_RULES),
    bytes(RULE_STATES),
    bytes(SPIKE_STATES),
    text(SESSION_SPANS),
    bytes(AGENT_METRICS),
    bytes(SCIM_TOKENS),
    text(SCIM_TOKEN_DIGESTS),
    bytes(SCIM_USERS),
    bytes(SSO_CONFIGS),
    text(SSO_DOMAINS),
    bytes(SSO_LINKS),
    text(SSO_USED_NONCES),
];

/// The entry of `ALL` named `name`.
pub fn spec(name: &str) -> Option<TableSpec> {
    ALL.iter().copied().find(|table| table.name == name)
}

// Flags and experiments (schema 4).

/// `{org_id}/{flag name}` -> feature flag.
pub const FLAGS: &str = "orgid_flagname_flag";
/// `{org_id}/{experiment key}` -> experiment.
pub const EXPERIMENTS: &str = "orgid_expkey_experiment";
/// `{org_id}/{experiment}/{day}/{variant}/{visitor digest}` -> "": who was counted already.
pub const EXPOSURE_VISITORS: &str = "orgid_exp_day_variant_visitor";
/// `{org_id}/{experiment}/{day}/{variant}` -> unique visitors that day.
pub const EXPOSURE_COUNTS: &str = "orgid_exp_day_variant_count";

// Browser ingest (schema 5).

/// `{org_id}/{event_id}` -> browser error or warning; `evt_` ULIDs, so key order is arrival order.
pub const EVENTS: &str = "orgid_eventid_event";
/// `{org_id}/{client event_id}` -> event id: an item sent again is acknowledged, stored once.
pub const EVENT_CLIENT_IDS: &str = "orgid_clienteventid_eventid";
/// `{org_id}/{session id}/{event_id}` -> "": the errors of a browser session.
pub const SESSION_EVENTS: &str = "orgid_sessionid_eventid";
/// `{org_id}/{session id}` -> browser session (the client's id).
pub const WEB_SESSIONS: &str = "orgid_sessionid_session";
/// `{org_id}/{started_at ms, 20 digits}/{session id}` -> "": sessions in start order.
pub const SESSION_STARTS: &str = "orgid_startedat_sessionid";
/// `{org_id}/{trace_id}/{span_id}` -> span.
pub const SPANS: &str = "orgid_traceid_spanid_span";
/// `{org_id}/{release}/{file}` -> source map metadata (`/` and `%` in the release escaped).
pub const SOURCEMAPS: &str = "orgid_release_file_sourcemap";
/// Source map id -> the map, zstd-compressed raw bytes (no codec: it is not a record).
pub const SOURCEMAP_BLOBS: &str = "sourcemapid_blob";
/// `{age ms, 20 digits}/{kind}/{record key}` -> "": telemetry oldest first, for retention.
pub const TELEMETRY_AGES: &str = "agems_kind_key";
/// `{org_id}/{dictionary id, 16 hex digits}` -> a zstd dictionary trained on the org's error
/// events, with when (raw bytes, no codec: `store/dictionaries.rs`; schema 18).
pub const RECORD_DICTIONARIES: &str = "orgid_dictid_dictionary";
/// Event segment number (8 digits) -> its live records and committed length (raw bytes, no
/// codec: `store/segments.rs`; schema 20). Not in backups: a backup holds its records whole.
pub const SEGMENT_STATE: &str = "segment_state";

// Notification channels and the delivery queue (schema 6).

/// Channels by id.
pub const CHANNELS: &str = "channelid_channel";
/// `{org_id}/{channel_id}` -> channel id: the channels of an organisation.
pub const ORG_CHANNELS: &str = "orgid_channelid";
/// Deliveries by id (payload, state, every attempt).
pub const DELIVERIES: &str = "deliveryid_delivery";
/// `{channel_id}/{delivery_id}` -> delivery id: a channel's delivery log, oldest first.
pub const CHANNEL_DELIVERIES: &str = "channelid_deliveryid";
/// `{due at ms, 20 digits}/{delivery_id}` -> delivery id: the queue, soonest first.
pub const DUE_DELIVERIES: &str = "dueat_deliveryid";
/// `{channel_id}/{delivery_id}` -> delivery id: the dead-letter queue of each channel.
pub const DEAD_DELIVERIES: &str = "channelid_deliveryid_dead";

// Agents and the terminal (schema 7).

/// `{org_id}/{token_id}` -> agent enrolment token (its secret only as a digest).
pub const ENROLMENT_TOKENS: &str = "orgid_tokenid_enrolmenttoken";
/// Hex SHA-256 of an enrolment token -> `{org_id}/{token_id}`.
pub const ENROLMENT_TOKEN_DIGESTS: &str = "tokendigest_orgid_tokenid";
/// `{org_id}/{agent_id}` -> agent record (host facts, last seen, latest metrics).
pub const AGENTS: &str = "orgid_agentid_agent";
/// `{token_id}/{hostname}` -> agent id: the agent a token's host reconnects as.
pub const AGENT_IDENTITIES: &str = "tokenid_hostname_agentid";
/// Hex SHA-256 of a shell ticket -> ticket (user, org, agent, expiry); removed when used.
pub const SHELL_TICKETS: &str = "ticketdigest_ticket";

// Error groups (schema 8).

/// `{org_id}/{group_id}` -> error group (counts, releases, hourly histogram, status).
pub const ERROR_GROUPS: &str = "orgid_groupid_group";
/// `{org_id}/{fingerprint}` -> group id: one group per fingerprint.
pub const GROUP_FINGERPRINTS: &str = "orgid_fingerprint_groupid";
/// `{org_id}/{last_seen ms, 20 digits}/{group_id}` -> group id: groups by latest event.
pub const GROUP_LAST_SEEN: &str = "orgid_lastseen_groupid";
/// `{org_id}/{group_id}/{SHA-256 of the user id, 32 hex}` -> "": the users of a group.
pub const GROUP_USERS: &str = "orgid_groupid_userdigest";
/// `{org_id}/{group_id}/{event_id}` -> "": the stored events of a group (folded).
pub const GROUP_EVENTS: &str = "orgid_groupid_eventid";
/// `{org_id}/{event_id}` -> group id: the stored events of each group not yet folded into
/// `GROUP_EVENTS` (`errors/group_events.rs`).
pub const GROUP_EVENTS_UNFOLDED: &str = "orgid_eventid_groupid";
/// `{org_id}/{group_id}/{first event id}` -> up to 100 event ids of the group, ascending,
/// separated by spaces: the group's events, many to a row (`errors/group_runs.rs`; schema 19).
pub const GROUP_EVENT_RUNS: &str = "orgid_groupid_firsteventid_eventids";
/// `{org_id}/{event_id}` -> group id: deleted events whose ids their group's runs still hold,
/// taken out of the runs many at once (`errors/group_events.rs`; schema 21).
pub const GROUP_EVENTS_GONE: &str = "orgid_eventid_groupid_gone";

// Inbound events, deployments, builds and incidents (alerting).

/// `{org_id}/{token_id}` -> inbound token (its secret only as a digest).
pub const INBOUND_TOKENS: &str = "orgid_tokenid_inboundtoken";
/// Hex SHA-256 of an inbound token -> `{org_id}/{token_id}`.
pub const INBOUND_TOKEN_DIGESTS: &str = "inbounddigest_orgid_tokenid";
/// `{org_id}/{deployment_id}` -> deployment.
pub const DEPLOYMENTS: &str = "orgid_deploymentid_deployment";
/// `{org_id}/{external id, escaped}` -> deployment id: the CI system's id upserts one deployment.
pub const DEPLOYMENT_EXTERNAL_IDS: &str = "orgid_externalid_deploymentid";
/// `{org_id}/{service}/{environment}/{started_at ms, 20 digits}/{deployment_id}` -> deployment
/// id: deployments by service, environment and time (parts escaped).
pub const DEPLOYMENT_TIMES: &str = "orgid_service_env_startedat_deploymentid";
/// `{org_id}/{build_id}` -> Jenkins build.
pub const BUILDS: &str = "orgid_buildid_build";
/// `{org_id}/{job, escaped}/{number, 20 digits}` -> build id: one build per job and number.
pub const BUILD_NUMBERS: &str = "orgid_job_number_buildid";
/// `{org_id}/{incident_id}` -> incident with its timeline.
pub const INCIDENTS: &str = "orgid_incidentid_incident";
/// `{org_id}/{alert_id}` -> alert with its history.
pub const ALERTS: &str = "orgid_alertid_alert";
/// `{org_id}/{dedup key, escaped}` -> id of the firing alert with that key (removed on resolve).
pub const LIVE_ALERTS: &str = "orgid_dedupkey_alertid";

// Terminal session records (schema 11).

/// `{org_id}/{agent_id}/{shell_session_id}` -> one terminal session (user, times, bytes, reason).
pub const SHELL_SESSIONS: &str = "orgid_agentid_sessionid_shellsession";

// Alert rules and their counters (schema 12).

/// `{org_id}/{metric}/{service}/{environment}/{s|m}{bucket}` -> counts (and a span-duration
/// histogram) of one second or minute; empty service or environment parts are "any".
pub const ROLLUPS: &str = "orgid_metric_service_env_bucket_rollup";
/// `{org_id}/{rule_id}` -> alert rule.
pub const ALERT_RULES: &str = "orgid_ruleid_alertrule";
/// `{org_id}/{rule_id}` -> the rule's evaluation state (inactive, pending or firing, since when).
pub const RULE_STATES: &str = "orgid_ruleid_rulestate";
/// `{org_id}` -> the organisation's browser-error spike state (live alert, last firing).
pub const SPIKE_STATES: &str = "orgid_spikestate";

// Spans of browser sessions (schema 13).

/// `{org_id}/{session id}/{trace_id}/{span_id}` -> the span's start (ms, 20 digits): the spans
/// that carry a `session_id`, for a session's traces.
pub const SESSION_SPANS: &str = "orgid_sessionid_traceid_spanid";

// Host metric history of agents (schema 14).

/// `{org_id}/{agent_id}/{minute, ms since epoch, 20 digits}` -> the last heartbeat's figures of
/// that minute; kept 24 hours.
pub const AGENT_METRICS: &str = "orgid_agentid_minute_metrics";

// SCIM provisioning (schema 15).

/// `{org_id}/{token_id}` -> SCIM token (without its secret).
pub const SCIM_TOKENS: &str = "orgid_tokenid_scimtoken";
/// SHA-256 of a SCIM token's secret (hex) -> `{org_id}/{token_id}`.
pub const SCIM_TOKEN_DIGESTS: &str = "scimdigest_orgid_tokenid";
/// `{org_id}/{user_id}` -> what the identity provider said about a member it provisioned.
pub const SCIM_USERS: &str = "orgid_userid_scimuser";

// Single sign-on (schema 16).

/// `{org_id}` -> the organisation's SSO configuration (client secret sealed).
pub const SSO_CONFIGS: &str = "orgid_ssoconfig";
/// A claimed e-mail domain (lowercase) -> the `org_id` that signs its addresses in.
pub const SSO_DOMAINS: &str = "domain_orgid";
/// `{sha256(issuer) hex}/{subject}` -> the account an identity at a provider is linked to.
pub const SSO_LINKS: &str = "issuer_subject_ssolink";
/// SHA-256 (hex) of a used ID-token nonce -> when its token expires (ms since epoch).
pub const SSO_USED_NONCES: &str = "noncedigest_expiresat";

/// Joins the parts of a composite key.
pub fn composite_key(first: &str, second: &str) -> String {
    format!("{first}/{second}")
}

/// The key prefix that selects every row of one owner in a composite-key table.
pub fn owner_prefix(first: &str) -> String {
    format!("{first}/")
}

/// Splits a composite key into its two parts.
pub fn split_composite_key(key: &str) -> Option<(&str, &str)> {
    key.split_once('/')
}

/// A time as a fixed-width key part, so key order is time order (negative times sort first).
pub fn time_key(at: crate::clock::Timestamp) -> String {
    format!("{:020}", at.unix_millis().max(0))
}

/// A key part that may itself contain `/`: `%` and `/` are escaped.
pub fn escape_key_part(text: &str) -> String {
    text.replace('%', "%25").replace('/', "%2F")
}

#[cfg(test)]
mod tests {
    use redb::{ReadableDatabase, TableHandle};

    use super::*;

    /// A table created by a migration but missing from `ALL` would be silently left out of
    /// every backup; this test makes that a build failure instead.
    #[test]
    fn all_lists_exactly_the_tables_of_a_migrated_database() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let txn = database.begin_read().unwrap();
        let mut found: Vec<String> = txn
            .list_tables()
            .unwrap()
            .map(|table| table.name().to_string())
            .collect();
        found.sort();
        let mut listed: Vec<&str> = ALL.iter().map(|table| table.name).collect();
        listed.sort();
        assert_eq!(found, listed, "tables::ALL and the migrated schema differ");
        assert_eq!(txn.list_multimap_tables().unwrap().count(), 0);
        // Each table opens with the value kind `ALL` gives it (redb checks the stored types).
        for table in ALL {
            let opened = match table.value {
                ValueKind::Bytes => txn
                    .open_table(TableDefinition::<&str, &[u8]>::new(table.name))
                    .map(|_| ()),
                ValueKind::Text => txn
                    .open_table(TableDefinition::<&str, &str>::new(table.name))
                    .map(|_| ()),
            };
            assert!(opened.is_ok(), "{}: {opened:?}", table.name);
        }
    }

    #[test]
    fn names_in_all_are_unique_and_findable() {
        for (index, table) in ALL.iter().enumerate() {
            assert_eq!(spec(table.name), Some(*table));
            assert!(
                ALL[index + 1..]
                    .iter()
                    .all(|other| other.name != table.name)
            );
        }
        assert_eq!(spec("no_such_table"), None);
    }

    #[test]
    fn key_parts_escape_and_sort_by_time() {
        use crate::clock::Timestamp;
        assert_eq!(escape_key_part("a/b%c"), "a%2Fb%25c");
        assert_eq!(time_key(Timestamp(-5)), "00000000000000000000");
        assert!(time_key(Timestamp(10)) < time_key(Timestamp(9_000)));
    }
}
