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
    doc("WEB_ERROR_SPIKE_WINDOW_SECONDS", "300", "length of the spike window (>= 1)"),
    doc("WEB_ERROR_ALERT_COOLDOWN_SECONDS", "900", "pause between successive spike alerts (>= 0)"),
    doc("RETENTION_DAYS", "30", "days telemetry is kept (>= 1)"),
    doc("ALERT_EVAL_INTERVAL_SECONDS", "10", "how often alert rules are evaluated (>= 1)"),
    doc("WEBHOOK_TIMEOUT_SECONDS", "10", "time a webhook receiver has to answer (1-300)"),
    doc("WEBHOOK_RETRY_DELAYS_SECONDS", "60,300,1800", "delays between delivery attempts (1-10)"),
    doc("WEBHOOK_ALLOW_PRIVATE", "false", "allow webhook URLs resolving to private addresses"),
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
    /// ALERT_EVAL_INTERVAL_SECONDS, at least one second.
    pub alert_eval_interval: Duration,
    pub webhooks: WebhookSettings,
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
            alert_eval_interval: raw.seconds("ALERT_EVAL_INTERVAL_SECONDS", at_least(1))?,
            webhooks: WebhookSettings::read(&raw)?,
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
            spike_window: raw.seconds("WEB_ERROR_SPIKE_WINDOW_SECONDS", at_least(1))?,
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

/// The merged, still untyped values: the file first, then the environment on top, trimmed.
#[derive(Default)]
struct RawSettings {
    values: HashMap<&'static str, String>,
}

const SECOND: Duration = Duration::from_secs(1);
const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);

impl RawSettings {
    fn from_toml(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let file_error = |message| ConfigError::File {
            path: path.to_path_buf(),
            message,
        };
        let table: toml::Table = text
            .parse()
            .map_err(|error| file_error(toml_error(text, &error)))?;
        let mut values = HashMap::new();
        for (key, value) in &table {
            let known = SETTINGS
                .iter()
                .find(|setting| setting.name.eq_ignore_ascii_case(key));
            let Some(setting) = known else {
                return Err(file_error(format!("unknown key {key:?}")));
            };
            // Keys are documented in lower case; other spellings would be two ways to write one.
            if key.bytes().any(|byte| byte.is_ascii_uppercase()) {
                let lower = key.to_ascii_lowercase();
                let message = format!("unknown key {key:?} (keys are lower case: {lower:?})");
                return Err(file_error(message));
            }
            let rendered =
                toml_value_text(value).map_err(|reason| invalid(setting.name, reason))?;
            values.insert(setting.name, rendered.trim().to_owned());
        }
        Ok(Self { values })
    }

    /// Only names in SETTINGS are looked up, so no other variable can influence the service.
    fn overlay_environment(&mut self, env: &HashMap<String, String>) {
        for setting in SETTINGS {
            let Some(value) = env.get(setting.name).map(|value| value.trim()) else {
                continue;
            };
            // `FOO=` in a unit file or shell means "not set", not "set to nothing".
            if !value.is_empty() {
                self.values.insert(setting.name, value.to_owned());
            }
        }
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// A setting with a default: its value, else the default from SETTINGS, through one parser.
    fn setting<T>(&self, name: &'static str, parse: impl Parse<T>) -> Result<T, ConfigError> {
        let value = match self.get(name) {
            Some(value) => value,
            None => documented_default(name)?,
        };
        parse(value).map_err(|reason| invalid(name, format!("{value:?} {reason}")))
    }

    /// A setting without a default: `None` when neither source sets it.
    fn optional<T>(
        &self,
        name: &'static str,
        parse: impl Parse<T>,
    ) -> Result<Option<T>, ConfigError> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        let parsed = parse(value).map_err(|reason| invalid(name, format!("{value:?} {reason}")))?;
        Ok(Some(parsed))
    }

