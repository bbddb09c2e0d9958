//! Start-up configuration errors, seen from the command line: an invalid value in the
//! environment or in the `--config` TOML file stops `lookout serve` with exit code 78
//! (EX_CONFIG) and a message naming the setting (or the unknown key, or the missing file),
//! before anything listens; and the environment wins over the file, setting by setting.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use crate::harness::{BIN, TestServer, http, run_cli, signal, text, wait_for};

/// EX_CONFIG from sysexits.h.
const EXIT_CONFIG: i32 = 78;

fn serve_with_env(pairs: &[(&str, &str)]) -> Output {
    let temp = tempfile::tempdir().unwrap();
    let env: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    run_cli(&temp.path().join("data"), &env, &["serve"], "")
}

fn serve_with_file(toml: &str) -> Output {
    let temp = tempfile::tempdir().unwrap();
    let file = temp.path().join("lookout.toml");
    std::fs::write(&file, toml).unwrap();
    run_cli(
        &temp.path().join("data"),
        &[],
        &["--config", file.to_str().unwrap(), "serve"],
        "",
    )
}

/// Exit 78, nothing listened, and stderr contains every one of `needles`.
fn assert_config_error(output: &Output, case: &str, needles: &[&str]) {
    let stderr = text(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(EXIT_CONFIG),
        "{case}: exit status, stderr: {stderr}"
    );
    assert!(
        !text(&output.stdout).contains("listening on"),
        "{case}: the server started"
    );
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "{case}: stderr lacks {needle:?}: {stderr}"
        );
    }
}

#[test]
fn invalid_environment_values_stop_start_up_naming_the_setting() {
    let cases = [
        ("LOOKOUT_LISTEN", "nonsense"),
        ("BASE_URL", "ftp://x"),
        ("LOG_FORMAT", "xml"),
        ("JWT_TTL_HOURS", "0"),
        ("WEB_INGEST_MAX_EVENTS", "abc"),
        ("WEB_INGEST_MAX_BODY_BYTES", "-1"),
        ("WEB_INGEST_SCRUB_PII", "maybe"),
        ("TRUSTED_PROXIES", "10.0.0.0/33"),
        ("WEBHOOK_RETRY_DELAYS_SECONDS", "60,0"),
        ("WEBHOOK_RETRY_DELAYS_SECONDS", "1,2,3,4,5,6,7,8,9,10,11"),
        ("WEB_INGEST_ORG_ID", "acme"),
        ("LOGIN_MAX_FAILURES", "0"),
        ("LOOKOUT_MAX_HEADER_COUNT", "7"),
        ("LOOKOUT_HEADER_READ_TIMEOUT_SECONDS", "301"),
        ("LOOKOUT_MAX_API_BODY_BYTES", "1023"),
        ("COOKIE_DOMAIN", "https://example.com"),
    ];
    for (setting, value) in cases {
        let output = serve_with_env(&[(setting, value)]);
        let quoted = format!("{value:?}");
        assert_config_error(&output, &format!("{setting}={value}"), &[setting, &quoted]);
    }
}

#[test]
fn the_documented_message_format_is_kept() {
    let output = serve_with_env(&[("WEB_INGEST_MAX_EVENTS", "abc")]);
    let expected = r#"invalid value for WEB_INGEST_MAX_EVENTS: "abc" is not a positive integer"#;
    assert_config_error(&output, "WEB_INGEST_MAX_EVENTS=abc", &[expected]);
}

#[test]
fn ingest_keys_are_not_repeated_in_the_error() {
    let secret = "short-secret";
    let output = serve_with_env(&[("WEB_INGEST_KEY", secret)]);
    assert_config_error(&output, "WEB_INGEST_KEY", &["WEB_INGEST_KEY"]);
    assert!(
        !text(&output.stderr).contains(secret),
        "the key leaked: {}",
        text(&output.stderr)
    );
}

#[test]
fn config_file_problems_stop_start_up() {
    let cases: [(&str, &[&str]); 5] = [
        (
            "web_ingest_max_events = 10\nnot_a_setting = 1\n",
            &["not_a_setting"],
        ),
        (
            "WEB_INGEST_MAX_EVENTS = 10\n",
            &["WEB_INGEST_MAX_EVENTS", "lower case"],
        ),
        (
            "web_ingest_max_events = \"abc\"\n",
            &["WEB_INGEST_MAX_EVENTS", "\"abc\""],
        ),
        ("retention_days = 7.5\n", &["RETENTION_DAYS"]),
        ("log_format = \"xml\"\n", &["LOG_FORMAT", "\"xml\""]),
    ];
    for (toml, needles) in cases {
        assert_config_error(&serve_with_file(toml), toml.trim(), needles);
    }
}

