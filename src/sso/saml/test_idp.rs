//! A test identity provider for the unit tests: its metadata, and Responses built from a
//! template and signed with the key in `tests/fixtures/saml/` (see the README there), so each
//! refusal can be crafted exactly.

use std::io::Read;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::{Attempt, ServiceProvider};

pub const IDP_ENTITY_ID: &str = "https://idp.test/metadata";
pub const IDP_SSO_URL: &str = "https://idp.test/sso";
pub const IDP_CERT: &str = include_str!("../../../tests/fixtures/saml/idp-cert.pem");
pub const IDP_KEY: &str = include_str!("../../../tests/fixtures/saml/idp-key.pem");
pub const OTHER_CERT: &str = include_str!("../../../tests/fixtures/saml/other-cert.pem");
pub const OTHER_KEY: &str = include_str!("../../../tests/fixtures/saml/other-key.pem");
pub const REQUEST_ID: &str = "_request0001";
pub const ORG: &str = "org_01TEST";
const RSA_SHA256: &str = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";

/// The base64 body of a PEM certificate, as metadata carries it.
fn certificate_body(pem: &str) -> String {
    pem.lines()
        .filter(|line| !line.starts_with("-----"))
        .collect()
}

pub fn metadata_xml_with(cert: Option<&str>, sso_url: Option<&str>) -> String {
    let key = cert
        .map(|cert| {
            format!(
                "<md:KeyDescriptor use=\"signing\"><ds:KeyInfo xmlns:ds=\"http://www.w3.org/2000/09/xmldsig#\"><ds:X509Data><ds:X509Certificate>{}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>",
                certificate_body(cert)
            )
        })
        .unwrap_or_default();
    let sso = sso_url
        .map(|url| {
            format!(
                "<md:SingleSignOnService Binding=\"urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect\" Location=\"{url}\"/>"
            )
        })
        .unwrap_or_else(|| {
            "<md:SingleSignOnService Binding=\"urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Artifact\" Location=\"https://idp.test/artifact\"/>".into()
        });
    format!(
        "<?xml version=\"1.0\"?><md:EntityDescriptor xmlns:md=\"urn:oasis:names:tc:SAML:2.0:metadata\" entityID=\"{IDP_ENTITY_ID}\"><md:IDPSSODescriptor protocolSupportEnumeration=\"urn:oasis:names:tc:SAML:2.0:protocol\">{key}{sso}</md:IDPSSODescriptor></md:EntityDescriptor>"
    )
}

pub fn metadata_xml() -> String {
    metadata_xml_with(Some(IDP_CERT), Some(IDP_SSO_URL))
}

pub fn service_provider() -> ServiceProvider {
    ServiceProvider::for_org("https://lookout.test", ORG)
}

pub fn attempt() -> Attempt {
    Attempt {
        request_id: REQUEST_ID.into(),
        org: ORG.into(),
        expires_at: i64::MAX,
        test: false,
    }
}

pub fn inflate(base64: &str) -> String {
    let compressed = STANDARD.decode(base64).expect("base64");
    let mut text = String::new();
    flate2::read::DeflateDecoder::new(compressed.as_slice())
        .read_to_string(&mut text)
        .expect("inflate");
    text
}

/// The fields of one Response; each test changes the one it is about.
#[derive(Clone)]
pub struct ResponseParts {
    pub response_id: String,
    pub assertion_id: String,
    pub issuer: String,
    pub destination: String,
    pub recipient: String,
    pub audience: String,
    pub in_response_to: String,
    pub not_before: String,
    pub not_on_or_after: String,
    /// Inserted as is, so a test can put a comment inside.
    pub name_id_xml: String,
    pub attributes: Vec<(String, String)>,
    pub authn_context: String,
}

impl ResponseParts {
    pub fn valid(now: time::OffsetDateTime) -> ResponseParts {
        let format = |at: time::OffsetDateTime| {
            at.format(&time::format_description::well_known::Rfc3339)
                .expect("format")
        };
        let sp = service_provider();
        ResponseParts {
            response_id: "_response0001".into(),
            assertion_id: "_assertion0001".into(),
            issuer: IDP_ENTITY_ID.into(),
            destination: sp.acs_url.clone(),
            recipient: sp.acs_url.clone(),
            audience: sp.entity_id.clone(),
            in_response_to: REQUEST_ID.into(),
            not_before: format(now - time::Duration::seconds(30)),
            not_on_or_after: format(now + time::Duration::minutes(5)),
            name_id_xml: "ada@example.com".into(),
            attributes: vec![
                ("email".into(), "ada@example.com".into()),
                ("displayName".into(), "Ada Lovelace".into()),
            ],
            authn_context: "urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"
                .into(),
        }
    }

