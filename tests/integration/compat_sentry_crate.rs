//! The real `sentry` crate (its ureq transport) pointed at the DSN of
//! `GET /api/v1/orgs/me/ingest`: a message, an error and a panic arrive as error events.

use std::time::Duration;

use crate::compat_support::*;
use crate::harness::wait_for;
use crate::ingest_support::*;

#[test]
fn the_sentry_crate_sends_a_message_an_error_and_a_panic() {
    let (server, key) = sentry_server(&[]);
    let dsn = read(&server, &key, "/api/v1/orgs/me/ingest")["dsn"]
        .as_str()
        .expect("dsn")
        .to_string();
    let mut options = sentry::ClientOptions::default();
    options.release = Some("rust-app@1.0.0".into());
    options.environment = Some("test".into());
    let guard = sentry::init((dsn.as_str(), options));
    assert!(guard.is_enabled(), "the crate accepts the DSN {dsn}");
    sentry::capture_message("hello from the sentry crate", sentry::Level::Warning);
    let error = std::io::Error::other("the disk is on fire");
    sentry::capture_error(&error);
    // The panic integration reports from its panic hook; the thread's panic ends there.
    let panicked = std::thread::spawn(|| panic!("panicked on purpose")).join();
    assert!(panicked.is_err());
    assert!(
        guard.flush(Some(Duration::from_secs(10))),
        "the transport drained"
    );
    drop(guard);

    let events = wait_for("three events", Duration::from_secs(10), || {
        let events = all_errors(&server, &key);
        (events.len() >= 3).then_some(events)
    });
    let find = |message: &str| {
        events
            .iter()
            .find(|event| event["message"] == message)
            .unwrap_or_else(|| panic!("{message} in {events:#?}"))
    };
    let message = find("hello from the sentry crate");
    assert_eq!(message["level"], "warning");
    assert_eq!(message["release"], "rust-app@1.0.0");
    assert_eq!(message["tags"]["sdk"], "sentry.rust");
    let error = find("the disk is on fire");
    assert_eq!(error["level"], "error");
    let panic = find("panicked on purpose");
    assert_eq!(panic["name"], "panic");
    assert_eq!(panic["environment"], "test");
}
