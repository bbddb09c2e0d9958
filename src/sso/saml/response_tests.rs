//! Each refusal of `verify_response`, with a Response crafted and signed for it.

use std::time::SystemTime;

use super::super::test_idp::{self, ResponseParts};
use super::*;

fn now() -> (SystemTime, time::OffsetDateTime) {
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap();
    (SystemTime::from(now), now)
}

fn verify_at(saml_response: &str, at: SystemTime) -> Result<VerifiedAssertion, SamlError> {
    let idp = IdpMetadata::parse(&test_idp::metadata_xml()).expect("metadata");
    verify_response(
        &test_idp::service_provider(),
        &idp,
        &test_idp::attempt(),
        saml_response,
        Some(test_idp::ORG),
        at,
    )
}

fn verify(saml_response: &str) -> Result<VerifiedAssertion, SamlError> {
    verify_at(saml_response, now().0)
}

fn verify_parts(change: impl FnOnce(&mut ResponseParts)) -> Result<VerifiedAssertion, SamlError> {
    let mut parts = ResponseParts::valid(now().1);
    change(&mut parts);
    verify(&test_idp::signed_response(&parts))
}

#[test]
fn a_signed_assertion_signs_in() {
    let verified = verify_parts(|_| {}).expect("valid");
    assert_eq!(verified.assertion_id, "_assertion0001");
    assert_eq!(verified.issuer, test_idp::IDP_ENTITY_ID);
    assert_eq!(verified.subject, "ada@example.com");
    assert_eq!(verified.email, "ada@example.com");
    assert_eq!(verified.name.as_deref(), Some("Ada Lovelace"));
    assert!(!verified.mfa);
}

#[test]
fn a_signed_response_around_an_unsigned_assertion_signs_in() {
    let parts = ResponseParts::valid(now().1);
    let response = parts.response_xml(&parts.assertion_xml());
    let signed = test_idp::sign(&response, true, test_idp::IDP_KEY, test_idp::IDP_CERT);
    assert_eq!(
        verify(&test_idp::encode(&signed)).expect("valid").email,
        "ada@example.com"
    );
}

#[test]
fn an_unsigned_assertion_is_refused() {
    let parts = ResponseParts::valid(now().1);
    let unsigned = parts.response_xml(&parts.assertion_xml());
    assert!(matches!(
        verify(&test_idp::encode(&unsigned)),
        Err(SamlError::Signature(_))
    ));
}

#[test]
fn a_signature_by_another_key_is_refused() {
    let parts = ResponseParts::valid(now().1);
    let response = parts.response_xml(&parts.assertion_xml());
    let signed = test_idp::sign(&response, false, test_idp::OTHER_KEY, test_idp::OTHER_CERT);
    assert!(matches!(
        verify(&test_idp::encode(&signed)),
        Err(SamlError::Signature(_))
    ));
}

#[test]
fn a_change_after_signing_is_refused() {
    let parts = ResponseParts::valid(now().1);
    let response = parts.response_xml(&parts.assertion_xml());
    let signed = test_idp::sign(&response, false, test_idp::IDP_KEY, test_idp::IDP_CERT);
    let changed = signed.replace("ada@example.com", "eve@example.com");
    assert!(matches!(
        verify(&test_idp::encode(&changed)),
        Err(SamlError::Signature(_))
    ));
}

/// The signed Assertion of `parts`, alone.
fn signed_assertion(parts: &ResponseParts) -> String {
    let signed = test_idp::sign(
        &parts.response_xml(&parts.assertion_xml()),
        false,
        test_idp::IDP_KEY,
        test_idp::IDP_CERT,
    );
    let start = signed.find("<saml:Assertion").unwrap();
    let end = signed.find("</saml:Assertion>").unwrap() + "</saml:Assertion>".len();
    signed[start..end].to_owned()
}

