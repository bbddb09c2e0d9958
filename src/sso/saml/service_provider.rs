//! This server as a SAML service provider of one organisation: its entity id, its ACS URL, its
//! metadata document and the AuthnRequest that starts a sign-in.
//!
//! Invariants: the entity id is the metadata URL with `?org=<org id>`, stable for the
//! organisation as long as the base URL is; AuthnRequests are unsigned (the metadata says so)
//! and sent with the HTTP-Redirect binding when the IdP offers it, else HTTP-POST.

use saml_rs::{
    AcsEndpoint, EntityId, RelayStateParam, Saml, SpConfig, SpValidationPolicy, StartSso,
    XmlSignatureProfile,
};

use super::{IdpMetadata, SamlError};

/// Our side of one organisation's SAML set-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceProvider {
    /// Our `entityID`: the Audience every accepted Assertion must name.
    pub entity_id: String,
    /// The ACS URL: the Destination and Recipient every accepted Response must name.
    pub acs_url: String,
}

/// A started sign-in: the AuthnRequest's id and where to send the browser.
#[derive(Debug, Clone)]
pub struct StartedRequest {
    pub request_id: String,
    /// The IdP URL with `SAMLRequest` and `RelayState` (HTTP-Redirect), or `None` when the IdP
    /// takes only HTTP-POST and `post_form` is to be rendered instead.
    pub redirect_url: Option<String>,
    /// The IdP URL and the form fields of the HTTP-POST binding.
    pub post_form: Option<(String, Vec<(String, String)>)>,
}

impl ServiceProvider {
    /// The service provider of `org` on a server reached at `base` (no trailing slash).
    pub fn for_org(base: &str, org: &str) -> ServiceProvider {
        let base = base.trim_end_matches('/');
        ServiceProvider {
            entity_id: format!("{base}/api/v1/auth/sso/saml/metadata?org={org}"),
            acs_url: format!("{base}/api/v1/auth/sso/saml/acs"),
        }
    }

    /// The `saml-rs` service provider with our policy: a signature on the Response or on the
    /// Assertion, RSA-SHA2 with exclusive canonicalisation and one `#id` reference, an
    /// AudienceRestriction required.
    pub(super) fn saml(&self) -> Result<Saml<saml_rs::Sp>, SamlError> {
        let policy = SpValidationPolicy {
            xml_signatures: XmlSignatureProfile::StrictRsaSha2,
            audience: saml_rs::AudienceValidationPolicy::Validate,
            ..SpValidationPolicy::recommended()
        };
        let entity_id = EntityId::try_new(self.entity_id.clone())
            .map_err(|error| SamlError::Refused(error.to_string()))?;
        let acs = AcsEndpoint::post(self.acs_url.clone())
            .map_err(|error| SamlError::Refused(error.to_string()))?;
        let config = SpConfig::builder(entity_id)
            .acs_endpoint(acs)
            .validation(policy)
            .build()
            .map_err(|error| SamlError::Refused(error.to_string()))?;
        Saml::sp(config).map_err(|error| SamlError::Refused(error.to_string()))
    }

    /// An AuthnRequest to `idp`, carrying `relay_state` back to us.
    pub fn start(&self, idp: &IdpMetadata, relay_state: &str) -> Result<StartedRequest, SamlError> {
        let sp = self.saml()?;
        let relay = RelayStateParam::try_from_option(Some(relay_state.to_owned()))
            .map_err(|error| SamlError::Refused(error.to_string()))?;
        let options = match idp.sso_redirect {
            Some(_) => StartSso::redirect(),
            None => StartSso::post(),
        }
        .relay_state(relay);
        let started = sp
            .start_sso(idp.descriptor(), options)
            .map_err(|error| SamlError::Refused(error.to_string()))?;
        let request_id = started.pending.request_id().as_str().to_owned();
        let redirect_url = started.outbound.redirect_url().ok().map(str::to_owned);
        let post_form = started.outbound.post_form().ok().map(|form| {
            let fields = form
                .fields()
                .iter()
                .map(|field| (field.name().to_owned(), field.value().to_owned()))
                .collect();
            (form.action().as_str().to_owned(), fields)
        });
        Ok(StartedRequest {
            request_id,
            redirect_url,
            post_form,
        })
    }

    /// Our metadata: HTTP-POST ACS, unsigned AuthnRequests, signed Assertions wanted, e-mail
    /// NameIDs preferred.
    pub fn metadata_xml(&self) -> String {
        let entity_id = xml_attribute(&self.entity_id);
        let acs_url = xml_attribute(&self.acs_url);
        format!(
            concat!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
                "<md:EntityDescriptor xmlns:md=\"urn:oasis:names:tc:SAML:2.0:metadata\" ",
                "entityID=\"{entity_id}\">\n",
                "  <md:SPSSODescriptor AuthnRequestsSigned=\"false\" WantAssertionsSigned=\"true\" ",
                "protocolSupportEnumeration=\"urn:oasis:names:tc:SAML:2.0:protocol\">\n",
                "    <md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
                "</md:NameIDFormat>\n",
                "    <md:AssertionConsumerService ",
                "Binding=\"urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST\" ",
                "Location=\"{acs_url}\" index=\"0\" isDefault=\"true\"/>\n",
                "  </md:SPSSODescriptor>\n",
                "</md:EntityDescriptor>\n"
            ),
            entity_id = entity_id,
            acs_url = acs_url
        )
    }
}

/// `text` escaped for an XML attribute value in double quotes.
fn xml_attribute(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::super::test_idp;
    use super::*;

    #[test]
    fn metadata_names_entity_id_and_acs_and_wants_signed_assertions() {
        let sp = ServiceProvider::for_org("https://lookout.example/", "org_1&2");
        let xml = sp.metadata_xml();
        assert!(xml.contains(
            "entityID=\"https://lookout.example/api/v1/auth/sso/saml/metadata?org=org_1&amp;2\""
        ));
        assert!(xml.contains("Location=\"https://lookout.example/api/v1/auth/sso/saml/acs\""));
        assert!(xml.contains("AuthnRequestsSigned=\"false\" WantAssertionsSigned=\"true\""));
        // The document is one our own parser (the one that reads IdP metadata) accepts.
        saml_rs::SpDescriptor::from_metadata_xml(
            &xml,
            saml_rs::MetadataTrustPolicy::UnsignedForCompatibility,
        )
        .expect("our metadata parses");
    }

    #[test]
    fn start_redirects_with_a_deflated_request_and_relay_state() {
        let sp = test_idp::service_provider();
        let idp = IdpMetadata::parse(&test_idp::metadata_xml()).expect("metadata");
        let started = sp.start(&idp, "org_1").expect("start");
        let url = url::Url::parse(started.redirect_url.as_deref().expect("redirect")).unwrap();
        assert!(url.as_str().starts_with(test_idp::IDP_SSO_URL));
        let query: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
        assert_eq!(query.get("RelayState").map(String::as_str), Some("org_1"));
        let request = test_idp::inflate(query.get("SAMLRequest").expect("SAMLRequest"));
        assert!(request.contains(&format!("ID=\"{}\"", started.request_id)));
        assert!(request.contains(&sp.acs_url));
    }
}
