//! `SamlError`: why a SAML configuration or sign-in is refused, each with the stable `code`
//! the sign-in page receives as `sso_error` and the audit log records.
//!
//! Invariant: the cause from `saml-rs` is logged, never shown; the browser sees only the code.

/// A refused identity-provider metadata document or a refused sign-in.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SamlError {
    #[error("identity provider metadata is over {limit} bytes")]
    MetadataTooLarge { limit: usize },
    #[error("identity provider metadata is not usable: {0}")]
    MetadataInvalid(String),
    #[error("SAMLResponse is over {limit} bytes")]
    ResponseTooLarge { limit: usize },
    #[error("SAMLResponse is not a readable SAML Response: {0}")]
    ResponseMalformed(String),
    #[error("the Response must carry exactly one Assertion, found {found}")]
    AssertionCount { found: usize },
    #[error("the Response repeats the ID {0}")]
    DuplicateId(String),
    #[error("no valid signature by the identity provider's certificates: {0}")]
    Signature(String),
    #[error("the Issuer is not the identity provider's entity id")]
    WrongIssuer,
    #[error("the Audience is not this service provider")]
    WrongAudience,
    #[error("the Destination or Recipient is not this service provider's ACS URL")]
    WrongRecipient,
    #[error("InResponseTo or RelayState does not match the sign-in this browser started")]
    WrongRequest,
    #[error("the Assertion is outside its validity window")]
    Expired,
    #[error("the Assertion was already used")]
    Replayed,
    #[error("the identity provider refused the sign-in: {0}")]
    IdpRefused(String),
    #[error("the Assertion names no e-mail address")]
    NoEmail,
    #[error("no sign-in attempt of this browser is pending, or it expired")]
    NoAttempt,
    #[error("the Response was refused: {0}")]
    Refused(String),
}

impl SamlError {
    /// The code of `/login?sso_error=<code>` and of the audit entry.
    pub fn code(&self) -> &'static str {
        match self {
            SamlError::MetadataTooLarge { .. } => "saml_metadata_too_large",
            SamlError::MetadataInvalid(_) => "saml_metadata_invalid",
            SamlError::ResponseTooLarge { .. } => "saml_response_too_large",
            SamlError::ResponseMalformed(_) => "saml_response_malformed",
            SamlError::AssertionCount { .. } => "saml_assertion_count",
            SamlError::DuplicateId(_) => "saml_duplicate_id",
            SamlError::Signature(_) => "saml_signature",
            SamlError::WrongIssuer => "saml_issuer",
            SamlError::WrongAudience => "saml_audience",
            SamlError::WrongRecipient => "saml_recipient",
            SamlError::WrongRequest => "saml_in_response_to",
            SamlError::Expired => "saml_expired",
            SamlError::Replayed => "saml_replayed",
            SamlError::IdpRefused(_) => "saml_idp_refused",
            SamlError::NoEmail => "saml_no_email",
            SamlError::NoAttempt => "saml_no_attempt",
            SamlError::Refused(_) => "saml_refused",
        }
    }

    /// Our reading of a refusal by `saml-rs`. The crate's enum is open (`non_exhaustive`), so
    /// a variant it adds later lands in `Refused`, a refusal all the same.
    pub(super) fn from_library(error: saml_rs::SamlError) -> SamlError {
        use saml_rs::SamlError as Library;
        match error {
            Library::IssuerMismatch { .. } | Library::UnmatchIssuer => SamlError::WrongIssuer,
            Library::AudienceMismatch { .. } | Library::UnmatchAudience => SamlError::WrongAudience,
            Library::DestinationMismatch { .. } | Library::UnmatchDestination => {
                SamlError::WrongRecipient
            }
            Library::SubjectConfirmationInvalid { reason } => subject_confirmation(reason),
            Library::InResponseToMismatch { .. }
            | Library::InvalidInResponseTo
            | Library::RelayStateMismatch { .. } => SamlError::WrongRequest,
            Library::TimeWindowInvalid { .. } | Library::ExpiredSession => SamlError::Expired,
            Library::ReplayDetected { .. } => SamlError::Replayed,
            Library::StatusNotSuccess { .. } | Library::FailedStatus { .. } => {
                SamlError::IdpRefused(error.to_string())
            }
            Library::SignatureMissing
            | Library::SignatureVerification { .. }
            | Library::ReferenceResolution { .. }
            | Library::SignedReferenceMismatch
            | Library::AssertionSignatureRequired
            | Library::AlgorithmUnsupported
            | Library::NoTrustedCertificate
            | Library::CertificateMismatch
            | Library::PotentialWrappingAttack
            | Library::FailedToVerifySignature
            | Library::UnmatchCertificate => SamlError::Signature(error.to_string()),
            Library::Deflate(_) | Library::Base64(_) | Library::Xml(_) => {
                SamlError::ResponseMalformed(error.to_string())
            }
            other => SamlError::Refused(other.to_string()),
        }
    }
}

/// A bearer SubjectConfirmation refused by `saml-rs`, by its reason.
fn subject_confirmation(reason: saml_rs::error::SubjectConfirmationReason) -> SamlError {
    use saml_rs::error::SubjectConfirmationReason as Reason;
    match reason {
        Reason::RecipientMismatch => SamlError::WrongRecipient,
        Reason::InResponseToMismatch => SamlError::WrongRequest,
        Reason::TimeWindowInvalid | Reason::MissingNotOnOrAfter => SamlError::Expired,
        other => SamlError::Refused(format!("subject confirmation: {other}")),
    }
}
