//! The one typed configuration of the service, and the only code that reads the process
//! environment.
//!
//! Settings come from environment variables named exactly as in SPEC.md and CONTRACT.md, and from
//! an optional TOML file that may set the same keys in lower case. Invariants:
//! - the environment wins over the file, setting by setting; an empty variable counts as unset;
//! - a file value is first rendered as the string the environment would carry (arrays become comma
//!   lists), so both sources go through one parser and a setting means the same in either place;
//! - `SETTINGS` lists every setting with its default, and defaults are parsed from that table by
//!   the same parsers, so the table, the code and `docs/configuration.md` (checked by a test)
//!   cannot drift apart;
//! - an invalid value or an unknown file key stops loading with an error naming it; nothing
//!   silently falls back to a default;
//! - ingest keys never appear in `Debug` output or in error messages.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use ipnet::IpNet;
use url::Url;

/// Read when `--config` is not given, and only if the file exists.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/lookout/lookout.toml";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid value for {setting}: {message}")]
    Invalid {
        setting: &'static str,
        message: String,
    },
    #[error("config file {path}: {message}")]
    File { path: PathBuf, message: String },
}

impl ConfigError {
    /// The environment name of the offending setting; `None` when the file as a whole is at fault.
    pub fn setting(&self) -> Option<&'static str> {
        match self {
            Self::Invalid { setting, .. } => Some(setting),
            Self::File { .. } => None,
        }
    }
}

/// One row of the settings reference. `default` is the literal value used when the setting is
/// unset, except for `none` (the setting is optional) and COOKIE_SECURE (derived from BASE_URL).
#[derive(Debug, Clone, Copy)]
pub struct SettingDoc {
    pub name: &'static str,
    pub default: &'static str,
    pub description: &'static str,
}

const NONE: &str = "none";

const fn doc(name: &'static str, default: &'static str, description: &'static str) -> SettingDoc {
    SettingDoc {
        name,
        default,
        description,
    }
}