#[test]
fn signature_wrapping_is_refused() {
    let parts = ResponseParts::valid(now().1);
    let genuine = signed_assertion(&parts);
    let evil_parts = ResponseParts {
        name_id_xml: "eve@example.com".into(),
        attributes: vec![("email".into(), "eve@example.com".into())],
        ..parts.clone()
    };
    // XSW1–3 style: the evil Assertion first, the signed one hidden in an Extensions element.
    let wrapped = parts.response_xml(&format!(
        "{}<samlp:Extensions>{genuine}</samlp:Extensions>",
        evil_parts.assertion_xml()
    ));
    assert_eq!(
        verify(&test_idp::encode(&wrapped)).unwrap_err(),
        SamlError::DuplicateId("_assertion0001".into())
    );
    // The same with a fresh ID on the evil one: two Assertions.
    let evil_with_own_id = ResponseParts {
        assertion_id: "_evil".into(),
        ..evil_parts.clone()
    };
    let two = parts.response_xml(&format!("{}{genuine}", evil_with_own_id.assertion_xml()));
    assert_eq!(
        verify(&test_idp::encode(&two)).unwrap_err(),
        SamlError::AssertionCount { found: 2 }
    );
    // XSW7/8 style: the signed Assertion inside the evil one's Subject.
    let evil = evil_with_own_id.assertion_xml().replace(
        "</saml:Subject>",
        &format!(
            "<saml:SubjectConfirmationData>{genuine}</saml:SubjectConfirmationData></saml:Subject>"
        ),
    );
    let nested = parts.response_xml(&evil);
    assert_eq!(
        verify(&test_idp::encode(&nested)).unwrap_err(),
        SamlError::AssertionCount { found: 2 }
    );
}

#[test]
fn two_signed_assertions_or_an_encrypted_one_are_refused() {
    let parts = ResponseParts::valid(now().1);
    let second = ResponseParts {
        assertion_id: "_assertion0002".into(),
        ..parts.clone()
    };
    let both = parts.response_xml(&format!(
        "{}{}",
        signed_assertion(&parts),
        signed_assertion(&second)
    ));
    assert_eq!(
        verify(&test_idp::encode(&both)).unwrap_err(),
        SamlError::AssertionCount { found: 2 }
    );
    let encrypted = parts.response_xml("<saml:EncryptedAssertion/>");
    assert_eq!(
        verify(&test_idp::encode(&encrypted)).unwrap_err(),
        SamlError::AssertionCount { found: 1 }
    );
}

#[test]
fn the_wrong_audience_issuer_recipient_or_destination_is_refused() {
    let result = verify_parts(|parts| parts.audience = "https://other.test/sp".into());
    assert_eq!(result.unwrap_err(), SamlError::WrongAudience);
    let result = verify_parts(|parts| parts.recipient = "https://other.test/acs".into());
    assert_eq!(result.unwrap_err(), SamlError::WrongRecipient);
    let result = verify_parts(|parts| parts.destination = "https://other.test/acs".into());
    assert_eq!(result.unwrap_err(), SamlError::WrongRecipient);
    let result = verify_parts(|parts| parts.issuer = "https://other.test/idp".into());
    assert_eq!(result.unwrap_err(), SamlError::WrongIssuer);
}

#[test]
fn a_response_to_another_request_or_relay_state_is_refused() {
    let result = verify_parts(|parts| parts.in_response_to = "_someone_elses".into());
    assert_eq!(result.unwrap_err(), SamlError::WrongRequest);
    let parts = ResponseParts::valid(now().1);
    let idp = IdpMetadata::parse(&test_idp::metadata_xml()).unwrap();
    let result = verify_response(
        &test_idp::service_provider(),
        &idp,
        &test_idp::attempt(),
        &test_idp::signed_response(&parts),
        Some("org_other"),
        now().0,
    );
    assert_eq!(result.unwrap_err(), SamlError::WrongRequest);
}

