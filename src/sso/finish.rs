//! The end of every SSO sign-in, whatever the protocol: which account an assertion signs in,
//! the membership it gets, the second factor, and the session.
//!
//! Rules, in order (docs/sso.md, "Accounts"):
//! 1. A signed-in person starting with `link=1` links the asserted identity to their own
//!    account (refused when the identity is already another account's).
//! 2. A linked identity signs in its account.
//! 3. Otherwise the verified e-mail decides: no account → one is made just in time with the
//!    organisation's default role; an account this organisation's SCIM provisioned, or one
//!    without a password that belongs to no other organisation → it is linked and signed in;
//!    any other account (a password, another organisation) is never taken over:
//!    `AccountExists`, until its owner links it.
//! 4. A provisioned person without a membership (SCIM deactivated them) or a disabled account
//!    is refused, never re-added.
//! 5. Second factor: an assertion of MFA satisfies it; otherwise an account with TOTP goes
//!    through the sign-in page's code step (`/api/v1/auth/2fa/complete`), like a password. A
//!    session after asserted MFA carries `mfa`, which satisfies the organisation's 2FA
//!    enforcement like an enrolled second factor.
//!
//! Invariants: the decision and its audit entry commit in one write; a refusal is returned as
//! a value from the write closure so its audit entry is kept.

use std::net::IpAddr;

use axum::response::Response;
use serde_json::json;

use super::model::SsoLink;
use super::{Asserted, Sso, SsoError, config_for, db};
use crate::accounts::model::{Membership, Org, Role, User, UserId};
use crate::auth::audit::{self, Actor};
use crate::auth::login::{self, SignedIn};
use crate::auth::tokens::{LOGIN_TOKEN_TTL, TokenKind};
use crate::clock::Timestamp;
use crate::store::StoreError;

/// Where a browser lands after signing in.
pub const AFTER_SIGN_IN: &str = "/";
/// The sign-in page's code step, for an account whose second factor is still due.
pub const SECOND_FACTOR_PAGE: &str = "/login?two_factor=1";

/// A finished SSO sign-in.
pub enum Finished {
    SignedIn(Box<SignedIn>),
    /// The identity was accepted; a TOTP code is still due with this login token.
    SecondFactor {
        login_token: String,
    },
    /// An owner's test sign-in: the provider's answer passed every check; nobody signed in.
    Tested {
        email: String,
        mfa: bool,
    },
}

/// What a browser's SSO attempt was for, and so where it lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Landing {
    /// Signing in: the UI, or the sign-in page saying why not.
    SignIn,
    /// Linking the signed-in account: the profile page.
    Link,
    /// An owner's test: the single sign-on settings page with the outcome.
    Test,
}

impl Landing {
    /// Where a refusal with `code` lands.
    pub fn refused(self, code: &str) -> String {
        match self {
            Landing::SignIn => format!("/login?sso_error={code}"),
            Landing::Link => format!("/profile?sso_error={code}"),
            Landing::Test => format!("/settings/sso?sso_test=failed&code={code}"),
        }
    }
}

/// What the write transaction decided.
enum Decision {
    Accepted {
        user: User,
        org: Org,
        role: Role,
        two_factor_enabled: bool,
    },
    Refused(SsoError),
}

