//! `Caller`: the authenticated principal of a request, and the role guards built on it
//! (`Viewer`, `Member`, `Admin`, `Owner`). A handler's signature states what it requires.
//!
//! Order of checks (CONTRACT section 2): a credential must be present and valid (401), a
//! session must not be revoked (401 `session_revoked`), a cookie-authenticated unsafe request
//! must pass CSRF (403 `csrf_failed`); then, for the caller's organisation, the IP allowlist
//! (403 `ip_not_allowed`), two-factor enforcement (403 `two_factor_enrolment_required`) and the
//! per-credential rate limit (429). API keys are accepted only in `Authorization: Bearer`, never
//! in a query string, and act with their issuer's current role.
//!
//! The lookups (org policy, 2FA state, an API key's issuer) are a few reads of cached pages in
//! one redb read transaction, done inline: they cost microseconds, less than a hop to a
//! blocking thread. Revocation lives in memory (`revocation.rs`).

use std::net::IpAddr;

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{Method, header};
use axum_extra::extract::cookie::CookieJar;

use super::model::ApiKeyId;
use super::tokens::{Claims, TokenKind};
use super::{Auth, CSRF_HEADER, SESSION_COOKIE, db};
use crate::accounts;
use crate::accounts::model::{OrgId, Role, UserId};
use crate::http::extract::ClientAddr;
use crate::http::{ApiError, ErrorCode};
use crate::store::StoreError;

/// API keys are `lk_` + 43 base64url characters.
pub const API_KEY_PREFIX: &str = "lk_";
pub const API_KEY_LEN: usize = 46;

/// Routes a member of a 2FA-enforcing org may use before enrolling.
const ENROLMENT_ROUTES: &[(&str, &str)] = &[
    ("GET", "/api/v1/auth/me"),
    ("POST", "/api/v1/auth/logout"),
    ("POST", "/api/v1/auth/2fa/setup"),
    ("POST", "/api/v1/auth/2fa/enable"),
    // Leaving for another organisation of the person's is no access to this one's data.
    ("GET", "/api/v1/auth/orgs"),
    ("POST", "/api/v1/auth/switch-org"),
];

#[derive(Debug, Clone)]
pub enum Credential {
    /// A cookie session, with its verified claims.
    Session(Box<Claims>),
    ApiKey(ApiKeyId),
}

#[derive(Debug, Clone)]
pub struct Caller {
    pub user_id: UserId,
    pub org_id: OrgId,
    pub role: Role,
    pub credential: Credential,
    pub client: IpAddr,
}

impl Caller {
    pub fn actor(&self) -> super::audit::Actor {
        super::audit::Actor {
            user_id: Some(self.user_id.clone()),
            email: None,
            ip: Some(self.client.to_string()),
        }
    }

    /// The session claims when the caller signed in with a cookie.
    pub fn session(&self) -> Option<&Claims> {
        match &self.credential {
            Credential::Session(claims) => Some(claims),
            Credential::ApiKey(_) => None,
        }
    }

    fn rate_key(&self) -> String {
        match &self.credential {
            Credential::Session(claims) => claims.sub.to_string(),
            Credential::ApiKey(id) => id.to_string(),
        }
    }
}

impl<S> FromRequestParts<S> for Caller
where
    Auth: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        if let Some(caller) = parts.extensions.get::<Caller>() {
            return Ok(caller.clone());
        }
        let auth = Auth::from_ref(state);
        let ClientAddr(client) = ClientAddr::from_request_parts(parts, state).await?;
        let caller = authenticate(&auth, parts, client)?;
        authorize(&auth, parts, &caller)?;
        parts.extensions.insert(caller.clone());
        Ok(caller)
    }
}

/// Finds and checks the credential; returns who is calling.
fn authenticate(auth: &Auth, parts: &Parts, client: IpAddr) -> Result<Caller, ApiError> {
    if let Some(value) = parts.headers.get(header::AUTHORIZATION) {
        let value = value.to_str().unwrap_or("");
        // The scheme is case-insensitive (RFC 9110 section 11.1).
        let bearer = value
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"));
        let Some(secret) = bearer.map(|(_, secret)| secret.trim()) else {
            return Err(ApiError::new(
                ErrorCode::Unauthorized,
                "use Authorization: Bearer <API key>",
            ));
        };
        return authenticate_api_key(auth, secret, client);
    }
    let jar = CookieJar::from_headers(&parts.headers);
    let Some(cookie) = jar.get(SESSION_COOKIE) else {
        return Err(ApiError::new(
            ErrorCode::Unauthorized,
            "sign in or send an API key",
        ));
    };
    let now = auth.clock().now();
    let claims = auth
        .signer()
        .verify(TokenKind::Session, cookie.value(), now)
        .map_err(|err| {
            ApiError::new(ErrorCode::Unauthorized, format!("session rejected: {err}"))
        })?;
    if auth.revocations().is_revoked(&claims) {
        return Err(ApiError::new(
            ErrorCode::SessionRevoked,
            "this session has been ended; sign in again",
        ));
    }
    check_csrf(auth, parts, &claims)?;
    let role = claims
        .role
        .ok_or_else(|| ApiError::new(ErrorCode::Unauthorized, "session has no role"))?;
    Ok(Caller {
        user_id: claims.sub.clone(),
        org_id: claims.org.clone(),
        role,
        credential: Credential::Session(Box::new(claims)),
        client,
    })
}

