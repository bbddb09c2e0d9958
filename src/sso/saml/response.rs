//! The verification of a Response posted to the ACS: from the form field to the person it
//! names, or a refusal.
//!
//! Invariants: the size is checked before decoding; the document has exactly one Assertion
//! (an `EncryptedAssertion` counts, and is refused) and no repeated `ID`, so the element the
//! verified signature references by ID is the element read; everything used (NameID, e-mail,
//! name, AuthnContext) is read from that element's text as canonicalisation sees it (comments
//! dropped, so `user@evil.com<!---->.example.com` stays `user@evil.com.example.com`) and the
//! NameID must equal what `saml-rs` read from the verified node. The caller records the
//! assertion id in the replay cache only after all of this passed.

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use saml_rs::xml::XmlLimits;
use saml_rs::xml::dom::{self, Node};
use saml_rs::{
    AcsEndpoint, BrowserInput, ClockSkew, EntityId, FormField, MessageId, Pending, RelayStateParam,
    ReplayCache, ReplayKey, ReplayPolicy, SamlValidationContext, SsoResponse, SsoResponseBinding,
};

use super::{Attempt, IdpMetadata, SamlError, ServiceProvider};

/// The longest `SAMLResponse` form value read (base64); real ones are a few KiB, Entra ID's
/// with group claims up to ~60 KiB.
pub const MAX_RESPONSE_BYTES: usize = 192 * 1024;
/// The clock difference tolerated on NotBefore and NotOnOrAfter.
pub const MAX_SKEW: Duration = Duration::from_millis(SKEW_MILLIS as u64);
const SKEW_MILLIS: i64 = 120_000;
/// The longest an assertion id is kept in the replay cache, whatever NotOnOrAfter says.
pub const MAX_REPLAY_RETENTION: Duration = Duration::from_secs(24 * 3600);

/// AuthnContextClassRef values that say the person used more than one factor.
const MFA_CONTEXTS: [&str; 5] = [
    "urn:oasis:names:tc:SAML:2.0:ac:classes:MultiFactor",
    "urn:oasis:names:tc:SAML:2.0:ac:classes:MultiFactorContract",
    "urn:oasis:names:tc:SAML:2.0:ac:classes:TimeSyncToken",
    "http://schemas.microsoft.com/claims/multipleauthn",
    "https://refeds.org/profile/mfa",
];
/// Attribute names that carry the e-mail address (Okta, Entra ID, Google, Keycloak, authentik).
const EMAIL_ATTRIBUTES: [&str; 5] = [
    "email",
    "mail",
    "emailaddress",
    "urn:oid:0.9.2342.19200300.100.1.3",
    "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
];
/// Attribute names that carry a display name.
const NAME_ATTRIBUTES: [&str; 5] = [
    "name",
    "displayName",
    "urn:oid:2.16.840.1.113730.3.1.241",
    "http://schemas.microsoft.com/identity/claims/displayname",
    "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name",
];
const EMAIL_NAME_ID: &str = "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress";

/// What a verified Assertion says, for `sso::finish` and the replay cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedAssertion {
    /// The Assertion's `ID`: the replay cache's key.
    pub assertion_id: String,
    /// Until when the replay cache must keep the id (NotOnOrAfter plus skew, bounded).
    pub replay_until: SystemTime,
    /// The IdP's entity id.
    pub issuer: String,
    /// The NameID.
    pub subject: String,
    /// The e-mail address: an e-mail attribute, else an e-mail NameID.
    pub email: String,
    pub name: Option<String>,
    /// Whether the AuthnContext names a multi-factor class.
    pub mfa: bool,
}

/// Records the id `saml-rs` would have the cache check; the caller checks and stores it in
/// one write transaction once verification has passed, so two posts of one Response race to
/// one winner and a refused Response writes nothing.
#[derive(Default)]
struct ReplayKeys(Vec<(ReplayKey, SystemTime)>);

impl ReplayCache for ReplayKeys {
    fn check_and_store(
        &mut self,
        key: ReplayKey,
        expires_at: SystemTime,
    ) -> Result<(), saml_rs::SamlError> {
        self.0.push((key, expires_at));
        Ok(())
    }
}