/// Signs in (or links, with `link_as`) the person `asserted` describes.
pub async fn finish(
    sso: &Sso,
    asserted: Asserted,
    link_as: Option<UserId>,
    client: IpAddr,
) -> Result<Finished, SsoError> {
    let config = config_for(sso.store(), &asserted.org).await?;
    let now = sso.auth().clock().now();
    let actor = Actor {
        user_id: link_as.clone(),
        email: Some(asserted.email.clone()),
        ip: Some(client.to_string()),
    };
    let mfa_asserted = asserted.mfa;
    let decision = sso
        .store()
        .write(move |txn| {
            let decided = decide(txn, &asserted, config.default_role, link_as.as_ref(), now)?;
            let (action, detail) = match &decided {
                Decision::Accepted { .. } => (
                    "login.succeeded",
                    json!({"sso": asserted.protocol.as_str(), "mfa": asserted.mfa,
                           "linked": link_as.is_some()}),
                ),
                Decision::Refused(why) => (
                    "login.sso_refused",
                    json!({"sso": asserted.protocol.as_str(), "reason": why.code()}),
                ),
            };
            audit::record(txn, Some(&asserted.org), &actor, action, None, detail, now)?;
            Ok::<_, StoreError>(decided)
        })
        .await?;
    let (user, org, role, two_factor_enabled) = match decision {
        Decision::Accepted {
            user,
            org,
            role,
            two_factor_enabled,
        } => (user, org, role, two_factor_enabled),
        Decision::Refused(why) => return Err(why),
    };
    if two_factor_enabled && !mfa_asserted {
        let (login_token, _) = sso
            .auth()
            .signer()
            .issue(
                TokenKind::Login,
                &user.id,
                &org.id,
                None,
                now,
                LOGIN_TOKEN_TTL,
            )
            .map_err(SsoError::Signing)?;
        return Ok(Finished::SecondFactor { login_token });
    }
    let signed = login::issue_session(sso.auth(), user, org, role, two_factor_enabled, now)
        .and_then(|signed| match mfa_asserted {
            true => login::with_provider_mfa(sso.auth(), signed),
            false => Ok(signed),
        })
        .map_err(|err| SsoError::Signing(err.to_string()))?;
    Ok(Finished::SignedIn(Box::new(signed)))
}

/// The rules of the module comment, inside the write transaction.
fn decide(
    txn: &redb::WriteTransaction,
    asserted: &Asserted,
    default_role: Role,
    link_as: Option<&UserId>,
    now: Timestamp,
) -> Result<Decision, StoreError> {
    let refused = |why| Ok(Decision::Refused(why));
    let Some(org) = crate::accounts::get_org(txn, &asserted.org)? else {
        return refused(SsoError::NotConfigured);
    };
    let linked = db::get_link(txn, &asserted.issuer, &asserted.subject)?;
    let user = match (link_as, linked) {
        (Some(me), Some(link)) if link.user_id != *me => {
            return refused(SsoError::LinkedElsewhere);
        }
        (Some(me), _) => {
            put_link(txn, asserted, me, now)?;
            crate::accounts::get_user(txn, me)?
        }
        (None, Some(link)) => crate::accounts::get_user(txn, &link.user_id)?,
        (None, None) => match account_by_email(txn, asserted, default_role, now)? {
            Ok(user) => Some(user),
            Err(why) => return refused(why),
        },
    };
    let Some(user) = user.filter(|user| user.disabled_at.is_none()) else {
        return refused(SsoError::AccountDisabled);
    };
    let membership = match crate::accounts::get_membership(txn, &org.id, &user.id)? {
        Some(membership) => membership,
        // Deprovisioned by SCIM: the provider said no; SSO does not bring them back.
        None if crate::scim::is_provisioned(txn, &org.id, &user.id)? => {
            return refused(SsoError::AccountDisabled);
        }
        None => {
            let membership = Membership::active(org.id.clone(), user.id.clone(), default_role, now);
            crate::accounts::insert_membership(txn, &membership)?;
            membership
        }
    };
    let two_factor_enabled = crate::auth::two_factor_enabled(txn, &user.id)?;
    Ok(Decision::Accepted {
        role: membership.role,
        user,
        org,
        two_factor_enabled,
    })
}