    /// A comma list without a default: empty when unset.
    fn list<T>(&self, name: &'static str, entry: impl Parse<T>) -> Result<Vec<T>, ConfigError> {
        Ok(self.optional(name, list(entry))?.unwrap_or_default())
    }

    /// A whole number of `unit`s; u32 keeps even a year of hours far from Duration's limits.
    fn duration(
        &self,
        name: &'static str,
        unit: Duration,
        parse: impl Parse<u32>,
    ) -> Result<Duration, ConfigError> {
        Ok(unit * self.setting(name, parse)?)
    }

    fn seconds(&self, name: &'static str, parse: impl Parse<u32>) -> Result<Duration, ConfigError> {
        self.duration(name, SECOND, parse)
    }

    fn minutes(&self, name: &'static str, parse: impl Parse<u32>) -> Result<Duration, ConfigError> {
        self.duration(name, MINUTE, parse)
    }
}

fn invalid(setting: &'static str, message: String) -> ConfigError {
    ConfigError::Invalid { setting, message }
}

/// Reaching the error arm means the code asks for a default the table does not define: a bug that
/// the defaults test catches.
fn documented_default(name: &'static str) -> Result<&'static str, ConfigError> {
    match SETTINGS.iter().find(|setting| setting.name == name) {
        Some(setting) if setting.default != NONE => Ok(setting.default),
        _ => Err(invalid(
            name,
            "the setting has no documented default".to_owned(),
        )),
    }
}

fn read_config_file(explicit: Option<&Path>) -> Result<Option<(PathBuf, String)>, ConfigError> {
    let path = explicit.map_or_else(|| PathBuf::from(DEFAULT_CONFIG_PATH), Path::to_path_buf);
    let error = match std::fs::read_to_string(&path) {
        Ok(text) => return Ok(Some((path, text))),
        Err(error) => error,
    };
    // Only the default file is optional; a file named on the command line must exist. Any other
    // failure (permissions, a directory) is reported rather than skipped.
    let message = match error.kind() {
        std::io::ErrorKind::NotFound if explicit.is_none() => return Ok(None),
        std::io::ErrorKind::NotFound => "file not found".to_owned(),
        _ => format!("cannot read the file: {error}"),
    };
    Err(ConfigError::File { path, message })
}

fn read_process_environment() -> Result<HashMap<String, String>, ConfigError> {
    let mut env = HashMap::new();
    for setting in SETTINGS {
        let Some(value) = std::env::var_os(setting.name) else {
            continue;
        };
        let not_utf8 = |_| invalid(setting.name, "the value is not valid UTF-8".to_owned());
        env.insert(
            setting.name.to_owned(),
            value.into_string().map_err(not_utf8)?,
        );
    }
    Ok(env)
}

/// One line, lower case like our other messages, instead of toml's multi-line snippet.
fn toml_error(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim();
    let Some(span) = error.span() else {
        return message.to_owned();
    };
    // Count bytes rather than slice the str, so an odd span can never panic.
    let before = &text.as_bytes()[..span.start.min(text.len())];
    let line = before.iter().filter(|&&byte| byte == b'\n').count() + 1;
    format!("line {line}: {message}")
}

/// Renders a file value as the environment would carry it. Floats keep their `.0` (`7.0`), so
/// the integer parser rejects them instead of rounding.
fn toml_value_text(value: &toml::Value) -> Result<String, String> {
    let scalar = |value: &toml::Value| match value {
        toml::Value::String(text) => Ok(text.clone()),
        toml::Value::Integer(number) => Ok(number.to_string()),
        toml::Value::Boolean(flag) => Ok(flag.to_string()),
        toml::Value::Float(number) => Ok(format!("{number:?}")),
        toml::Value::Datetime(datetime) => Ok(datetime.to_string()),
        toml::Value::Array(_) | toml::Value::Table(_) => Err(
            "a table or nested array is not allowed (expected a string, integer, boolean or array)",
        ),
    };
    let rendered = match value {
        toml::Value::Array(items) => items
            .iter()
            .map(scalar)
            .collect::<Result<Vec<_>, _>>()?
            .join(","),
        other => scalar(other)?,
    };
    Ok(rendered)
}

// Value parsers. Each takes the trimmed value and returns either the typed value or the reason it
// is invalid, phrased to follow the quoted value: `"abc" is not a positive integer`.

trait Parse<T>: Fn(&str) -> Result<T, String> {}
impl<T, F: Fn(&str) -> Result<T, String>> Parse<T> for F {}

/// Bounds shared by the integer parsers; `Default` is zero.
trait Integer: FromStr + PartialOrd + Default + Copy + fmt::Display {}
impl<T: FromStr + PartialOrd + Default + Copy + fmt::Display> Integer for T {}

/// Plain decimal digits only, so signs, fractions and exponents are rejected, never rounded.
fn whole_number<T: Integer>(value: &str, min: T) -> Result<T, String> {
    if value.is_empty() || !value.bytes().all(|byte| byte.is_ascii_digit()) {
        let kind = if min > T::default() {
            "positive"
        } else {
            "non-negative"
        };
        return Err(format!("is not a {kind} integer"));
    }
    // All digits, so the only failure left is overflow.
    value.parse().map_err(|_| "is too large".to_owned())
}

fn at_least<T: Integer>(min: T) -> impl Parse<T> {
    move |value| match whole_number(value, min)? {
        number if number < min => Err(format!("must be at least {min}")),
        number => Ok(number),
    }
}

fn between<T: Integer>(min: T, max: T) -> impl Parse<T> {
    move |value| match whole_number(value, min)? {
        number if number < min || number > max => Err(format!("must be between {min} and {max}")),
        number => Ok(number),
    }
}

fn boolean(value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err("is not a boolean (expected true/false, yes/no, on/off or 1/0)".to_owned()),
    }
}