#[test]
fn a_missing_config_file_is_an_error_naming_it() {
    let temp = tempfile::tempdir().unwrap();
    let missing = temp.path().join("absent.toml");
    let missing = missing.to_str().unwrap();
    let output = run_cli(
        &temp.path().join("data"),
        &[],
        &["--config", missing, "serve"],
        "",
    );
    assert_config_error(&output, "missing --config file", &[missing]);
}

/// A `lookout serve` child that is killed if the test ends before it exits.
struct Serving {
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `lookout --config FILE serve` with `env`; returns the child and its address.
fn spawn_with_file(data_dir: &Path, file: &Path, env: &[(&str, &str)]) -> (Serving, String) {
    let mut command = Command::new(BIN);
    command.arg("--config").arg(file).arg("serve").env_clear();
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in TestServer::base_env(data_dir) {
        command.env(key, value);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("spawn lookout serve");
    let (sender, receiver) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("listening on ") {
                let _ = sender.send(addr.to_string());
            }
        }
    });
    let stderr = Arc::new(Mutex::new(String::new()));
    let (log, pipe) = (stderr.clone(), child.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            let mut log = log.lock().unwrap();
            log.push_str(&line);
            log.push('\n');
        }
    });
    let serving = Serving { child, stderr };
    let addr = receiver.recv_timeout(Duration::from_secs(20));
    let addr =
        addr.unwrap_or_else(|_| panic!("server did not start: {}", serving.stderr.lock().unwrap()));
    (serving, addr)
}

#[test]
fn the_environment_wins_over_the_file() {
    let temp = tempfile::tempdir().unwrap();
    let file = temp.path().join("lookout.toml");
    // Invalid on its own: the file alone must not start (checked first), the environment fixes it.
    std::fs::write(&file, "log_format = \"xml\"\nweb_ingest_max_events = 5\n").unwrap();
    let data_dir = temp.path().join("data");
    let alone = run_cli(
        &data_dir,
        &[],
        &["--config", file.to_str().unwrap(), "serve"],
        "",
    );
    assert_config_error(&alone, "file alone", &["LOG_FORMAT"]);

    let (mut serving, addr) = spawn_with_file(&data_dir, &file, &[("LOG_FORMAT", "json")]);
    let url = format!("http://{addr}/healthz");
    wait_for("healthz", Duration::from_secs(10), || {
        http().get(&url).send().ok().filter(|r| r.status() == 200)
    });
    signal(serving.child.id(), libc::SIGTERM);
    let status = wait_for("exit after SIGTERM", Duration::from_secs(15), || {
        serving.child.try_wait().unwrap()
    });
    assert!(status.success(), "exit {status:?}");
    // The exit closed stderr; wait until the reader has taken the last line.
    let stderr = wait_for("the end of the log", Duration::from_secs(5), || {
        let log = serving.stderr.lock().unwrap().clone();
        log.contains("lookout stopped").then_some(log)
    });
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    assert!(lines.len() >= 2, "too few log lines: {stderr}");
    for line in lines {
        let parsed: Result<serde_json::Value, _> = serde_json::from_str(line);
        assert!(
            parsed.is_ok_and(|v| v.is_object()),
            "not a JSON log line: {line}"
        );
    }
}

/// A supervisor may stop the server as soon as it printed `listening on`: SIGTERM then is a
/// clean stop (exit 0), never the signal's default action. Tried a few times, since the
/// moment the signal lands varies from run to run.
#[test]
fn a_sigterm_right_after_listening_on_stops_cleanly() {
    let temp = tempfile::tempdir().unwrap();
    let file = temp.path().join("lookout.toml");
    std::fs::write(&file, "").unwrap();
    for attempt in 0..8 {
        let data_dir = temp.path().join(format!("data-{attempt}"));
        let (mut serving, _) = spawn_with_file(&data_dir, &file, &[]);
        signal(serving.child.id(), libc::SIGTERM);
        let status = wait_for("exit after SIGTERM", Duration::from_secs(15), || {
            serving.child.try_wait().unwrap()
        });
        assert!(
            status.success(),
            "attempt {attempt}: exit {status:?}\n{}",
            serving.stderr.lock().unwrap()
        );
    }
}
