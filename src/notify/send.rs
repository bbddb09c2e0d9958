//! One webhook attempt over ureq, on a blocking thread.
//!
//! Invariants: redirects are never followed (a 3xx is a failure like any other non-2xx); the
//! whole attempt, body included, is bounded by `WEBHOOK_TIMEOUT_SECONDS`; no proxy from the
//! environment is used (it would bypass the guard); and every address the resolver returns
//! passes `http::destination::address_allowed` (`http::outbound`) before the connector may use it, so the address actually
//! connected to is the one checked, whatever DNS said when the channel was saved.

use std::io::Read;
use std::time::{Duration, Instant};

use ureq::config::Config;

use super::model::{Outcome, outcome_of_status};
use super::payload;
use crate::http::outbound;

/// How much of a receiver's answer the delivery log keeps.
const SNIPPET_BYTES: u64 = 512;

/// What is needed to make one attempt; built from the stored delivery and its channel.
#[derive(Debug, Clone)]
pub struct Request {
    pub delivery_id: String,
    pub event: String,
    pub url: String,
    pub body: String,
    pub secret: Option<String>,
}

/// What happened, for the delivery log and the metrics.
#[derive(Debug, Clone)]
pub struct Report {
    pub outcome: Outcome,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    /// A short, stable label for `lookout_webhook_failures_total{reason}`.
    pub reason: &'static str,
    pub duration: Duration,
    pub snippet: Option<String>,
}

/// The shared HTTP client of the delivery workers (connection pool included).
pub struct Sender {
    agent: ureq::Agent,
    user_agent: String,
}

impl Sender {
    pub fn new(timeout: Duration, allow_private: bool) -> Sender {
        let config = Config::builder()
            .timeout_global(Some(timeout))
            .max_redirects(0)
            .http_status_as_error(false)
            .proxy(None)
            .build();
        Sender {
            agent: outbound::guarded_agent(config, allow_private),
            user_agent: payload::user_agent(),
        }
    }

    /// Makes one attempt. Blocking: call from a blocking thread only.
    pub fn send(&self, request: &Request, unix_seconds: i64) -> Report {
        let started = Instant::now();
        let mut builder = self
            .agent
            .post(&request.url)
            .header("Content-Type", "application/json")
            .header("User-Agent", &self.user_agent)
            .header("X-Lookout-Event", &request.event)
            .header("X-Lookout-Delivery", &request.delivery_id)
            .header("X-Lookout-Timestamp", unix_seconds.to_string());
        if let Some(secret) = &request.secret {
            let signature = payload::sign(secret, request.body.as_bytes());
            builder = builder.header("X-Lookout-Signature", signature);
        }
        let result = builder.send(request.body.as_bytes());
        match result {
            Ok(mut response) => {
                let status = response.status().as_u16();
                let mut snippet = Vec::new();
                // The snippet is best effort: a receiver that stalls its body still counts by
                // its status, read within the same global timeout.
                let _ = response
                    .body_mut()
                    .as_reader()
                    .take(SNIPPET_BYTES)
                    .read_to_end(&mut snippet);
                let outcome = outcome_of_status(status);
                let (error, reason) = match outcome {
                    Outcome::Success => (None, "none"),
                    Outcome::Gone => (Some("receiver answered 410 Gone".to_string()), "gone"),
                    Outcome::Failure => (Some(format!("receiver answered {status}")), "status"),
                };
                Report {
                    outcome,
                    status_code: Some(status),
                    error,
                    reason,
                    duration: started.elapsed(),
                    snippet: Some(String::from_utf8_lossy(&snippet).into_owned()),
                }
            }
            Err(err) => {
                let reason = failure_reason(&err);
                Report {
                    outcome: Outcome::Failure,
                    status_code: None,
                    error: Some(describe(&err, reason)),
                    reason,
                    duration: started.elapsed(),
                    snippet: None,
                }
            }
        }
    }
}

fn failure_reason(err: &ureq::Error) -> &'static str {
    match err {
        ureq::Error::Timeout(_) => "timeout",
        err if outbound::is_refusal(err) => "refused_destination",
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => "timeout",
        ureq::Error::HostNotFound => "dns",
        ureq::Error::ConnectionFailed | ureq::Error::Io(_) => "connect",
        _ => "other",
    }
}

fn describe(err: &ureq::Error, reason: &str) -> String {
    match reason {
        "timeout" => "no answer within WEBHOOK_TIMEOUT_SECONDS".to_string(),
        _ => err.to_string(),
    }
}

/// The destination a per-destination concurrency cap counts against: `host:port`.
pub fn destination_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(url) => format!(
            "{}:{}",
            url.host_str().unwrap_or(""),
            url.port_or_known_default().unwrap_or(0)
        ),
        Err(_) => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_destination_is_reported_as_such() {
        let refusal = ureq::Error::Io(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            outbound::REFUSED,
        ));
        assert_eq!(failure_reason(&refusal), "refused_destination");
    }

    #[test]
    fn destinations_are_host_and_port() {
        assert_eq!(destination_of("https://a.example/x"), "a.example:443");
        assert_eq!(destination_of("http://10.0.0.1:81/"), "10.0.0.1:81");
    }
}