/// Every setting, in the order of `docs/configuration.md`; file keys are these names in lower case.
#[rustfmt::skip] // one row per setting, so the list reads as the table it is
pub const SETTINGS: &[SettingDoc] = &[
    doc("LOOKOUT_DATA_DIR", "./lookout-data", "directory holding the database"),
    doc("LOOKOUT_LISTEN", "127.0.0.1:8080", "address and port to listen on; port 0 picks one"),
    doc("BASE_URL", NONE, "public http(s) URL of the service; unset means http://<bound address>"),
    doc("TRUSTED_PROXIES", NONE, "comma list of CIDRs whose X-Forwarded-For is believed"),
    doc("LOG_FORMAT", "text", "log output format: text or json"),
    doc("LOG_LEVEL", "info", "log filter directive, e.g. info or lookout=debug,info"),
    doc("LOOKOUT_HEADER_READ_TIMEOUT_SECONDS", "10", "time to send request headers (1-300)"),
    doc("LOOKOUT_BODY_READ_TIMEOUT_SECONDS", "30", "time allowed to send a request body (1-3600)"),
    doc("LOOKOUT_MAX_CONNECTIONS", "1024", "concurrent connections accepted (1-1000000)"),
    doc("LOOKOUT_MAX_HEADER_COUNT", "100", "headers allowed per request (8-1000)"),
    doc("LOOKOUT_MAX_HEADER_BYTES", "16384", "bytes of all header names and values (1024-1048576)"),
    doc("LOOKOUT_MAX_URI_BYTES", "8192", "longest request target in bytes (256-1048576)"),
    doc("LOOKOUT_MAX_API_BODY_BYTES", "1048576", "largest /api request body in bytes (>= 1024)"),
    doc("JWT_TTL_HOURS", "24", "session token lifetime in hours (1-8760)"),
    doc("COOKIE_SECURE", "true if BASE_URL is https", "Secure attribute of the session cookie"),
    doc("COOKIE_DOMAIN", NONE, "Domain attribute of the session cookie, a host name"),
    doc("LOGIN_MAX_FAILURES", "5", "failed logins within the window that lock the account (>= 1)"),
    doc("LOGIN_FAILURE_WINDOW_MINUTES", "15", "window in which failures are counted (>= 1)"),
    doc("LOGIN_LOCKOUT_MINUTES", "15", "how long a locked account stays locked (>= 1)"),
    doc("API_RATE_PER_MIN", "600", "API requests per minute per client (>= 1)"),
    doc("AUDIT_RETENTION_DAYS", "365", "days audit log entries are kept (>= 1)"),
    doc("WEB_INGEST_KEY", NONE, "one ingest key: at least 16 characters of A-Z a-z 0-9 _ -"),
    doc("WEB_INGEST_KEYS", NONE, "comma list of further ingest keys, for rotation"),
    doc("WEB_INGEST_ORG_ID", NONE, "org_<ULID> receiving ingested data; unset = the first"),
    doc("WEB_INGEST_MAX_EVENTS", "100", "events per ingest request (1-10000)"),
    doc("WEB_INGEST_MAX_BODY_BYTES", "262144", "ingest body size in bytes (1024-67108864)"),
    doc("WEB_INGEST_RATE_PER_MIN", "240", "ingest requests per minute per IP address (>= 1)"),
    doc("WEB_INGEST_SCRUB_PII", "true", "strip likely personal data before storage"),
    doc("WEB_INGEST_SCRUB_IP", "true", "do not store client IP addresses"),
    doc("WEB_INGEST_ALLOWED_ORIGINS", "*", "* or comma list of origins that may send ingest data"),
    doc("WEB_INGEST_MAX_SOURCEMAP_BYTES", "16777216", "largest source map in bytes (>= 1024)"),
    doc("WEB_ERROR_ALERTS_ENABLED", "false", "master switch for browser error spike alerts"),
    doc("WEB_ERROR_ALERT_CHANNELS", NONE, "comma list of channel ids or names to notify"),
    doc("WEB_ERROR_SPIKE_THRESHOLD", "50", "events in the window that count as a spike (>= 1)"),
    doc("WEB_ERROR_SPIKE_WINDOW_SECONDS", "300", "length of the spike window (1 to 86400)"),
    doc("WEB_ERROR_ALERT_COOLDOWN_SECONDS", "900", "pause between successive spike alerts (>= 0)"),
    doc("RETENTION_DAYS", "30", "days telemetry is kept (>= 1)"),
    doc("SEARCH_INBOX_MAX_BYTES", "16777216", "events waiting for the search index, in bytes (0-1073741824)"),
    doc("ALERT_EVAL_INTERVAL_SECONDS", "10", "how often alert rules are evaluated (>= 1)"),
    doc("WEBHOOK_TIMEOUT_SECONDS", "10", "time a webhook receiver has to answer (1-300)"),
    doc("WEBHOOK_RETRY_DELAYS_SECONDS", "60,300,1800", "delays between delivery attempts (1-10)"),
    doc("WEBHOOK_ALLOW_PRIVATE", "false", "allow webhook URLs resolving to private addresses"),
    doc("LOOKOUT_CLOCK_OFFSET_SECONDS", "0", "seconds added to the server's clock, for tests (>= 0)"),
];

/// The validated configuration. Each field names the setting it comes from.
#[derive(Debug, Clone)]
pub struct Config {
    /// LOOKOUT_DATA_DIR.
    pub data_dir: PathBuf,
    /// LOOKOUT_LISTEN.
    pub listen: SocketAddr,
    /// BASE_URL: http or https, no query, fragment or credentials, no trailing slash in the path.
    pub base_url: Option<Url>,
    /// TRUSTED_PROXIES, with host bits cleared.
    pub trusted_proxies: Vec<IpNet>,
    /// LOG_FORMAT.
    pub log_format: LogFormat,
    /// LOG_LEVEL, known to be accepted by `tracing_subscriber::EnvFilter::try_new`.
    pub log_level: String,
    pub http: HttpSettings,
    pub auth: AuthSettings,
    pub ingest: IngestSettings,
    pub web_error_alerts: WebErrorAlertSettings,
    /// RETENTION_DAYS, at least 1.
    pub retention_days: u32,
    /// SEARCH_INBOX_MAX_BYTES, 0 to 1 GiB.
    pub search_inbox_bytes: usize,
    /// ALERT_EVAL_INTERVAL_SECONDS, at least one second.
    pub alert_eval_interval: Duration,
    pub webhooks: WebhookSettings,
    /// LOOKOUT_CLOCK_OFFSET_SECONDS: how far ahead of the system time the server's clock runs;
    /// zero in production, set by tests of time-driven behaviour (retention, expiry).
    pub clock_offset: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// Connection hygiene of our own HTTP server (settings of our own, not in SPEC.md).
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// LOOKOUT_HEADER_READ_TIMEOUT_SECONDS, 1 to 300 seconds.
    pub header_read_timeout: Duration,
    /// LOOKOUT_BODY_READ_TIMEOUT_SECONDS, 1 to 3600 seconds.
    pub body_read_timeout: Duration,
    /// LOOKOUT_MAX_CONNECTIONS, 1 to 1 000 000.
    pub max_connections: usize,
    /// LOOKOUT_MAX_HEADER_COUNT, 8 to 1000.
    pub max_header_count: usize,
    /// LOOKOUT_MAX_HEADER_BYTES: all header names and values of one request, 1 KiB to 1 MiB.
    pub max_header_bytes: usize,
    /// LOOKOUT_MAX_URI_BYTES, 256 bytes to 1 MiB.
    pub max_uri_bytes: usize,
    /// LOOKOUT_MAX_API_BODY_BYTES, at least 1 KiB.
    pub max_api_body_bytes: usize,
}