/// Verifies `saml_response` (the form's base64 value) for the sign-in `attempt` of this
/// browser, at `now`.
pub fn verify_response(
    sp: &ServiceProvider,
    idp: &IdpMetadata,
    attempt: &Attempt,
    saml_response: &str,
    relay_state: Option<&str>,
    now: SystemTime,
) -> Result<VerifiedAssertion, SamlError> {
    if saml_response.len() > MAX_RESPONSE_BYTES {
        return Err(SamlError::ResponseTooLarge {
            limit: MAX_RESPONSE_BYTES,
        });
    }
    if relay_state != Some(attempt.org.as_str()) {
        return Err(SamlError::WrongRequest);
    }
    // Some IdPs wrap the base64 in lines; saml-rs wants it unwrapped.
    let compact: String = saml_response
        .chars()
        .filter(|character| !character.is_ascii_whitespace())
        .collect();
    let xml = STANDARD
        .decode(&compact)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| SamlError::ResponseMalformed("not base64 of UTF-8 text".into()))?;
    let document = dom::parse_with_limits(&xml, XmlLimits::default())
        .map_err(|error| SamlError::ResponseMalformed(error.to_string()))?;
    let assertion_node = the_one_assertion(&document.root)?;

    let mut replay = ReplayKeys::default();
    let session = {
        let pending = pending_request(sp, idp, attempt)?;
        let validation = SamlValidationContext::new(now, ReplayPolicy::RequireCache(&mut replay))
            // The drifts are signed: NotBefore is moved back, NotOnOrAfter forward.
            .with_clock_skew(ClockSkew::from_millis(-SKEW_MILLIS, SKEW_MILLIS))
            .with_replay_retention(MAX_REPLAY_RETENTION);
        let input = BrowserInput::<SsoResponse>::post(vec![
            FormField::new("SAMLResponse", compact),
            FormField::new("RelayState", attempt.org.clone()),
        ]);
        sp.saml()?
            .finish_sso(idp.descriptor(), &pending, input, validation)
            .map_err(SamlError::from_library)?
    };

    // Our own checks over what the crate verified (defence in depth, cheap).
    if session.issuer().as_str() != idp.entity_id() {
        return Err(SamlError::WrongIssuer);
    }
    if !session
        .audience()
        .iter()
        .any(|audience| audience.as_str() == sp.entity_id)
    {
        return Err(SamlError::WrongAudience);
    }
    if session.in_response_to().map(MessageId::as_str) != Some(attempt.request_id.as_str()) {
        return Err(SamlError::WrongRequest);
    }
    let assertion_id = session.assertion_id().as_str();
    if assertion_node.attr("ID") != Some(assertion_id) {
        return Err(SamlError::Signature(
            "the verified Assertion is not the Assertion of the document".into(),
        ));
    }
    let subject = child_path(assertion_node, &["Subject", "NameID"])
        .map(|node| node.text.trim().to_owned())
        .ok_or(SamlError::NoEmail)?;
    if subject != session.name_id().value().trim() {
        return Err(SamlError::ResponseMalformed(
            "the NameID read differs from the NameID verified".into(),
        ));
    }
    let replay_until = replay
        .0
        .iter()
        .find(|(key, _)| matches!(key, ReplayKey::AssertionId(_)))
        .map(|(_, until)| *until)
        .unwrap_or(now + MAX_REPLAY_RETENTION)
        .min(now + MAX_REPLAY_RETENTION);
    let name_id_is_email = child_path(assertion_node, &["Subject", "NameID"])
        .and_then(|node| node.attr("Format"))
        == Some(EMAIL_NAME_ID);
    let email = attribute_value(assertion_node, &EMAIL_ATTRIBUTES)
        .or_else(|| (name_id_is_email || looks_like_email(&subject)).then(|| subject.clone()))
        .filter(|email| looks_like_email(email))
        .ok_or(SamlError::NoEmail)?;
    Ok(VerifiedAssertion {
        assertion_id: assertion_id.to_owned(),
        replay_until,
        issuer: session.issuer().as_str().to_owned(),
        subject,
        email,
        name: attribute_value(assertion_node, &NAME_ATTRIBUTES),
        mfa: asserts_mfa(assertion_node),
    })
}