/// The account of the asserted e-mail when SSO may use it (made just in time when there is
/// none), linked to the asserted identity; or why not.
fn account_by_email(
    txn: &redb::WriteTransaction,
    asserted: &Asserted,
    default_role: Role,
    now: Timestamp,
) -> Result<Result<User, SsoError>, StoreError> {
    let Some(user) = crate::accounts::find_user_by_email(txn, &asserted.email)? else {
        let user = User::new(asserted.email.clone(), String::new(), now);
        crate::accounts::insert_user(txn, &user)
            .map_err(|err| StoreError::Storage(err.to_string()))?;
        let membership =
            Membership::active(asserted.org.clone(), user.id.clone(), default_role, now);
        crate::accounts::insert_membership(txn, &membership)?;
        put_link(txn, asserted, &user.id, now)?;
        return Ok(Ok(user));
    };
    let provisioned = crate::scim::is_provisioned(txn, &asserted.org, &user.id)?;
    let only_here = crate::accounts::memberships_of_user(txn, &user.id)?
        .iter()
        .all(|membership| membership.org_id == asserted.org);
    if provisioned || (user.password_hash.is_empty() && only_here) {
        put_link(txn, asserted, &user.id, now)?;
        return Ok(Ok(user));
    }
    Ok(Err(SsoError::AccountExists))
}

fn put_link(
    txn: &redb::WriteTransaction,
    asserted: &Asserted,
    user: &UserId,
    now: Timestamp,
) -> Result<(), StoreError> {
    db::put_link(
        txn,
        &SsoLink {
            issuer: asserted.issuer.clone(),
            subject: asserted.subject.clone(),
            user_id: user.clone(),
            org_id: asserted.org.clone(),
            created_at: now,
        },
    )
}

/// Records a refusal of a provider's signed answer (a replay, an unverified e-mail) in the
/// organisation's audit log.
pub(crate) async fn audit_refusal(
    sso: &Sso,
    org: &crate::accounts::model::OrgId,
    email: &str,
    protocol: super::Protocol,
    why: &SsoError,
    client: IpAddr,
) -> Result<(), SsoError> {
    let now = sso.auth().clock().now();
    // The e-mail came from the provider: bounded before it is kept.
    let shown: String = email.chars().take(254).collect();
    let actor = Actor {
        user_id: None,
        email: Some(shown),
        ip: Some(client.to_string()),
    };
    let detail = json!({"sso": protocol.as_str(), "reason": why.code()});
    let org = org.clone();
    sso.store()
        .write(move |txn| {
            audit::record(
                txn,
                Some(&org),
                &actor,
                "login.sso_refused",
                None,
                detail.clone(),
                now,
            )
        })
        .await?;
    Ok(())
}

/// The browser's answer to a finished (or refused) sign-in: 303 to the UI with the session
/// cookies, to the sign-in page's code step, or to `/login?sso_error=<code>` (the cause is
/// logged, never shown).
pub fn browser_answer(sso: &Sso, result: Result<Finished, SsoError>) -> Response {
    browser_answer_to(sso, result, Landing::SignIn)
}

/// `browser_answer` for an attempt made for `landing`: a link lands on the profile page
/// (`?sso=linked`), a test on the settings page with what the provider asserted.
pub fn browser_answer_to(
    sso: &Sso,
    result: Result<Finished, SsoError>,
    landing: Landing,
) -> Response {
    use crate::auth::api_session::{second_factor_redirect, session_redirect};
    match result {
        Ok(Finished::SignedIn(signed)) => {
            let after = match landing {
                Landing::Link => "/profile?sso=linked",
                Landing::SignIn | Landing::Test => AFTER_SIGN_IN,
            };
            session_redirect(sso.auth(), *signed, after)
        }
        Ok(Finished::SecondFactor { login_token }) => {
            second_factor_redirect(sso.auth(), login_token, SECOND_FACTOR_PAGE)
        }
        Ok(Finished::Tested { email, mfa }) => {
            let query = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("sso_test", "ok")
                .append_pair("email", &email)
                .append_pair("mfa", if mfa { "1" } else { "0" })
                .finish();
            redirect(&format!("/settings/sso?{query}"))
        }
        Err(error) => {
            match &error {
                SsoError::Store(_) | SsoError::Signing(_) | SsoError::Provider(_) => {
                    tracing::error!(%error, code = error.code(), "sso sign-in failed");
                }
                _ => tracing::info!(%error, code = error.code(), "sso sign-in refused"),
            }
            redirect(&landing.refused(error.code()))
        }
    }
}

fn redirect(location: &str) -> Response {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, location.to_string())],
    )
        .into_response()
}
