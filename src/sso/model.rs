//! SSO's records and the pure rules that check a configuration before it is saved.
//!
//! Invariants: the OIDC client secret is stored sealed (`secrets::seal`), never in clear, and
//! never leaves in an answer. A domain names at most one organisation (the `domain_orgid` index
//! in `db.rs` holds the claim). A default role is never `owner`. Every text is bounded here, so a
//! saved configuration is always small.

use serde::{Deserialize, Serialize};

use crate::accounts::model::{OrgId, Role, UserId};
use crate::clock::Timestamp;
use crate::store::codec::Record;

/// The most domains one organisation may claim.
pub const MAX_DOMAINS: usize = 50;
/// The longest issuer URL, client id or client secret, in bytes.
pub const MAX_FIELD_BYTES: usize = 2048;
/// The largest SAML metadata document kept, in bytes.
pub const MAX_SAML_METADATA_BYTES: usize = 256 * 1024;

/// An organisation's saved SSO configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SsoConfig {
    pub org_id: OrgId,
    pub oidc: Option<OidcSettings>,
    pub saml: Option<SamlSettings>,
    pub default_role: Role,
    /// Lowercase DNS names whose addresses this organisation signs in.
    pub domains: Vec<String>,
    /// Members sign in through SSO only (owners keep a break-glass password path).
    pub required: bool,
    pub updated_at: Timestamp,
}

impl Record for SsoConfig {
    const KIND: &'static str = "sso_config";
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OidcSettings {
    /// The issuer URL exactly as the provider names itself in its discovery document.
    pub issuer: String,
    pub client_id: String,
    /// The client secret, sealed under the server's key (`secrets::seal`).
    pub sealed_client_secret: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamlSettings {
    /// The identity provider's metadata, as given or as fetched from `metadata_url`.
    pub idp_metadata_xml: String,
    /// Where the metadata was fetched from, when it was given by URL.
    pub idp_metadata_url: Option<String>,
}

/// A person's identity at a provider, linked to their Lookout account: `(issuer, subject)` →
/// user. Written when a sign-in creates the account, and when its owner links it while
/// signed in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SsoLink {
    pub issuer: String,
    pub subject: String,
    pub user_id: UserId,
    pub org_id: OrgId,
    pub created_at: Timestamp,
}

impl Record for SsoLink {
    const KIND: &'static str = "sso_link";
}

/// Why a configuration was refused; each names the CONTRACT-style `invalid_*` detail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigRefusal {
    #[error(
        "issuer must be an https URL (http only for a loopback address) of at most {MAX_FIELD_BYTES} bytes"
    )]
    Issuer,
    #[error("client_id must be 1 to {MAX_FIELD_BYTES} bytes")]
    ClientId,
    #[error(
        "client_secret must be 1 to {MAX_FIELD_BYTES} bytes, and is needed when OIDC is first set up"
    )]
    ClientSecret,
    #[error("default_role must be admin, member or viewer")]
    DefaultRole,
    #[error("{0}")]
    Domain(String),
    #[error("{0}")]
    SamlMetadata(String),
}

/// Checks an issuer URL: https, or http to a loopback host; no query or fragment.
pub fn valid_issuer(raw: &str) -> Result<String, ConfigRefusal> {
    if raw.is_empty() || raw.len() > MAX_FIELD_BYTES {
        return Err(ConfigRefusal::Issuer);
    }
    let url = url::Url::parse(raw).map_err(|_| ConfigRefusal::Issuer)?;
    let loopback = match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return Err(ConfigRefusal::Issuer),
    };
    let scheme_ok = url.scheme() == "https" || (url.scheme() == "http" && loopback);
    if !scheme_ok || url.query().is_some() || url.fragment().is_some() || !url.username().is_empty()
    {
        return Err(ConfigRefusal::Issuer);
    }
    // Kept as typed (without a trailing slash): the ID token's `iss` must equal it.
    Ok(raw.trim_end_matches('/').to_string())
}

/// Checks a client id or secret: present and bounded.
pub fn valid_field(raw: &str, refusal: ConfigRefusal) -> Result<String, ConfigRefusal> {
    if raw.is_empty() || raw.len() > MAX_FIELD_BYTES || raw.chars().any(char::is_control) {
        return Err(refusal);
    }
    Ok(raw.to_string())
}

/// A default role: anything but owner.
pub fn valid_default_role(role: Role) -> Result<Role, ConfigRefusal> {
    match role {
        Role::Owner => Err(ConfigRefusal::DefaultRole),
        Role::Admin | Role::Member | Role::Viewer => Ok(role),
    }
}

