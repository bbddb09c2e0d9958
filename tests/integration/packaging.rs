//! What the package relies on, checked without building it (`packaging/check-deb` checks the
//! built .deb): `serve` speaks systemd's notify protocol (READY once listening, watchdog pings
//! while healthy, STOPPING at shutdown); the shipped configuration file is accepted as it is
//! and points at the service's state directory; the unit carries every hardening directive.

use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::harness::{TestServer, run_cli, text};

/// Collects notify datagrams until `done` says the list is complete, or `deadline` passes.
fn receive_until(
    socket: &UnixDatagram,
    deadline: Duration,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let until = Instant::now() + deadline;
    let mut messages = Vec::new();
    let mut buffer = [0u8; 4096];
    while !done(&messages) && Instant::now() < until {
        if let Ok(size) = socket.recv(&mut buffer) {
            messages.push(String::from_utf8_lossy(&buffer[..size]).into_owned());
        }
    }
    messages
}

#[test]
fn serve_notifies_systemd_ready_watchdog_and_stopping() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("notify.sock");
    let socket = UnixDatagram::bind(&path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut server = TestServer::builder()
        .env("NOTIFY_SOCKET", path.to_str().unwrap())
        .env("WATCHDOG_USEC", "200000")
        .start();

    let messages = receive_until(&socket, Duration::from_secs(10), |messages| {
        messages.iter().filter(|m| m.contains("WATCHDOG=1")).count() >= 3
    });
    let ready = messages
        .iter()
        .position(|m| m.lines().any(|line| line == "READY=1"))
        .unwrap_or_else(|| panic!("no READY=1 in {messages:?}"));
    let status = format!("STATUS=serving on {}", server.addr);
    assert!(messages[ready].contains(&status), "{messages:?}");
    let pings = messages[ready..]
        .iter()
        .filter(|m| m.as_str() == "WATCHDOG=1\n")
        .count();
    assert!(pings >= 3, "watchdog pings after READY: {messages:?}");
    assert!(
        !messages[..ready].iter().any(|m| m.contains("WATCHDOG=1")),
        "a watchdog ping came before READY: {messages:?}"
    );

    assert!(server.terminate(Duration::from_secs(15)).success());
    let rest = receive_until(&socket, Duration::from_secs(2), |messages| {
        messages.iter().any(|m| m.contains("STOPPING=1"))
    });
    assert!(rest.iter().any(|m| m.contains("STOPPING=1")), "{rest:?}");
}

#[test]
fn serve_without_systemd_sends_nothing_and_runs() {
    // No NOTIFY_SOCKET: the notify calls are no-ops (the harness's own start proves it serves).
    let server = TestServer::start();
    assert!(
        server
            .log()
            .lines()
            .all(|line| !line.contains("cannot notify systemd")),
        "{}",
        server.log()
    );
}

fn repository_file(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

#[test]
fn shipped_configuration_is_accepted_and_uses_the_state_directory() {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/lookout.toml");
    let text_of_config = repository_file("packaging/lookout.toml");
    assert!(
        text_of_config
            .lines()
            .any(|line| line == "lookout_data_dir = \"/var/lib/lookout\""),
        "the conffile must point at /var/lib/lookout, the only directory the unit may write"
    );
    // Loading it for real (with the data dir overridden) proves every key in it is known.
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let output = run_cli(
        &dir,
        &[],
        &[
            "--config",
            config.to_str().unwrap(),
            "--data-dir",
            dir.to_str().unwrap(),
            "org",
            "list",
            "--json",
        ],
        "",
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    // Each commented-out example is valid too: uncomment them all and load again.
    let uncommented: String = text_of_config
        .lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(setting) if setting.contains(" = ") => setting,
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let all = temp.path().join("all.toml");
    std::fs::write(&all, uncommented).unwrap();
    let output = run_cli(
        &dir,
        &[],
        &[
            "--config",
            all.to_str().unwrap(),
            "--data-dir",
            dir.to_str().unwrap(),
            "org",
            "list",
            "--json",
        ],
        "",
    );
    assert!(
        output.status.success(),
        "uncommented examples: {}",
        text(&output.stderr)
    );
}

#[test]
fn unit_has_every_hardening_directive() {
    let unit = repository_file("systemd/lookout.service");
    let lines: Vec<&str> = unit.lines().map(str::trim).collect();
    for directive in [
        "Type=notify",
        "ExecStart=/usr/bin/lookout serve",
        "User=lookout",
        "StateDirectory=lookout",
        "ReadWritePaths=/var/lib/lookout",
        "UMask=0077",
        "Restart=on-failure",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "PrivateDevices=yes",
        "CapabilityBoundingSet=",
        "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
        "RestrictNamespaces=yes",
        "LockPersonality=yes",
        "MemoryDenyWriteExecute=yes",
        "SystemCallFilter=@system-service",
    ] {
        assert!(
            lines.contains(&directive),
            "systemd/lookout.service lacks {directive}"
        );
    }
    assert!(
        lines.iter().any(|line| line.starts_with("WatchdogSec=")),
        "no WatchdogSec"
    );
}
