//! The `openidconnect` types Lookout instantiates, and the rules it adds to the crate's ID-token
//! checks (OpenID Connect Core section 3.1.3.7: issuer, audience, expiry, nonce and signature
//! by a key of the provider's set are the crate's): the accepted algorithms, the clock-skew
//! leeway, a verified e-mail address (with Entra ID's `xms_edov`), and `amr` → MFA.
//!
//! Invariants: only the asymmetric algorithms in `accepted_algs` verify (never `none`, never an
//! HMAC); `exp` is honoured with `LEEWAY_SECONDS` of skew on Lookout's clock; an e-mail counts
//! as verified only when `email_verified` is `true` (or `"true"`), or, for an issuer under
//! `ENTRA_ISSUER_PREFIX` only, when `xms_edov` is `true`.

use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreErrorResponseType, CoreGenderClaim, CoreJsonWebKey,
    CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm, CoreRevocableToken,
    CoreRevocationErrorResponse, CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    EmptyExtraTokenFields, EndpointMaybeSet, EndpointNotSet, EndpointSet, IdTokenFields,
    StandardErrorResponse, StandardTokenResponse,
};
use serde::{Deserialize, Serialize};

/// Clock skew allowed on `exp`.
pub const LEEWAY_SECONDS: i64 = 60;
/// Entra ID (Azure AD) issuers: `https://login.microsoftonline.com/<tenant>/v2.0`.
pub const ENTRA_ISSUER_PREFIX: &str = "https://login.microsoftonline.com/";

/// The claims Lookout reads beyond the standard ones.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct ExtraClaims {
    /// Entra ID's optional claim: the e-mail's domain owner is verified (Entra sends no
    /// `email_verified`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xms_edov: Option<serde_json::Value>,
}

impl openidconnect::AdditionalClaims for ExtraClaims {}

pub type IdToken = openidconnect::IdToken<
    ExtraClaims,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
>;
pub type IdTokenClaims = openidconnect::IdTokenClaims<ExtraClaims, CoreGenderClaim>;
pub type TokenAnswer = StandardTokenResponse<
    IdTokenFields<
        ExtraClaims,
        EmptyExtraTokenFields,
        CoreGenderClaim,
        CoreJweContentEncryptionAlgorithm,
        CoreJwsSigningAlgorithm,
    >,
    CoreTokenType,
>;
/// The client a provider's metadata makes: authorization endpoint set, token endpoint from
/// discovery.
pub type OidcClient = openidconnect::Client<
    ExtraClaims,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    TokenAnswer,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// The signature algorithms accepted in ID tokens.
pub fn accepted_algs() -> Vec<CoreJwsSigningAlgorithm> {
    vec![
        CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
        CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384,
        CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512,
        CoreJwsSigningAlgorithm::RsaSsaPssSha256,
        CoreJwsSigningAlgorithm::EcdsaP256Sha256,
        CoreJwsSigningAlgorithm::EcdsaP384Sha384,
        CoreJwsSigningAlgorithm::EdDsa,
    ]
}

/// Whether the provider vouches for the e-mail address: `email_verified: true`, or for an
/// Entra ID issuer its `xms_edov: true`.
pub fn email_verified(issuer: &str, email_verified: Option<bool>, extra: &ExtraClaims) -> bool {
    if email_verified == Some(true) {
        return true;
    }
    let entra = issuer.starts_with(ENTRA_ISSUER_PREFIX);
    let edov = match &extra.xms_edov {
        Some(serde_json::Value::Bool(verified)) => *verified,
        Some(serde_json::Value::String(text)) => text == "true",
        _ => false,
    };
    entra && edov && email_verified.is_none()
}

/// The provider says the person used more than one factor (RFC 8176 `mfa` in `amr`).
pub fn mfa(claims: &IdTokenClaims) -> bool {
    claims
        .auth_method_refs()
        .is_some_and(|amr| amr.iter().any(|method| method.as_str() == "mfa"))
}

/// For an ID token the crate could not even parse: whether its (unverified) payload carries an
/// `email_verified` that is neither a boolean nor `"true"`/`"false"`, so the refusal names the
/// e-mail rather than a malformed token. Nothing from such a token is trusted or stored.
pub fn malformed_email_verified(raw_token: &str) -> bool {
    use base64::Engine;
    let Some(payload) = raw_token.split('.').nth(1) else {
        return false;
    };
    let Ok(json) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload) else {
        return false;
    };
    let Ok(claims) = serde_json::from_slice::<serde_json::Value>(&json) else {
        return false;
    };
    match claims.get("email_verified") {
        None | Some(serde_json::Value::Bool(_)) => false,
        Some(serde_json::Value::String(text)) => text != "true" && text != "false",
        Some(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edov(value: serde_json::Value) -> ExtraClaims {
        ExtraClaims {
            xms_edov: Some(value),
        }
    }

    #[test]
    fn email_verified_needs_the_claim_or_entras_domain_owner_flag() {
        let entra = "https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0";
        let other = "https://idp.example.com";
        let none = ExtraClaims::default();
        assert!(email_verified(other, Some(true), &none));
        assert!(email_verified(entra, Some(true), &none));
        assert!(!email_verified(other, None, &none));
        assert!(!email_verified(other, Some(false), &none));
        // Entra omits email_verified and says xms_edov instead.
        assert!(email_verified(entra, None, &edov(serde_json::json!(true))));
        assert!(email_verified(
            entra,
            None,
            &edov(serde_json::json!("true"))
        ));
        assert!(!email_verified(
            entra,
            None,
            &edov(serde_json::json!(false))
        ));
        assert!(!email_verified(entra, None, &edov(serde_json::json!(1))));
        assert!(!email_verified(entra, None, &none));
        // An explicit `false` wins over xms_edov.
        assert!(!email_verified(
            entra,
            Some(false),
            &edov(serde_json::json!(true))
        ));
        // Only Entra's issuers are trusted with xms_edov.
        assert!(!email_verified(other, None, &edov(serde_json::json!(true))));
        let lookalike = "https://login.microsoftonline.com.evil.example/x";
        assert!(!email_verified(
            lookalike,
            None,
            &edov(serde_json::json!(true))
        ));
    }

    #[test]
    fn a_malformed_email_verified_is_recognised_in_an_unparsed_token() {
        use base64::Engine;
        let token = |claims: serde_json::Value| {
            let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(serde_json::to_vec(&claims).unwrap());
            format!("eyJhbGciOiJSUzI1NiJ9.{payload}.sig")
        };
        assert!(malformed_email_verified(&token(
            serde_json::json!({"email_verified": "yes"})
        )));
        assert!(malformed_email_verified(&token(
            serde_json::json!({"email_verified": 1})
        )));
        assert!(!malformed_email_verified(&token(
            serde_json::json!({"email_verified": true})
        )));
        assert!(!malformed_email_verified(&token(
            serde_json::json!({"email_verified": "false"})
        )));
        assert!(!malformed_email_verified(&token(serde_json::json!({}))));
        assert!(!malformed_email_verified("not a token"));
    }
}