fn authenticate_api_key(auth: &Auth, secret: &str, client: IpAddr) -> Result<Caller, ApiError> {
    let invalid = || {
        ApiError::new(
            ErrorCode::InvalidApiKey,
            "the API key is unknown, revoked or expired",
        )
    };
    if !secret.starts_with(API_KEY_PREFIX) || secret.len() != API_KEY_LEN {
        return Err(invalid());
    }
    let digest = crate::secrets::digest_hex(secret);
    let now = auth.clock().now();
    let found = auth.store().read_blocking(|txn| {
        let Some(key) = db::find_api_key_by_digest(txn, &digest)? else {
            return Ok::<_, StoreError>(None);
        };
        let membership = accounts::get_membership(txn, &key.org_id, &key.user_id)?;
        Ok(Some((key, membership)))
    })?;
    // The key must be usable and its issuer still a member: it acts with the issuer's current role.
    let Some((key, Some(membership))) = found else {
        return Err(invalid());
    };
    if !key.usable_at(now) {
        return Err(invalid());
    }
    auth.key_usage().note(&key.id, now);
    Ok(Caller {
        user_id: key.user_id,
        org_id: key.org_id,
        role: membership.role,
        credential: Credential::ApiKey(key.id),
        client,
    })
}

/// Double-submit CSRF for cookie sessions on unsafe methods, plus a same-origin check.
fn check_csrf(auth: &Auth, parts: &Parts, claims: &Claims) -> Result<(), ApiError> {
    if matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    let origin = parts.headers.get(header::ORIGIN);
    if origin.is_some_and(|origin| origin.as_bytes() != auth.base_origin().as_bytes()) {
        return Err(ApiError::new(
            ErrorCode::CsrfFailed,
            "cross-site request refused",
        ));
    }
    let sent = parts
        .headers
        .get(CSRF_HEADER)
        .map(|value| value.as_bytes())
        .unwrap_or(b"");
    let expected = auth.csrf_token(&claims.jti);
    if !crate::secrets::digests_match(sent, expected.as_bytes()) {
        return Err(ApiError::new(
            ErrorCode::CsrfFailed,
            "missing or wrong X-CSRF-Token header",
        ));
    }
    Ok(())
}

/// The organisation's policies and the rate limit.
fn authorize(auth: &Auth, parts: &Parts, caller: &Caller) -> Result<(), ApiError> {
    let (org, two_factor_enabled, membership, disabled) = auth.store().read_blocking(|txn| {
        let org = accounts::get_org(txn, &caller.org_id)?;
        let enabled = db::two_factor_enabled(txn, &caller.user_id)?;
        let membership = accounts::get_membership(txn, &caller.org_id, &caller.user_id)?;
        let user = accounts::get_user(txn, &caller.user_id)?;
        let disabled = user.is_none_or(|user| user.disabled_at.is_some());
        Ok::<_, StoreError>((org, enabled, membership, disabled))
    })?;
    // The operator's `lookout user disable` stops every credential of the account.
    if disabled {
        return Err(ApiError::new(
            ErrorCode::Unauthorized,
            "this account is disabled",
        ));
    }
    let org = org.ok_or_else(|| {
        ApiError::new(ErrorCode::Unauthorized, "the organisation no longer exists")
    })?;
    // RegisterUserLogout already voids sessions on a role change; this closes the race of a
    // sign-in that read the old role while the change was committing.
    if caller.session().is_some() && membership.is_none_or(|m| m.role != caller.role) {
        return Err(ApiError::new(
            ErrorCode::SessionRevoked,
            "your role in this organisation changed; sign in again",
        ));
    }
    super::allowlist::require_admitted(&org.ip_allowlist, caller.client, "the")?;
    // A session from a sign-in the identity provider asserted was multi-factor satisfies it.
    let mfa_session = caller.session().is_some_and(|claims| claims.mfa);
    if org.two_factor_required && !two_factor_enabled && !mfa_session {
        let method = parts.method.as_str();
        let path = parts.uri.path();
        if !ENROLMENT_ROUTES
            .iter()
            .any(|(m, p)| *m == method && *p == path)
        {
            return Err(ApiError::new(
                ErrorCode::TwoFactorEnrolmentRequired,
                "this organisation requires two-factor authentication: enrol at /api/v1/auth/2fa/setup",
            ));
        }
    }
    if let Err(wait) = auth.limiter().check(&caller.rate_key()) {
        return Err(ApiError::new(
            ErrorCode::RateLimited,
            "too many requests for this credential",
        )
        .with_retry_after(wait));
    }
    Ok(())
}

/// Declares an extractor that requires at least `$role`.
macro_rules! role_guard {
    ($(#[$meta:meta])* $name:ident, $role:expr) => {
        $(#[$meta])*
        #[derive(Debug, Clone)]
        pub struct $name(pub Caller);

        impl<S> FromRequestParts<S> for $name
        where
            Auth: FromRef<S>,
            S: Send + Sync,
        {
            type Rejection = ApiError;

            async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
                let caller = Caller::from_request_parts(parts, state).await?;
                if !caller.role.at_least($role) {
                    let detail = format!("this needs the {} role or higher", $role.as_str());
                    return Err(ApiError::new(ErrorCode::Forbidden, detail));
                }
                Ok($name(caller))
            }
        }
    };
}

role_guard!(
    /// Any member of the organisation (viewers read).
    Viewer,
    Role::Viewer
);
role_guard!(
    /// Members and above: acknowledge alerts, edit incidents, upload source maps.
    Member,
    Role::Member
);
role_guard!(
    /// Admins and owners: channels, keys, tokens, settings, members below admin, agents.
    Admin,
    Role::Admin
);
role_guard!(
    /// Owners: everything, including admins and owners.
    Owner,
    Role::Owner
);