#[derive(Debug, Clone)]
pub struct AuthSettings {
    /// JWT_TTL_HOURS, 1 hour to 1 year.
    pub jwt_ttl: Duration,
    /// COOKIE_SECURE; when unset, true exactly when BASE_URL is https.
    pub cookie_secure: bool,
    /// COOKIE_DOMAIN, a lower-case host name, optionally with a leading dot.
    pub cookie_domain: Option<String>,
    /// LOGIN_MAX_FAILURES, at least 1.
    pub login_max_failures: u32,
    /// LOGIN_FAILURE_WINDOW_MINUTES, at least one minute.
    pub login_failure_window: Duration,
    /// LOGIN_LOCKOUT_MINUTES, at least one minute.
    pub login_lockout: Duration,
    /// API_RATE_PER_MIN, at least 1.
    pub api_rate_per_min: u32,
    /// AUDIT_RETENTION_DAYS, at least one day.
    pub audit_retention: Duration,
}

/// Holds secrets, hence the hand-written `Debug` below.
#[derive(Clone)]
pub struct IngestSettings {
    /// WEB_INGEST_KEY, then WEB_INGEST_KEYS: trimmed, deduplicated, each at least 16 characters of
    /// `A-Z a-z 0-9 _ -`. Empty means ingest is not configured.
    pub keys: Vec<String>,
    /// WEB_INGEST_ORG_ID, `org_` plus an upper-case ULID; `None` means the first organisation.
    pub org_id: Option<String>,
    /// WEB_INGEST_MAX_EVENTS, 1 to 10 000.
    pub max_events: usize,
    /// WEB_INGEST_MAX_BODY_BYTES, 1 KiB to 64 MiB.
    pub max_body_bytes: usize,
    /// WEB_INGEST_RATE_PER_MIN, at least 1.
    pub rate_per_min: u32,
    /// WEB_INGEST_SCRUB_PII.
    pub scrub_pii: bool,
    /// WEB_INGEST_SCRUB_IP.
    pub scrub_ip: bool,
    /// WEB_INGEST_ALLOWED_ORIGINS.
    pub allowed_origins: AllowedOrigins,
    /// WEB_INGEST_MAX_SOURCEMAP_BYTES, at least 1 KiB.
    pub max_sourcemap_bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedOrigins {
    Any,
    /// Serialised origins such as `https://app.example.com`; never empty.
    List(Vec<String>),
}

#[derive(Debug, Clone)]
pub struct WebErrorAlertSettings {
    /// WEB_ERROR_ALERTS_ENABLED.
    pub enabled: bool,
    /// WEB_ERROR_ALERT_CHANNELS: channel ids or names, as written.
    pub channels: Vec<String>,
    /// WEB_ERROR_SPIKE_THRESHOLD, at least 1.
    pub spike_threshold: u32,
    /// WEB_ERROR_SPIKE_WINDOW_SECONDS, at least one second.
    pub spike_window: Duration,
    /// WEB_ERROR_ALERT_COOLDOWN_SECONDS; zero means no pause.
    pub cooldown: Duration,
}

#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// WEBHOOK_TIMEOUT_SECONDS, 1 to 300 seconds.
    pub timeout: Duration,
    /// WEBHOOK_RETRY_DELAYS_SECONDS: one to ten delays, each at least one second.
    pub retry_delays: Vec<Duration>,
    /// WEBHOOK_ALLOW_PRIVATE.
    pub allow_private: bool,
}

impl fmt::Debug for IngestSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Destructuring makes a new field a compile error here until someone decides its display.
        let Self {
            keys,
            org_id,
            max_events,
            max_body_bytes,
            rate_per_min,
            scrub_pii,
            scrub_ip,
            allowed_origins,
            max_sourcemap_bytes,
        } = self;
        f.debug_struct("IngestSettings")
            .field("keys", &format_args!("[{} redacted]", keys.len()))
            .field("org_id", org_id)
            .field("max_events", max_events)
            .field("max_body_bytes", max_body_bytes)
            .field("rate_per_min", rate_per_min)
            .field("scrub_pii", scrub_pii)
            .field("scrub_ip", scrub_ip)
            .field("allowed_origins", allowed_origins)
            .field("max_sourcemap_bytes", max_sourcemap_bytes)
            .finish()
    }
}