/// Checks the domain list: lowercase DNS names (at least two labels, letters, digits and
/// inner hyphens, 253 bytes at most), each once, `MAX_DOMAINS` at most.
pub fn valid_domains(raw: &[String]) -> Result<Vec<String>, ConfigRefusal> {
    if raw.len() > MAX_DOMAINS {
        return Err(ConfigRefusal::Domain(format!(
            "at most {MAX_DOMAINS} domains"
        )));
    }
    let mut domains: Vec<String> = Vec::with_capacity(raw.len());
    for domain in raw {
        if !is_dns_name(domain) {
            let shown: String = domain.chars().take(64).collect();
            return Err(ConfigRefusal::Domain(format!(
                "{shown:?} is not a lowercase DNS name"
            )));
        }
        if domains.contains(domain) {
            return Err(ConfigRefusal::Domain(format!("{domain} is listed twice")));
        }
        domains.push(domain.clone());
    }
    Ok(domains)
}

fn is_dns_name(name: &str) -> bool {
    let labels: Vec<&str> = name.split('.').collect();
    name.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

/// SAML metadata kept as given: at most `MAX_SAML_METADATA_BYTES`, and a document
/// `saml::IdpMetadata::parse` reads (an entity id, a sign-on endpoint, a signing certificate).
pub fn valid_saml_metadata(xml: &str) -> Result<String, ConfigRefusal> {
    if xml.len() > MAX_SAML_METADATA_BYTES {
        return Err(ConfigRefusal::SamlMetadata(format!(
            "SAML metadata may have at most {MAX_SAML_METADATA_BYTES} bytes"
        )));
    }
    let trimmed = xml.trim_start();
    let looks_like_xml = trimmed.starts_with('<');
    let has_descriptor = xml.contains("EntityDescriptor");
    if !looks_like_xml || !has_descriptor {
        return Err(ConfigRefusal::SamlMetadata(
            "SAML metadata must be an XML document with an EntityDescriptor".to_string(),
        ));
    }
    super::saml::IdpMetadata::parse(xml)
        .map_err(|error| ConfigRefusal::SamlMetadata(error.to_string()))?;
    Ok(xml.to_string())
}

/// The domain of an e-mail address (lowercase), if it has one.
pub fn email_domain(email: &str) -> Option<String> {
    let (_, domain) = email.rsplit_once('@')?;
    (!domain.is_empty()).then(|| domain.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issuers() {
        let cases = [
            ("https://idp.example.com", true),
            ("https://idp.example.com/realms/x/", true),
            ("http://127.0.0.1:9000", true),
            ("http://localhost:9000/oidc", true),
            ("http://[::1]:9000", true),
            ("http://idp.example.com", false),
            ("https://idp.example.com/?a=b", false),
            ("https://user@idp.example.com", false),
            ("ftp://idp.example.com", false),
            ("not a url", false),
            ("", false),
        ];
        for (issuer, ok) in cases {
            assert_eq!(valid_issuer(issuer).is_ok(), ok, "{issuer}");
        }
        assert_eq!(
            valid_issuer("https://idp.example.com/").unwrap(),
            "https://idp.example.com"
        );
    }

    #[test]
    fn fields_are_bounded_at_their_limit() {
        let at_limit = "x".repeat(MAX_FIELD_BYTES);
        assert!(valid_field(&at_limit, ConfigRefusal::ClientId).is_ok());
        let over = format!("{at_limit}x");
        assert!(valid_field(&over, ConfigRefusal::ClientId).is_err());
        assert!(valid_field("", ConfigRefusal::ClientId).is_err());
        assert!(valid_field("a\nb", ConfigRefusal::ClientId).is_err());
        let long_issuer = format!("https://idp.example.com/{}", "p".repeat(MAX_FIELD_BYTES));
        assert!(valid_issuer(&long_issuer).is_err());
        let label = "a".repeat(63);
        assert!(valid_domains(&[format!("{label}.com")]).is_ok());
        assert!(valid_domains(&[format!("{label}a.com")]).is_err());
    }

    #[test]
    fn domains() {
        let good = vec!["example.com".to_string(), "eu.example-corp.io".to_string()];
        assert_eq!(valid_domains(&good).unwrap(), good);
        for bad in [
            "Example.com",
            "example",
            "-a.com",
            "a..com",
            "a_b.com",
            "exa mple.com",
        ] {
            assert!(valid_domains(&[bad.to_string()]).is_err(), "{bad}");
        }
        let twice = vec!["a.com".to_string(), "a.com".to_string()];
        assert!(valid_domains(&twice).is_err());
        let many: Vec<String> = (0..=MAX_DOMAINS).map(|i| format!("d{i}.com")).collect();
        assert!(valid_domains(&many).is_err());
        assert!(valid_domains(&many[..MAX_DOMAINS]).is_ok());
    }

    #[test]
    fn roles_and_metadata() {
        assert!(valid_default_role(Role::Owner).is_err());
        assert_eq!(valid_default_role(Role::Viewer).unwrap(), Role::Viewer);
        assert!(valid_saml_metadata("<md:EntityDescriptor/>").is_err());
        assert!(valid_saml_metadata("hello").is_err());
        let big = format!("<EntityDescriptor>{}", "x".repeat(MAX_SAML_METADATA_BYTES));
        assert!(valid_saml_metadata(&big).is_err());
        assert_eq!(
            email_domain("a@Example.com").as_deref(),
            Some("example.com")
        );
        assert_eq!(email_domain("nobody"), None);
    }
}
