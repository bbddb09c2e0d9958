//! HTTP face of TOTP enrolment: setup, enable (with recovery codes) and disable
//! (CONTRACT.md section 2). Completing a sign-in with a code is in `api_session.rs`.

use axum::Json;
use axum::extract::{FromRef, State};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::api_session::cleared_cookies;
use super::audit;
use super::revocation::Revocations;
use super::{Auth, Caller, db, totp};
use crate::accounts;
use crate::clock::Clock;
use crate::http::error::Problem;
use crate::http::{ApiError, ApiJson, ErrorCode};
use crate::store::{Store, StoreError};

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Clock: FromRef<S>,
    Store: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(two_factor_setup))
        .routes(routes!(two_factor_enable))
        .routes(routes!(two_factor_disable))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TwoFactorSetup {
    /// Base32 secret, for manual entry.
    pub secret: String,
    pub otpauth_uri: String,
    /// The URI as a QR code (SVG).
    pub qr_svg: String,
}

/// Starts TOTP enrolment: a new secret, its otpauth URI and QR code.
#[utoipa::path(post, path = "/api/v1/auth/2fa/setup", tag = "auth",
    responses((status = 200, body = TwoFactorSetup),
        (status = 409, description = "already enabled", body = Problem, content_type = "application/problem+json")))]
async fn two_factor_setup(
    State(store): State<Store>,
    State(clock): State<Clock>,
    caller: Caller,
) -> Result<Json<TwoFactorSetup>, ApiError> {
    let now = clock.now();
    let user_id = caller.user_id.clone();
    let enrolment = totp::pending_enrolment(now);
    let secret = enrolment.secret.clone();
    let email = store
        .write(move |txn| {
            // Already on is a value here (nothing is written): the closure's errors are storage's.
            if db::two_factor_enabled(txn, &user_id)? {
                return Ok::<_, StoreError>(None);
            }
            db::put_two_factor(txn, &user_id, &enrolment)?;
            let user = accounts::get_user(txn, &user_id)?;
            Ok(Some(user.map(|u| u.email).unwrap_or_default()))
        })
        .await?
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::TwoFactorAlreadyEnabled,
                "two-factor authentication is already on",
            )
        })?;
    let otpauth_uri = totp::otpauth_uri(&secret, &email)
        .ok_or_else(|| ApiError::internal("cannot build the otpauth uri"))?;
    let qr_svg = totp::qr_svg(&otpauth_uri)
        .ok_or_else(|| ApiError::internal("cannot render the qr code"))?;
    Ok(Json(TwoFactorSetup {
        secret,
        otpauth_uri,
        qr_svg,
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct CodeRequest {
    pub code: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RecoveryCodes {
    /// Ten single-use codes, shown only now.
    pub recovery_codes: Vec<String>,
}

/// Confirms enrolment with a first valid code and returns the recovery codes.
#[utoipa::path(post, path = "/api/v1/auth/2fa/enable", tag = "auth", request_body = CodeRequest,
    responses((status = 200, body = RecoveryCodes),
        (status = 401, description = "invalid_code", body = Problem, content_type = "application/problem+json")))]
async fn two_factor_enable(
    State(store): State<Store>,
    State(clock): State<Clock>,
    caller: Caller,
    ApiJson(request): ApiJson<CodeRequest>,
) -> Result<Json<RecoveryCodes>, ApiError> {
    let now = clock.now();
    let (user_id, org, actor) = (
        caller.user_id.clone(),
        caller.org_id.clone(),
        caller.actor(),
    );
    let codes = store
        .write(move |txn| {
            let codes = totp::confirm_enrolment(txn, &user_id, &request.code, now)?;
            if codes.is_some() {
                audit::record(
                    txn,
                    Some(&org),
                    &actor,
                    "two_factor.enabled",
                    Some(user_id.as_str()),
                    json!({}),
                    now,
                )?;
            }
            Ok::<_, StoreError>(codes)
        })
        .await?;
    let recovery_codes = codes.ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidCode,
            "wrong code, or no enrolment in progress (call /api/v1/auth/2fa/setup)",
        )
    })?;
    Ok(Json(RecoveryCodes { recovery_codes }))
}

/// Turns the caller's second factor off; needs a current code. Ends the caller's other sessions.
#[utoipa::path(post, path = "/api/v1/auth/2fa/disable", tag = "auth", request_body = CodeRequest,
    responses((status = 204),
        (status = 401, description = "invalid_code", body = Problem, content_type = "application/problem+json")))]
async fn two_factor_disable(
    State(auth): State<Auth>,
    caller: Caller,
    ApiJson(request): ApiJson<CodeRequest>,
) -> Result<Response, ApiError> {
    let now = auth.clock().now();
    let (user_id, org, actor) = (
        caller.user_id.clone(),
        caller.org_id.clone(),
        caller.actor(),
    );
    let disabled = auth
        .store()
        .write(move |txn| {
            if !totp::verify_and_consume(txn, &user_id, &request.code, now)? {
                return Ok::<_, StoreError>(false);
            }
            db::remove_two_factor(txn, &user_id)?;
            Revocations::write_user_logout(txn, &user_id, now)?;
            audit::record(
                txn,
                Some(&org),
                &actor,
                "two_factor.disabled",
                Some(user_id.as_str()),
                json!({}),
                now,
            )?;
            Ok(true)
        })
        .await?;
    if !disabled {
        return Err(ApiError::new(
            ErrorCode::InvalidCode,
            "wrong or already used code",
        ));
    }
    auth.revocations().note_user_logout(&caller.user_id, now);
    Ok(cleared_cookies(&auth))
}