/// A comma list: entries are trimmed, empty ones dropped, and the error quotes the bad entry.
fn list<T>(entry: impl Parse<T>) -> impl Parse<Vec<T>> {
    move |value| {
        let entries = value
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty());
        let parse =
            |item| entry(item).map_err(|why| format!("has an invalid entry: {item:?} {why}"));
        entries.map(parse).collect()
    }
}

fn data_dir(value: &str) -> Result<PathBuf, String> {
    if value.is_empty() {
        return Err("is not a directory path".to_owned());
    }
    Ok(PathBuf::from(value))
}

/// Host names are refused: binding must not depend on name resolution at start-up.
fn listen_address(value: &str) -> Result<SocketAddr, String> {
    let expected = "is not an IP address and port like 127.0.0.1:8080 or [::]:8080";
    value.parse().map_err(|_| expected.to_owned())
}

fn base_url(value: &str) -> Result<Url, String> {
    let mut url = Url::parse(value).map_err(|error| format!("is not a URL ({error})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("is not an http or https URL".to_owned());
    }
    let has_credentials = !url.username().is_empty() || url.password().is_some();
    if has_credentials || url.query().is_some() || url.fragment().is_some() {
        return Err("must not carry credentials, a query or a fragment".to_owned());
    }
    // Paths are appended to the base URL, so a trailing slash would double up.
    let path = url.path().trim_end_matches('/').to_owned();
    url.set_path(&path);
    Ok(url)
}

/// A bare address is taken as a single host (/32 or /128); host bits of a CIDR are cleared.
fn ip_net(value: &str) -> Result<IpNet, String> {
    if let Ok(net) = value.parse::<IpNet>() {
        return Ok(net.trunc());
    }
    let address = value.parse::<IpAddr>();
    address
        .map(IpNet::from)
        .map_err(|_| "is not an IP address or CIDR like 10.0.0.0/8".to_owned())
}

fn log_format(value: &str) -> Result<LogFormat, String> {
    match value.to_ascii_lowercase().as_str() {
        "text" => Ok(LogFormat::Text),
        "json" => Ok(LogFormat::Json),
        _ => Err("is not a log format (expected text or json)".to_owned()),
    }
}

/// Checked with the parser logging will use, so a bad filter fails here and not at first log.
fn log_filter(value: &str) -> Result<String, String> {
    match tracing_subscriber::EnvFilter::try_new(value) {
        Ok(_) => Ok(value.to_owned()),
        Err(error) => Err(format!(
            "is not a log filter like info or lookout=debug,info ({error})"
        )),
    }
}

/// A plausible host name: dot-separated labels of letters, digits and inner hyphens, with an
/// optional leading dot (which browsers ignore).
fn cookie_domain(value: &str) -> Result<String, String> {
    let host = value.strip_prefix('.').unwrap_or(value);
    let label_ok = |label: &str| {
        let allowed = label
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-');
        (1..=63).contains(&label.len())
            && allowed
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if host.is_empty() || host.len() > 253 || !host.split('.').all(label_ok) {
        return Err(
            "is not a host name like example.com (no scheme, port, path or spaces)".to_owned(),
        );
    }
    Ok(value.to_ascii_lowercase())
}

/// Ids are `org_` plus a canonical ULID: 26 upper-case Crockford base32 characters.
fn organisation_id(value: &str) -> Result<String, String> {
    const CROCKFORD: &str = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let canonical = value.strip_prefix("org_").is_some_and(|ulid| {
        // The ulid crate also rejects values beyond 128 bits, which the alphabet alone allows.
        let alphabet = ulid.chars().all(|c| CROCKFORD.contains(c));
        ulid.len() == 26 && alphabet && ulid::Ulid::from_string(ulid).is_ok()
    });
    if !canonical {
        return Err("is not an organisation id (org_ followed by a 26-character ULID)".to_owned());
    }
    Ok(value.to_owned())
}

/// Browsers send `Origin` as scheme, host and non-default port only, so that is all an entry may
/// hold; it is stored serialised the way browsers send it.
fn origin(value: &str) -> Result<String, String> {
    let expected = "is not an origin like https://app.example.com (scheme, host, optional port)";
    let url = Url::parse(value).map_err(|_| expected.to_owned())?;
    let bare = url.path() == "/" && url.query().is_none() && url.fragment().is_none();
    let anonymous = url.username().is_empty() && url.password().is_none();
    if !matches!(url.scheme(), "http" | "https") || !bare || !anonymous {
        return Err(expected.to_owned());
    }
    Ok(url.origin().ascii_serialization())
}

fn allowed_origins(value: &str) -> Result<AllowedOrigins, String> {
    if value == "*" {
        return Ok(AllowedOrigins::Any);
    }
    // An empty list would quietly refuse every browser; ask for `*` or named origins instead.
    let origins = list(origin)(value)?;
    if origins.is_empty() {
        return Err("is empty (expected * or a comma list of origins)".to_owned());
    }
    Ok(AllowedOrigins::List(origins))
}

fn channel(value: &str) -> Result<String, String> {
    if value.chars().any(char::is_control) {
        return Err("contains control characters".to_owned());
    }
    Ok(value.to_owned())
}

fn retry_delays(value: &str) -> Result<Vec<Duration>, String> {
    let delays = list(at_least(1u32))(value)?;
    if !(1..=10).contains(&delays.len()) {
        return Err(format!("has {} delays (expected 1 to 10)", delays.len()));
    }
    Ok(delays.into_iter().map(|count| SECOND * count).collect())
}

/// Keys are secrets: errors say which setting holds a bad key and why, never what the key is.
fn ingest_keys(raw: &RawSettings) -> Result<Vec<String>, ConfigError> {
    // WEB_INGEST_KEY holds exactly one key, so only WEB_INGEST_KEYS is split at commas.
    let single = raw.get("WEB_INGEST_KEY").map(|key| ("WEB_INGEST_KEY", key));
    let rotation = raw
        .get("WEB_INGEST_KEYS")
        .into_iter()
        .flat_map(|keys| keys.split(','));
    let candidates = single
        .into_iter()
        .chain(rotation.map(|key| ("WEB_INGEST_KEYS", key.trim())));
    let mut keys: Vec<String> = Vec::new();
    for (setting, key) in candidates.filter(|(_, key)| !key.is_empty()) {
        ingest_key(key).map_err(|reason| invalid(setting, reason))?;
        if !keys.iter().any(|known| known == key) {
            keys.push(key.to_owned());
        }
    }
    Ok(keys)
}

fn ingest_key(key: &str) -> Result<(), String> {
    let length = key.chars().count();
    if length < 16 {
        return Err(format!(
            "a key has {length} characters (expected at least 16)"
        ));
    }
    let alphabet = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-';
    if !key.bytes().all(alphabet) {
        return Err("a key has characters other than A-Z a-z 0-9 _ -".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_A: &str = "abcdefghijklmnop";
    const KEY_B: &str = "QRSTUVWXYZ_-0123";
    const DOCS: &str = include_str!("../docs/configuration.md");

    fn from_env(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        from_toml(None, pairs)
    }

    fn from_toml(text: Option<&str>, pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let env = pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()));
        let file = text.map(|text| (Path::new("/test/lookout.toml"), text));
        Config::from_sources(file, &env.collect())
    }

    #[test]
    fn defaults_equal_the_documented_defaults() {
        let config = Config::default();
        assert_eq!(config.data_dir, PathBuf::from("./lookout-data"));
        assert_eq!(config.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(config.base_url, None);
        assert!(config.trusted_proxies.is_empty());
        assert_eq!(config.log_format, LogFormat::Text);
        assert_eq!(config.log_level, "info");
        assert_eq!(config.http.header_read_timeout, SECOND * 10);
        assert_eq!(config.http.body_read_timeout, SECOND * 30);
        assert_eq!(config.http.max_connections, 1024);
        assert_eq!(config.http.max_header_count, 100);
        assert_eq!(config.http.max_header_bytes, 16384);
        assert_eq!(config.http.max_uri_bytes, 8192);
        assert_eq!(config.http.max_api_body_bytes, 1_048_576);
        assert_eq!(config.auth.jwt_ttl, SECOND * 24 * 3600);
        assert!(!config.auth.cookie_secure);
        assert_eq!(config.auth.cookie_domain, None);
        assert_eq!(config.auth.login_max_failures, 5);
        assert_eq!(config.auth.login_failure_window, MINUTE * 15);
        assert_eq!(config.auth.login_lockout, MINUTE * 15);
        assert_eq!(config.auth.api_rate_per_min, 600);
        assert!(config.ingest.keys.is_empty());
        assert_eq!(config.ingest.org_id, None);
        assert_eq!(config.ingest.max_events, 100);
        assert_eq!(config.ingest.max_body_bytes, 256 * 1024);
        assert_eq!(config.ingest.rate_per_min, 240);
        assert!(
            config.ingest.scrub_pii && config.ingest.scrub_ip,
            "privacy is on by default"
        );
        assert_eq!(config.ingest.allowed_origins, AllowedOrigins::Any);
        assert_eq!(config.ingest.max_sourcemap_bytes, 16 * 1024 * 1024);
        assert!(!config.web_error_alerts.enabled);
        assert!(config.web_error_alerts.channels.is_empty());
        assert_eq!(config.web_error_alerts.spike_threshold, 50);
        assert_eq!(config.web_error_alerts.spike_window, SECOND * 300);
        assert_eq!(config.web_error_alerts.cooldown, SECOND * 900);
        assert_eq!(config.retention_days, 30);
        assert_eq!(config.alert_eval_interval, SECOND * 10);
        assert_eq!(config.webhooks.timeout, SECOND * 10);
        assert_eq!(
            config.webhooks.retry_delays,
            [60, 300, 1800].map(|count| SECOND * count)
        );
        assert!(!config.webhooks.allow_private);
    }

    #[test]
    fn toml_lower_case_keys_are_parsed_and_the_environment_wins() {
        let text = r#"
            web_ingest_max_events = 7
            log_format = "json"
            trusted_proxies = ["10.0.0.0/8", "192.168.1.1"]
            webhook_retry_delays_seconds = [1, 2]
            web_ingest_scrub_ip = false
            retention_days = 9
        "#;
        let env = [("RETENTION_DAYS", "3"), ("LOG_FORMAT", "")];
        let config = from_toml(Some(text), &env).unwrap();
        assert_eq!(config.ingest.max_events, 7);
        assert_eq!(
            config.log_format,
            LogFormat::Json,
            "an empty variable counts as unset"
        );
        let proxies: Vec<String> = config
            .trusted_proxies
            .iter()
            .map(|net| net.to_string())
            .collect();
        assert_eq!(proxies, ["10.0.0.0/8", "192.168.1.1/32"]);
        assert_eq!(config.webhooks.retry_delays, [SECOND * 1, SECOND * 2]);
        assert!(!config.ingest.scrub_ip && config.ingest.scrub_pii);
        assert_eq!(
            config.retention_days, 3,
            "the environment wins over the file"
        );
    }

    #[test]
    fn the_documented_example_file_is_valid() {
        let example = DOCS
            .split("```toml")
            .nth(1)
            .and_then(|rest| rest.split("```").next());
        let config = from_toml(Some(example.unwrap()), &[]).unwrap();
        assert_eq!(config.log_format, LogFormat::Json);
    }

    #[test]
    fn file_problems_are_file_errors_naming_the_key() {
        let cases = [
            ("nope = 1", "unknown key \"nope\""),
            ("RETENTION_DAYS = 3", "keys are lower case"),
            ("retention_days = ", "line 1"),
            ("retention_days = 1\nretention_days = 2", "line 2"),
        ];
        for (text, expected) in cases {
            let error = from_toml(Some(text), &[]).unwrap_err();
            assert!(
                matches!(error, ConfigError::File { .. }),
                "{text:?} gave {error:?}"
            );
            assert!(
                error.to_string().contains(expected),
                "{text:?} gave {error}"
            );
        }
    }

    #[test]
    fn file_values_of_the_wrong_shape_are_invalid_values() {
        for (text, setting) in [
            ("retention_days = 7.0", "RETENTION_DAYS"),
            ("log_level = {}", "LOG_LEVEL"),
        ] {
            let error = from_toml(Some(text), &[]).unwrap_err();
            assert_eq!(error.setting(), Some(setting), "{text}");
        }
    }

    #[test]
    fn bad_values_name_the_setting_and_the_value() {
        let cases = [
            ("WEB_INGEST_MAX_EVENTS", "abc"),
            ("WEB_INGEST_MAX_EVENTS", "-5"),
            ("WEB_INGEST_MAX_EVENTS", "+5"),
            ("WEB_INGEST_MAX_EVENTS", "1.5"),
            ("WEB_INGEST_MAX_EVENTS", "10001"),
            ("WEB_INGEST_MAX_EVENTS", "99999999999999999999999"),
            ("RETENTION_DAYS", "0"),
            ("RETENTION_DAYS", "4294967296"),
            ("LOOKOUT_MAX_HEADER_COUNT", "7"),
            ("JWT_TTL_HOURS", "8761"),
            ("WEBHOOK_TIMEOUT_SECONDS", "0"),
            ("WEB_INGEST_SCRUB_PII", "maybe"),
            ("COOKIE_SECURE", "2"),
            ("TRUSTED_PROXIES", "10.0.0.0/33"),
            ("TRUSTED_PROXIES", "10.0.0.0/8,proxy.local"),
            ("BASE_URL", "ftp://example.com"),
            ("BASE_URL", "example.com"),
            ("BASE_URL", "https://example.com/?q=1"),
            ("LOOKOUT_LISTEN", "localhost:8080"),
            ("LOOKOUT_LISTEN", "127.0.0.1"),
            ("LOG_FORMAT", "xml"),
            ("LOG_LEVEL", "lookout=verbose"),
            ("COOKIE_DOMAIN", "https://example.com"),
            ("COOKIE_DOMAIN", "exa mple.com"),
            ("WEB_INGEST_ALLOWED_ORIGINS", "https://app.example.com/path"),
            ("WEB_INGEST_ALLOWED_ORIGINS", "app.example.com"),
            ("WEB_INGEST_ALLOWED_ORIGINS", ","),
            ("WEB_INGEST_ORG_ID", "org_123"),
            ("WEB_INGEST_ORG_ID", "org_01hzx3v6k8m9n0p1q2r3s4t5v6"),
            ("WEB_INGEST_ORG_ID", "01HZX3V6K8M9N0P1Q2R3S4T5V6"),
            ("WEBHOOK_RETRY_DELAYS_SECONDS", ","),
            ("WEBHOOK_RETRY_DELAYS_SECONDS", "60,0"),
            ("WEBHOOK_RETRY_DELAYS_SECONDS", "1,2,3,4,5,6,7,8,9,10,11"),
        ];
        for (setting, value) in cases {
            let error = from_env(&[(setting, value)]).unwrap_err();
            assert_eq!(
                error.setting(),
                Some(setting),
                "{setting}={value} gave {error}"
            );
            let prefix = format!("invalid value for {setting}: {value:?} ");
            assert!(error.to_string().starts_with(&prefix), "{error}");
        }
        let error = from_env(&[("WEB_INGEST_MAX_EVENTS", "abc")])
            .unwrap_err()
            .to_string();
        let expected =
            r#"invalid value for WEB_INGEST_MAX_EVENTS: "abc" is not a positive integer"#;
        assert_eq!(error, expected);
    }

    #[test]
    fn valid_edge_values_are_accepted() {
        let origins = "https://App.example.com, http://localhost:3000";
        let config = from_env(&[
            ("WEB_ERROR_ALERT_COOLDOWN_SECONDS", "0"),
            ("WEB_INGEST_MAX_EVENTS", " 10000 "),
            ("WEB_INGEST_ORG_ID", "org_01HZX3V6K8M9N0P1Q2R3S4T5V6"),
            ("COOKIE_DOMAIN", ".Example.COM"),
            ("LOOKOUT_LISTEN", "[::]:0"),
            ("WEB_INGEST_ALLOWED_ORIGINS", origins),
            ("WEB_ERROR_ALERT_CHANNELS", "chn_1, ops team"),
        ]);
        let config = config.unwrap();
        assert_eq!(config.web_error_alerts.cooldown, Duration::ZERO);
        assert_eq!(config.ingest.max_events, 10_000);
        assert_eq!(config.auth.cookie_domain.as_deref(), Some(".example.com"));
        let allowed = &config.ingest.allowed_origins;
        assert!(
            allowed.allows("https://app.EXAMPLE.com") && allowed.allows("http://localhost:3000")
        );
        assert!(!allowed.allows("https://evil.example.com"));
        assert_eq!(config.web_error_alerts.channels, ["chn_1", "ops team"]);
    }

    #[test]
    fn booleans_accept_the_usual_spellings() {
        let spellings = [("true", true), ("YES", true), ("On", true), ("1", true)];
        let spellings = spellings.into_iter().chain([
            ("False", false),
            ("no", false),
            ("OFF", false),
            ("0", false),
        ]);
        for (value, expected) in spellings {
            let config = from_env(&[("WEBHOOK_ALLOW_PRIVATE", value)]).unwrap();
            assert_eq!(config.webhooks.allow_private, expected, "{value}");
        }
    }

    #[test]
    fn ingest_keys_merge_and_never_leak() {
        let keys = format!(" {KEY_B} ,,{KEY_A}, {KEY_B}");
        let config = from_env(&[("WEB_INGEST_KEY", KEY_A), ("WEB_INGEST_KEYS", &keys)]).unwrap();
        assert_eq!(config.ingest.keys, [KEY_A, KEY_B]);
        let debug = format!("{config:?}");
        assert!(!debug.contains(KEY_A) && !debug.contains(KEY_B), "{debug}");
        let cases = [
            ("WEB_INGEST_KEY", "short-key", "short-key"),
            ("WEB_INGEST_KEYS", "abcdefghijklmnop!,x", "abcdefghijklmnop"),
        ];
        for (setting, value, secret) in cases {
            let error = from_env(&[(setting, value)]).unwrap_err();
            assert_eq!(error.setting(), Some(setting));
            assert!(!error.to_string().contains(secret), "{error}");
        }
    }

    #[test]
    fn cookie_secure_follows_an_https_base_url_unless_set() {
        let https = ("BASE_URL", "https://mon.example.com");
        let cases: [(&[(&str, &str)], bool); 4] = [
            (&[https], true),
            (&[("BASE_URL", "http://mon.example.com")], false),
            (&[https, ("COOKIE_SECURE", "false")], false),
            (&[("COOKIE_SECURE", "true")], true),
        ];
        for (pairs, expected) in cases {
            assert_eq!(
                from_env(pairs).unwrap().auth.cookie_secure,
                expected,
                "{pairs:?}"
            );
        }
    }

    #[test]
    fn effective_base_url_cases() {
        let cases = [
            ("", "0.0.0.0:8080", "http://127.0.0.1:8080/"),
            ("", "[::]:9000", "http://127.0.0.1:9000/"),
            ("", "[::1]:9000", "http://[::1]:9000/"),
            ("", "192.0.2.7:80", "http://192.0.2.7/"),
            (
                "https://mon.example.com/lookout/",
                "0.0.0.0:8080",
                "https://mon.example.com/lookout",
            ),
            (
                "https://mon.example.com/",
                "0.0.0.0:8080",
                "https://mon.example.com/",
            ),
        ];
        for (base_url, bound, expected) in cases {
            let config = from_env(&[("BASE_URL", base_url)]).unwrap();
            assert_eq!(
                config.effective_base_url(bound.parse().unwrap()).as_str(),
                expected
            );
        }
    }

    #[test]
    fn every_setting_is_documented_with_its_default() {
        for setting in SETTINGS {
            let row_start = format!("| `{}` |", setting.name);
            let row = DOCS.lines().find(|line| line.starts_with(&row_start));
            let row = row.unwrap_or_else(|| panic!("no row for {} in the docs", setting.name));
            assert!(
                row.contains(setting.default),
                "the row of {} lacks its default",
                setting.name
            );
        }
    }

    #[test]
    fn every_setting_is_read_and_checked() {
        // A bell character is invalid for every setting except a directory name, so an error naming
        // the setting proves that the code reads it rather than only documenting it.
        for setting in SETTINGS
            .iter()
            .filter(|setting| setting.name != "LOOKOUT_DATA_DIR")
        {
            let error = from_env(&[(setting.name, "\u{7}")]).unwrap_err();
            assert_eq!(error.setting(), Some(setting.name));
        }
    }

    #[test]
    fn missing_explicit_file_is_an_error() {
        let error = Config::load(Some(Path::new("/nonexistent/lookout.toml"))).unwrap_err();
        assert!(matches!(error, ConfigError::File { .. }), "{error}");
    }
}