/// The pending AuthnRequest rebuilt from the browser's attempt cookie.
fn pending_request(
    sp: &ServiceProvider,
    idp: &IdpMetadata,
    attempt: &Attempt,
) -> Result<Pending<saml_rs::AuthnRequest>, SamlError> {
    let refused = |error: saml_rs::SamlError| SamlError::Refused(error.to_string());
    Pending::<saml_rs::AuthnRequest>::try_new(
        MessageId::try_new(attempt.request_id.clone()).map_err(refused)?,
        RelayStateParam::try_from_option(Some(attempt.org.clone())).map_err(refused)?,
        AcsEndpoint::post(sp.acs_url.clone()).map_err(refused)?,
        SsoResponseBinding::Post,
        EntityId::try_new(idp.entity_id().to_owned()).map_err(refused)?,
    )
    .map_err(refused)
}

/// The document's only Assertion, after checking the root is a Response, exactly one
/// Assertion or EncryptedAssertion exists anywhere in it, and no `ID` repeats.
fn the_one_assertion(root: &Node) -> Result<&Node, SamlError> {
    if root.local_name != "Response" {
        return Err(SamlError::ResponseMalformed(format!(
            "the root is {}, not Response",
            root.local_name
        )));
    }
    let mut assertions = Vec::new();
    let mut ids = HashSet::new();
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        for (name, value) in &node.attrs {
            if (name == "ID" || name == "AssertionID" || name == "Id") && !ids.insert(value) {
                return Err(SamlError::DuplicateId(value.clone()));
            }
        }
        if node.local_name == "Assertion" || node.local_name == "EncryptedAssertion" {
            assertions.push(node);
        }
        pending.extend(node.children.iter());
    }
    match assertions.as_slice() {
        [one] if one.local_name == "Assertion" => Ok(one),
        _ => Err(SamlError::AssertionCount {
            found: assertions.len(),
        }),
    }
}

/// The first descendant of `node` along `path` (local names).
fn child_path<'a>(node: &'a Node, path: &[&str]) -> Option<&'a Node> {
    path.iter().try_fold(node, |current, name| {
        current
            .children
            .iter()
            .find(|child| child.local_name == *name)
    })
}

/// The first value of the first attribute of `names` present in the Assertion.
fn attribute_value(assertion: &Node, names: &[&str]) -> Option<String> {
    let statements = assertion
        .children
        .iter()
        .filter(|child| child.local_name == "AttributeStatement");
    let attributes: Vec<&Node> = statements
        .flat_map(|statement| statement.children.iter())
        .filter(|child| child.local_name == "Attribute")
        .collect();
    names.iter().find_map(|wanted| {
        attributes
            .iter()
            .find(|attribute| {
                attribute
                    .attr("Name")
                    .is_some_and(|name| name.eq_ignore_ascii_case(wanted))
            })
            .and_then(|attribute| {
                attribute
                    .children
                    .iter()
                    .find(|child| child.local_name == "AttributeValue")
            })
            .map(|value| value.text.trim().to_owned())
            .filter(|value| !value.is_empty())
    })
}

/// Whether an AuthnStatement's AuthnContextClassRef is a multi-factor class.
fn asserts_mfa(assertion: &Node) -> bool {
    assertion
        .children
        .iter()
        .filter(|child| child.local_name == "AuthnStatement")
        .filter_map(|statement| child_path(statement, &["AuthnContext", "AuthnContextClassRef"]))
        .any(|class| MFA_CONTEXTS.contains(&class.text.trim()))
}

/// One `@`, something on each side, no whitespace, at most 254 bytes.
fn looks_like_email(text: &str) -> bool {
    let parts: Vec<&str> = text.split('@').collect();
    text.len() <= 254
        && parts.len() == 2
        && parts.iter().all(|part| !part.is_empty())
        && !text
            .chars()
            .any(|character| character.is_whitespace() || character.is_control())
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
