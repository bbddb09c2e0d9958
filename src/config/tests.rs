//! Unit tests of configuration loading: defaults, sources, precedence and every kind of
//! invalid value.

use super::*;

const KEY_A: &str = "abcdefghijklmnop";
const KEY_B: &str = "QRSTUVWXYZ_-0123";
const DOCS: &str = include_str!("../../docs/configuration.md");

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
    assert_eq!(config.auth.audit_retention, SECOND * 365 * 86_400);
    assert_eq!(config.clock_offset, Duration::ZERO);
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
    let expected = r#"invalid value for WEB_INGEST_MAX_EVENTS: "abc" is not a positive integer"#;
    assert_eq!(error, expected);
}

#[test]
fn valid_edge_values_are_accepted() {
    let origins = "https://App.example.com, http://localhost:3000";
    let config = from_env(&[
        ("WEB_ERROR_ALERT_COOLDOWN_SECONDS", "0"),
        ("WEB_ERROR_SPIKE_WINDOW_SECONDS", "86400"),
        ("WEB_INGEST_MAX_EVENTS", " 10000 "),
        ("WEB_INGEST_ORG_ID", "org_01HZX3V6K8M9N0P1Q2R3S4T5V6"),
        ("COOKIE_DOMAIN", ".Example.COM"),
        ("LOOKOUT_LISTEN", "[::]:0"),
        ("WEB_INGEST_ALLOWED_ORIGINS", origins),
        ("WEB_ERROR_ALERT_CHANNELS", "chn_1, ops team"),
    ]);
    let config = config.unwrap();
    assert_eq!(config.web_error_alerts.cooldown, Duration::ZERO);
    assert_eq!(
        config.web_error_alerts.spike_window,
        Duration::from_secs(86_400)
    );
    let too_long = from_env(&[("WEB_ERROR_SPIKE_WINDOW_SECONDS", "86401")]).unwrap_err();
    assert!(
        too_long
            .to_string()
            .contains("WEB_ERROR_SPIKE_WINDOW_SECONDS"),
        "{too_long}"
    );
    assert_eq!(config.ingest.max_events, 10_000);
    assert_eq!(config.auth.cookie_domain.as_deref(), Some(".example.com"));
    let allowed = &config.ingest.allowed_origins;
    assert!(allowed.allows("https://app.EXAMPLE.com") && allowed.allows("http://localhost:3000"));
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