#[test]
fn the_validity_window_allows_the_skew_and_no_more() {
    let (at, now) = now();
    let skew = time::Duration::seconds(MAX_SKEW.as_secs() as i64);
    let format = |at: time::OffsetDateTime| {
        at.format(&time::format_description::well_known::Rfc3339)
            .unwrap()
    };
    let mut parts = ResponseParts::valid(now);
    // Expired, but within the skew: accepted; one second beyond it: refused.
    parts.not_before = format(now - time::Duration::minutes(10));
    parts.not_on_or_after = format(now - skew + time::Duration::seconds(1));
    assert!(verify_at(&test_idp::signed_response(&parts), at).is_ok());
    parts.not_on_or_after = format(now - skew - time::Duration::seconds(1));
    assert_eq!(
        verify_at(&test_idp::signed_response(&parts), at).unwrap_err(),
        SamlError::Expired
    );
    // Not yet valid, within the skew: accepted; beyond it: refused.
    let mut parts = ResponseParts::valid(now);
    parts.not_before = format(now + skew - time::Duration::seconds(1));
    assert!(verify_at(&test_idp::signed_response(&parts), at).is_ok());
    parts.not_before = format(now + skew + time::Duration::seconds(1));
    assert_eq!(
        verify_at(&test_idp::signed_response(&parts), at).unwrap_err(),
        SamlError::Expired
    );
}

#[test]
fn a_comment_cannot_truncate_the_name_id_or_email() {
    let verified = verify_parts(|parts| {
        parts.name_id_xml = "user@evil.com<!---->.example.com".into();
        parts.attributes = vec![("email".into(), "user@evil.com<!---->.example.com".into())];
    })
    .expect("valid");
    assert_eq!(verified.subject, "user@evil.com.example.com");
    assert_eq!(verified.email, "user@evil.com.example.com");
}

#[test]
fn multi_factor_contexts_set_mfa() {
    for context in [
        "urn:oasis:names:tc:SAML:2.0:ac:classes:MultiFactor",
        "http://schemas.microsoft.com/claims/multipleauthn",
    ] {
        let verified = verify_parts(|parts| parts.authn_context = context.into()).expect(context);
        assert!(verified.mfa, "{context}");
    }
}

#[test]
fn an_assertion_without_an_email_is_refused() {
    let result = verify_parts(|parts| {
        parts.name_id_xml = "ada".into();
        parts.attributes.clear();
    });
    assert_eq!(result.unwrap_err(), SamlError::NoEmail);
}

#[test]
fn the_replay_cache_keeps_the_id_until_not_on_or_after_and_the_skew() {
    let (at, now) = now();
    let verified = verify_at(&test_idp::signed_response(&ResponseParts::valid(now)), at).unwrap();
    let expected = SystemTime::from(now + time::Duration::minutes(5)) + MAX_SKEW;
    assert!(verified.replay_until >= SystemTime::from(now + time::Duration::minutes(5)));
    assert!(
        verified.replay_until <= expected,
        "{:?}",
        verified.replay_until
    );
}

#[test]
fn oversized_undecodable_or_dtd_bearing_responses_are_refused() {
    let at_limit = "A".repeat(MAX_RESPONSE_BYTES);
    assert!(matches!(
        verify(&at_limit),
        Err(SamlError::ResponseMalformed(_))
    ));
    let over = "A".repeat(MAX_RESPONSE_BYTES + 1);
    assert_eq!(
        verify(&over).unwrap_err(),
        SamlError::ResponseTooLarge {
            limit: MAX_RESPONSE_BYTES
        }
    );
    assert!(matches!(
        verify("%%%"),
        Err(SamlError::ResponseMalformed(_))
    ));
    let parts = ResponseParts::valid(now().1);
    let with_dtd = format!(
        "<!DOCTYPE r [<!ENTITY x \"ada\">]>{}",
        parts.response_xml(&parts.assertion_xml())
    );
    assert!(matches!(
        verify(&test_idp::encode(&with_dtd)),
        Err(SamlError::ResponseMalformed(_))
    ));
}