impl AllowedOrigins {
    /// Whether a browser `Origin` value may send ingest data: exact match, ignoring ASCII case.
    pub fn allows(&self, origin: &str) -> bool {
        match self {
            Self::Any => true,
            Self::List(origins) => origins.iter().any(|item| item.eq_ignore_ascii_case(origin)),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        // Only the built-in defaults are parsed here, never input; a test proves they are valid.
        Self::from_sources(None, &HashMap::new()).expect("the documented defaults are valid")
    }
}

impl Config {
    /// explicit: Some(path) from `--config` (missing file = error); None = DEFAULT_CONFIG_PATH if
    /// it exists.
    pub fn load(explicit: Option<&Path>) -> Result<Config, ConfigError> {
        let file = read_config_file(explicit)?;
        let env = read_process_environment()?;
        let toml_text = file
            .as_ref()
            .map(|(path, text)| (path.as_path(), text.as_str()));
        Self::from_sources(toml_text, &env)
    }

    /// Pure: parse from TOML text (if any) and an environment map. Used by load() and unit tests.
    pub fn from_sources(
        toml_text: Option<(&Path, &str)>,
        env: &HashMap<String, String>,
    ) -> Result<Config, ConfigError> {
        let mut raw = match toml_text {
            Some((path, text)) => RawSettings::from_toml(path, text)?,
            None => RawSettings::default(),
        };
        raw.overlay_environment(env);
        // The https-ness of BASE_URL decides the COOKIE_SECURE default, so it is parsed first.
        let base_url = raw.optional("BASE_URL", base_url)?;
        let https = base_url.as_ref().is_some_and(|url| url.scheme() == "https");
        Ok(Config {
            data_dir: raw.setting("LOOKOUT_DATA_DIR", data_dir)?,
            listen: raw.setting("LOOKOUT_LISTEN", listen_address)?,
            base_url,
            trusted_proxies: raw.list("TRUSTED_PROXIES", ip_net)?,
            log_format: raw.setting("LOG_FORMAT", log_format)?,
            log_level: raw.setting("LOG_LEVEL", log_filter)?,
            http: HttpSettings::read(&raw)?,
            auth: AuthSettings::read(&raw, https)?,
            ingest: IngestSettings::read(&raw)?,
            web_error_alerts: WebErrorAlertSettings::read(&raw)?,
            retention_days: raw.setting("RETENTION_DAYS", at_least(1))?,
            search_inbox_bytes: raw.setting("SEARCH_INBOX_MAX_BYTES", between(0, 1 << 30))?,
            alert_eval_interval: raw.seconds("ALERT_EVAL_INTERVAL_SECONDS", at_least(1))?,
            webhooks: WebhookSettings::read(&raw)?,
            clock_offset: raw.seconds("LOOKOUT_CLOCK_OFFSET_SECONDS", at_least(0))?,
        })
    }