    pub fn assertion_xml(&self) -> String {
        let p = self;
        let attributes: String = p
            .attributes
            .iter()
            .map(|(name, value)| {
                format!("<saml:Attribute Name=\"{name}\"><saml:AttributeValue>{value}</saml:AttributeValue></saml:Attribute>")
            })
            .collect();
        format!(
            concat!(
                "<saml:Assertion xmlns:saml=\"urn:oasis:names:tc:SAML:2.0:assertion\" ID=\"{aid}\" Version=\"2.0\" IssueInstant=\"{nb}\">",
                "<saml:Issuer>{issuer}</saml:Issuer>",
                "<saml:Subject><saml:NameID Format=\"urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress\">{name_id}</saml:NameID>",
                "<saml:SubjectConfirmation Method=\"urn:oasis:names:tc:SAML:2.0:cm:bearer\">",
                "<saml:SubjectConfirmationData InResponseTo=\"{irt}\" NotOnOrAfter=\"{nooa}\" Recipient=\"{recipient}\"/>",
                "</saml:SubjectConfirmation></saml:Subject>",
                "<saml:Conditions NotBefore=\"{nb}\" NotOnOrAfter=\"{nooa}\"><saml:AudienceRestriction><saml:Audience>{audience}</saml:Audience></saml:AudienceRestriction></saml:Conditions>",
                "<saml:AuthnStatement AuthnInstant=\"{nb}\" SessionIndex=\"_session1\"><saml:AuthnContext><saml:AuthnContextClassRef>{context}</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>",
                "<saml:AttributeStatement>{attributes}</saml:AttributeStatement>",
                "</saml:Assertion>"
            ),
            aid = p.assertion_id,
            nb = p.not_before,
            nooa = p.not_on_or_after,
            issuer = p.issuer,
            name_id = p.name_id_xml,
            irt = p.in_response_to,
            recipient = p.recipient.replace('&', "&amp;"),
            audience = p.audience.replace('&', "&amp;"),
            context = p.authn_context,
            attributes = attributes,
        )
    }

    /// The Response around `assertion` (an Assertion's XML, signed or not).
    pub fn response_xml(&self, assertion: &str) -> String {
        let p = self;
        format!(
            concat!(
                "<samlp:Response xmlns:samlp=\"urn:oasis:names:tc:SAML:2.0:protocol\" xmlns:saml=\"urn:oasis:names:tc:SAML:2.0:assertion\" ",
                "ID=\"{rid}\" Version=\"2.0\" IssueInstant=\"{nb}\" Destination=\"{destination}\" InResponseTo=\"{irt}\">",
                "<saml:Issuer>{issuer}</saml:Issuer>",
                "<samlp:Status><samlp:StatusCode Value=\"urn:oasis:names:tc:SAML:2.0:status:Success\"/></samlp:Status>",
                "{assertion}</samlp:Response>"
            ),
            rid = p.response_id,
            nb = p.not_before,
            destination = p.destination,
            irt = p.in_response_to,
            issuer = p.issuer,
            assertion = assertion,
        )
    }
}

/// `xml` with its Assertion (`sign_response` false) or its Response signed by `key_pem`.
pub fn sign(xml: &str, sign_response: bool, key_pem: &str, cert_pem: &str) -> String {
    let key = saml_rs::crypto::keys::load_private_key(key_pem, None).expect("key");
    saml_rs::crypto::construct_saml_signature(
        xml,
        sign_response,
        &key,
        cert_pem,
        RSA_SHA256,
        &[],
        None,
    )
    .expect("sign")
}

/// The signed Assertion of `parts`, in its Response, as the form's base64 value.
pub fn signed_response(parts: &ResponseParts) -> String {
    let response = parts.response_xml(&parts.assertion_xml());
    encode(&sign(&response, false, IDP_KEY, IDP_CERT))
}

pub fn encode(xml: &str) -> String {
    STANDARD.encode(xml)
}
