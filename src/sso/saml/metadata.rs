//! The identity provider's metadata, as the organisation's owner gives it: its entity id, its
//! single sign-on endpoints and its signing certificates.
//!
//! Invariants: the document is at most `MAX_METADATA_BYTES`; a DTD, an entity or a second
//! root is refused by the parser before anything is read; a document without a signing
//! certificate or without an HTTP-Redirect or HTTP-POST sign-on endpoint is refused, so a
//! stored configuration can always start and verify a sign-in.

use saml_rs::constants::{Binding, CertUse};
use saml_rs::{IdpDescriptor, MetadataTrustPolicy};

use super::SamlError;

/// The largest metadata document accepted (real ones are a few KiB; Entra ID's are ~10 KiB).
pub const MAX_METADATA_BYTES: usize = 256 * 1024;

/// A parsed, usable identity-provider metadata document.
#[derive(Debug, Clone)]
pub struct IdpMetadata {
    descriptor: IdpDescriptor,
    /// `SingleSignOnService` with the HTTP-Redirect binding, if any.
    pub sso_redirect: Option<String>,
    /// `SingleSignOnService` with the HTTP-POST binding, if any.
    pub sso_post: Option<String>,
    /// Base64 DER of every `KeyDescriptor` usable for signing.
    pub signing_certificates: Vec<String>,
}

impl IdpMetadata {
    /// Reads `xml`. The metadata itself need not be signed: the owner who pastes it is the
    /// trust anchor (documented in docs/sso.md), as in every mainstream service provider.
    pub fn parse(xml: &str) -> Result<IdpMetadata, SamlError> {
        if xml.len() > MAX_METADATA_BYTES {
            return Err(SamlError::MetadataTooLarge {
                limit: MAX_METADATA_BYTES,
            });
        }
        let descriptor =
            IdpDescriptor::from_metadata_xml(xml, MetadataTrustPolicy::UnsignedForCompatibility)
                .map_err(|error| SamlError::MetadataInvalid(error.to_string()))?;
        let metadata = descriptor.metadata();
        let sso_redirect = metadata.get_single_sign_on_service(Binding::Redirect);
        let sso_post = metadata.get_single_sign_on_service(Binding::Post);
        if sso_redirect.is_none() && sso_post.is_none() {
            return Err(SamlError::MetadataInvalid(
                "no SingleSignOnService with the HTTP-Redirect or HTTP-POST binding".into(),
            ));
        }
        let signing_certificates = metadata.x509_certificates(CertUse::Signing);
        if signing_certificates.is_empty() {
            return Err(SamlError::MetadataInvalid(
                "no signing certificate (KeyDescriptor use=\"signing\" or without use)".into(),
            ));
        }
        Ok(IdpMetadata {
            descriptor,
            sso_redirect,
            sso_post,
            signing_certificates,
        })
    }

    /// The IdP's `entityID`, which every accepted Assertion must name as its Issuer.
    pub fn entity_id(&self) -> &str {
        self.descriptor.entity_id().as_str()
    }

    pub(super) fn descriptor(&self) -> &IdpDescriptor {
        &self.descriptor
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_idp;
    use super::*;

    #[test]
    fn reads_entity_id_endpoints_and_certificates() {
        let metadata = IdpMetadata::parse(&test_idp::metadata_xml()).expect("parse");
        assert_eq!(metadata.entity_id(), test_idp::IDP_ENTITY_ID);
        assert_eq!(
            metadata.sso_redirect.as_deref(),
            Some(test_idp::IDP_SSO_URL)
        );
        assert_eq!(metadata.signing_certificates.len(), 1);
    }

    #[test]
    fn refuses_documents_over_the_limit_before_parsing() {
        let padded = format!(
            "{}<!--{}-->",
            test_idp::metadata_xml(),
            "x".repeat(MAX_METADATA_BYTES)
        );
        assert_eq!(
            IdpMetadata::parse(&padded).unwrap_err(),
            SamlError::MetadataTooLarge {
                limit: MAX_METADATA_BYTES
            }
        );
        let mut at_limit = test_idp::metadata_xml();
        at_limit.push_str(&" ".repeat(MAX_METADATA_BYTES - at_limit.len()));
        assert!(
            IdpMetadata::parse(&at_limit).is_ok(),
            "a document of exactly the limit is read"
        );
    }

    #[test]
    fn refuses_dtds_and_entities() {
        let with_dtd = format!(
            "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>{}",
            test_idp::metadata_xml().trim_start_matches("<?xml version=\"1.0\"?>")
        );
        assert!(matches!(
            IdpMetadata::parse(&with_dtd),
            Err(SamlError::MetadataInvalid(_))
        ));
    }

    #[test]
    fn refuses_metadata_without_a_signing_certificate_or_endpoint() {
        let without_key = test_idp::metadata_xml_with(None, Some(test_idp::IDP_SSO_URL));
        assert!(matches!(
            IdpMetadata::parse(&without_key),
            Err(SamlError::MetadataInvalid(reason)) if reason.contains("signing certificate")
        ));
        let without_endpoint = test_idp::metadata_xml_with(Some(test_idp::IDP_CERT), None);
        assert!(matches!(
            IdpMetadata::parse(&without_endpoint),
            Err(SamlError::MetadataInvalid(_))
        ));
        assert!(matches!(
            IdpMetadata::parse("not xml"),
            Err(SamlError::MetadataInvalid(_))
        ));
    }
}