    /// The public base URL: BASE_URL if set, else http://<bound addr> with an unspecified IP
    /// (0.0.0.0 / ::) replaced by 127.0.0.1. No trailing slash, except that `Url` always shows an
    /// empty path as `/`: append paths to `as_str().trim_end_matches('/')`.
    pub fn effective_base_url(&self, bound: SocketAddr) -> Url {
        if let Some(url) = &self.base_url {
            return url.clone();
        }
        let ip = match bound.ip() {
            ip if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            ip => ip,
        };
        // Format the IP alone: SocketAddr's Display may add an IPv6 scope id, which URLs lack.
        let authority = match ip {
            IpAddr::V4(v4) => format!("{v4}:{}", bound.port()),
            IpAddr::V6(v6) => format!("[{v6}]:{}", bound.port()),
        };
        let url = Url::parse(&format!("http://{authority}"));
        url.expect("an IP address and a port form a valid URL")
    }
}

impl HttpSettings {
    fn read(raw: &RawSettings) -> Result<Self, ConfigError> {
        Ok(Self {
            header_read_timeout: raw
                .seconds("LOOKOUT_HEADER_READ_TIMEOUT_SECONDS", between(1, 300))?,
            body_read_timeout: raw
                .seconds("LOOKOUT_BODY_READ_TIMEOUT_SECONDS", between(1, 3600))?,
            max_connections: raw.setting("LOOKOUT_MAX_CONNECTIONS", between(1, 1_000_000))?,
            max_header_count: raw.setting("LOOKOUT_MAX_HEADER_COUNT", between(8, 1000))?,
            max_header_bytes: raw.setting("LOOKOUT_MAX_HEADER_BYTES", between(1024, 1 << 20))?,
            max_uri_bytes: raw.setting("LOOKOUT_MAX_URI_BYTES", between(256, 1 << 20))?,
            max_api_body_bytes: raw.setting("LOOKOUT_MAX_API_BODY_BYTES", at_least(1024))?,
        })
    }
}

impl AuthSettings {
    fn read(raw: &RawSettings, https: bool) -> Result<Self, ConfigError> {
        Ok(Self {
            jwt_ttl: raw.duration("JWT_TTL_HOURS", HOUR, between(1, 8760))?,
            // Secure by default exactly when the public URL is https, so plain-http setups work.
            cookie_secure: raw.optional("COOKIE_SECURE", boolean)?.unwrap_or(https),
            cookie_domain: raw.optional("COOKIE_DOMAIN", cookie_domain)?,
            login_max_failures: raw.setting("LOGIN_MAX_FAILURES", at_least(1))?,
            login_failure_window: raw.minutes("LOGIN_FAILURE_WINDOW_MINUTES", at_least(1))?,
            login_lockout: raw.minutes("LOGIN_LOCKOUT_MINUTES", at_least(1))?,
            api_rate_per_min: raw.setting("API_RATE_PER_MIN", at_least(1))?,
            audit_retention: raw.duration("AUDIT_RETENTION_DAYS", DAY, at_least(1))?,
        })
    }
}

impl IngestSettings {
    fn read(raw: &RawSettings) -> Result<Self, ConfigError> {
        Ok(Self {
            keys: ingest_keys(raw)?,
            org_id: raw.optional("WEB_INGEST_ORG_ID", organisation_id)?,
            max_events: raw.setting("WEB_INGEST_MAX_EVENTS", between(1, 10_000))?,
            max_body_bytes: raw.setting("WEB_INGEST_MAX_BODY_BYTES", between(1024, 64 << 20))?,
            rate_per_min: raw.setting("WEB_INGEST_RATE_PER_MIN", at_least(1))?,
            scrub_pii: raw.setting("WEB_INGEST_SCRUB_PII", boolean)?,
            scrub_ip: raw.setting("WEB_INGEST_SCRUB_IP", boolean)?,
            allowed_origins: raw.setting("WEB_INGEST_ALLOWED_ORIGINS", allowed_origins)?,
            max_sourcemap_bytes: raw.setting("WEB_INGEST_MAX_SOURCEMAP_BYTES", at_least(1024))?,
        })
    }
}

impl WebErrorAlertSettings {
    fn read(raw: &RawSettings) -> Result<Self, ConfigError> {
        Ok(Self {
            enabled: raw.setting("WEB_ERROR_ALERTS_ENABLED", boolean)?,
            channels: raw.list("WEB_ERROR_ALERT_CHANNELS", channel)?,
            spike_threshold: raw.setting("WEB_ERROR_SPIKE_THRESHOLD", at_least(1))?,
            spike_window: raw.seconds("WEB_ERROR_SPIKE_WINDOW_SECONDS", between(1, 86_400))?,
            cooldown: raw.seconds("WEB_ERROR_ALERT_COOLDOWN_SECONDS", at_least(0))?,
        })
    }
}

impl WebhookSettings {
    fn read(raw: &RawSettings) -> Result<Self, ConfigError> {
        Ok(Self {
            timeout: raw.seconds("WEBHOOK_TIMEOUT_SECONDS", between(1, 300))?,
            retry_delays: raw.setting("WEBHOOK_RETRY_DELAYS_SECONDS", retry_delays)?,
            allow_private: raw.setting("WEBHOOK_ALLOW_PRIVATE", boolean)?,
        })
    }
}

/// The environment variable `lookout agent` takes its enrolment token from.
pub const AGENT_TOKEN_VARIABLE: &str = "LOOKOUT_AGENT_TOKEN";

/// `LOOKOUT_AGENT_TOKEN`, for `lookout agent`, which reads no server configuration: the one
/// agent setting that comes from the environment (it keeps the token off the command line).
pub fn agent_token_from_environment() -> Option<String> {
    std::env::var(AGENT_TOKEN_VARIABLE).ok()
}

mod sources;
use sources::*;
mod values;
use values::*;

#[cfg(test)]
mod tests;
