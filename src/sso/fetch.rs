//! The small blocking HTTP client SSO talks to identity providers with (ureq): discovery
//! documents, key sets, the token endpoint, SAML metadata by URL.
//!
//! Invariants: every call is bounded in time (`TIMEOUT`, body included) and in size (its
//! `max_bytes`); redirects are not followed; no proxy is taken from the environment. Blocking:
//! call from a blocking thread only.

use std::io::Read;
use std::sync::OnceLock;
use std::time::Duration;

/// The longest any one call to a provider may take, body included.
pub const TIMEOUT: Duration = Duration::from_secs(10);

fn agent() -> &'static ureq::Agent {
    static AGENT: OnceLock<ureq::Agent> = OnceLock::new();
    AGENT.get_or_init(|| {
        let config = ureq::config::Config::builder()
            .timeout_global(Some(TIMEOUT))
            .max_redirects(0)
            .http_status_as_error(false)
            .proxy(None)
            .build();
        ureq::Agent::new_with_config(config)
    })
}

/// A provider's answer: status and body (at most the caller's `max_bytes`).
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

fn read_bounded(
    mut response: ureq::http::Response<ureq::Body>,
    max_bytes: usize,
) -> Result<Answer, String> {
    let status = response.status().as_u16();
    let mut body = Vec::new();
    response
        .body_mut()
        .as_reader()
        .take(max_bytes as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|err| format!("reading the answer: {err}"))?;
    if body.len() > max_bytes {
        return Err(format!("the answer is over {max_bytes} bytes"));
    }
    Ok(Answer { status, body })
}

/// `GET url`, accepting `accept`.
pub fn get(url: &str, accept: &str, max_bytes: usize) -> Result<Answer, String> {
    let response = agent()
        .get(url)
        .header("Accept", accept)
        .call()
        .map_err(|err| err.to_string())?;
    read_bounded(response, max_bytes)
}

/// `POST url` with a form body and HTTP Basic client authentication.
pub fn post_form(
    url: &str,
    form: &[(&str, &str)],
    basic: (&str, &str),
    max_bytes: usize,
) -> Result<Answer, String> {
    use base64::Engine;
    // RFC 6749 section 2.3.1: each part form-encoded before joining.
    let user = form_encode(basic.0);
    let password = form_encode(basic.1);
    let credentials =
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let response = agent()
        .post(url)
        .header("Accept", "application/json")
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Authorization", &format!("Basic {credentials}"))
        .send(body.as_bytes())
        .map_err(|err| err.to_string())?;
    read_bounded(response, max_bytes)
}

fn form_encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
