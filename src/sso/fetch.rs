//! The small blocking HTTP client SSO talks to identity providers with (ureq): discovery
//! documents, key sets and the token endpoint (through `openidconnect`, as its
//! `SyncHttpClient`), SAML metadata by URL.
//!
//! Invariants: every URL is owner-configured, so every address connected to passes the
//! outbound destination guard (`http::outbound`, switched by `WEBHOOK_ALLOW_PRIVATE` like
//! webhooks); every call is bounded in time (`TIMEOUT`, body included) and in size (its
//! `max_bytes`); redirects are not followed; no proxy is taken from the environment. Blocking:
//! call from a blocking thread only.

use std::io::Read;
use std::time::Duration;

use crate::http::{destination, outbound};

/// The longest any one call to a provider may take, body included.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Why a call to a provider failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FetchError {
    /// The URL, or an address it resolves to, is one the destination guard refuses.
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Failed(String),
}

/// The client: one guarded agent shared by every call (its connection pool included).
#[derive(Clone)]
pub struct Fetcher {
    agent: ureq::Agent,
    allow_private: bool,
}

/// A provider's answer: status, content type and body (at most the caller's `max_bytes`).
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Fetcher {
    pub fn new(allow_private: bool) -> Fetcher {
        let config = ureq::config::Config::builder()
            .timeout_global(Some(TIMEOUT))
            .max_redirects(0)
            .http_status_as_error(false)
            .proxy(None)
            .build();
        Fetcher {
            agent: outbound::guarded_agent(config, allow_private),
            allow_private,
        }
    }

    /// Checks a URL's shape and literal host with the destination guard (before any DNS).
    pub fn check_url(&self, url: &str) -> Result<(), FetchError> {
        destination::check_url(url, self.allow_private)
            .map(|_| ())
            .map_err(|err| match err {
                destination::DestinationError::Address(..)
                | destination::DestinationError::InternalName(_) => {
                    FetchError::Refused(err.to_string())
                }
                other => FetchError::Failed(other.to_string()),
            })
    }

    /// `GET url`, accepting `accept`.
    pub fn get(&self, url: &str, accept: &str, max_bytes: usize) -> Result<Answer, FetchError> {
        self.check_url(url)?;
        let response = self
            .agent
            .get(url)
            .header("Accept", accept)
            .call()
            .map_err(failed)?;
        let (parts, body) = read_bounded(response, max_bytes)?;
        Ok(Answer {
            status: parts.status.as_u16(),
            body,
        })
    }

    /// The `openidconnect` HTTP client over this one, reading at most `max_bytes` of an answer.
    pub fn bounded(&self, max_bytes: usize) -> Bounded<'_> {
        Bounded {
            fetcher: self,
            max_bytes,
        }
    }
}

fn failed(err: ureq::Error) -> FetchError {
    if outbound::is_refusal(&err) {
        FetchError::Refused(err.to_string())
    } else {
        FetchError::Failed(err.to_string())
    }
}

fn read_bounded(
    response: ureq::http::Response<ureq::Body>,
    max_bytes: usize,
) -> Result<(ureq::http::response::Parts, Vec<u8>), FetchError> {
    let (parts, mut body) = response.into_parts();
    let mut bytes = Vec::new();
    body.as_reader()
        .take(max_bytes as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| FetchError::Failed(format!("reading the answer: {err}")))?;
    if bytes.len() > max_bytes {
        return Err(FetchError::Failed(format!(
            "the answer is over {max_bytes} bytes"
        )));
    }
    Ok((parts, bytes))
}

/// `openidconnect`'s view of a `Fetcher`: each request it builds (discovery, key set, token
/// exchange) goes through the guarded agent, bounded in size.
pub struct Bounded<'a> {
    fetcher: &'a Fetcher,
    max_bytes: usize,
}

impl openidconnect::SyncHttpClient for Bounded<'_> {
    type Error = FetchError;

    fn call(
        &self,
        request: openidconnect::HttpRequest,
    ) -> Result<openidconnect::HttpResponse, FetchError> {
        self.fetcher.check_url(&request.uri().to_string())?;
        let (parts, body) = request.into_parts();
        let response = if body.is_empty() {
            self.fetcher
                .agent
                .run(ureq::http::Request::from_parts(parts, ()))
        } else {
            self.fetcher
                .agent
                .run(ureq::http::Request::from_parts(parts, body))
        }
        .map_err(failed)?;
        let (parts, body) = read_bounded(response, self.max_bytes)?;
        Ok(openidconnect::HttpResponse::from_parts(parts, body))
    }
}

#[cfg(test)]
mod tests {
    use openidconnect::SyncHttpClient;

    use super::*;

    #[test]
    fn private_providers_are_refused_unless_allowed() {
        let strict = Fetcher::new(false);
        for url in [
            "http://127.0.0.1:9/x",
            "http://localhost:9/",
            "http://10.0.0.1/",
        ] {
            assert!(
                matches!(strict.get(url, "*/*", 10), Err(FetchError::Refused(_))),
                "{url}"
            );
            let request = ureq::http::Request::builder()
                .uri(url)
                .body(Vec::new())
                .unwrap();
            assert!(
                matches!(
                    strict.bounded(10).call(request),
                    Err(FetchError::Refused(_))
                ),
                "{url}"
            );
        }
        // Allowed, the same loopback address is tried (and nothing listens on port 9).
        let open = Fetcher::new(true);
        assert!(matches!(
            open.get("http://127.0.0.1:9/x", "*/*", 10),
            Err(FetchError::Failed(_))
        ));
    }
}
