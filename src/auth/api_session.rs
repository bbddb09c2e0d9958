//! HTTP face of sessions and the second factor: login, 2FA completion, logout,
//! logout-everywhere, `me`, and TOTP enrolment (CONTRACT.md section 2); the organisations of
//! the signed-in person are in `api_orgs.rs`, mounted with these.

use axum::Json;
use axum::extract::{FromRef, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::audit;
use super::login::{self, LoginOutcome, SignInError, SignedIn};
use super::revocation::Revocations;
use super::tokens::LOGIN_TOKEN_TTL;
use super::{Auth, CSRF_COOKIE, Caller, LOGIN_COOKIE, SESSION_COOKIE, db};
use crate::accounts;
use crate::accounts::model::{Plan, Role};
use crate::http::error::Problem;
use crate::http::problems;
use crate::http::{ApiError, ApiJson, BodyRules, ClientAddr, ErrorCode};
use crate::secrets::password;
use crate::store::{Store, StoreError};

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Store: FromRef<S>,
{
    // The two routes anyone may call get the small body limit; the rest keep the API's.
    let sign_in = OpenApiRouter::new()
        .routes(routes!(login_handler))
        .routes(routes!(complete_second_factor))
        .route_layer(axum::middleware::from_fn(limit_sign_in_body));
    OpenApiRouter::new()
        .merge(sign_in)
        .routes(routes!(logout))
        .routes(routes!(logout_everywhere))
        .routes(routes!(me))
        .routes(routes!(change_password))
        .merge(super::api_orgs::routes())
}

/// The largest sign-in body (login, 2FA complete), in bytes: an e-mail, a password of at most
/// 1024 characters and an organisation fit many times over.
pub const SIGN_IN_MAX_BODY_BYTES: usize = 8 * 1024;

/// Caps the body of a sign-in route at `SIGN_IN_MAX_BODY_BYTES`: a declared length over it
/// is 413 `body_too_large` before anything is read, and the read itself stops at the cap.
async fn limit_sign_in_body(mut request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > SIGN_IN_MAX_BODY_BYTES as u64) {
        return ApiError::new(
            ErrorCode::BodyTooLarge,
            format!("a sign-in body may have at most {SIGN_IN_MAX_BODY_BYTES} bytes"),
        )
        .into_response();
    }
    if let Some(rules) = request.extensions_mut().get_mut::<BodyRules>() {
        rules.max_bytes = rules.max_bytes.min(SIGN_IN_MAX_BODY_BYTES);
    }
    next.run(request).await
}

impl From<SignInError> for ApiError {
    fn from(error: SignInError) -> Self {
        let detail = error.to_string();
        match error {
            SignInError::InvalidEmail => ApiError::new(ErrorCode::InvalidEmail, detail),
            SignInError::Locked { until, now } => ApiError::new(ErrorCode::AccountLocked, detail)
                .with_retry_after(login::lock_retry_after(until, now)),
            SignInError::WrongPassword => ApiError::new(ErrorCode::InvalidCredentials, detail),
            SignInError::WrongCode | SignInError::CodeMissing => {
                ApiError::new(ErrorCode::InvalidCode, detail)
            }
            SignInError::LoginTokenRejected(_)
            | SignInError::LoginTokenUsed
            | SignInError::AccountGone
            | SignInError::MembershipGone => ApiError::new(ErrorCode::Unauthorized, detail),
            SignInError::SsoRequired => ApiError::new(ErrorCode::SsoRequired, detail),
            SignInError::Signing(cause) => ApiError::internal(cause),
            SignInError::Hashing(hashing) => ApiError::from(hashing),
            SignInError::Store(store) => ApiError::from(store),
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct LoginRequest {
    pub email: String,
    pub password: String,
    /// Organisation (id or name) to sign in to; the user's first one when omitted.
    #[serde(default)]
    pub org: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MeUser {
    pub id: String,
    pub email: String,
    pub two_factor_enabled: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MeOrg {
    pub id: String,
    pub name: String,
    pub plan: Plan,
    pub two_factor_required: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SessionResponse {
    pub user: MeUser,
    pub org: MeOrg,
    pub role: Role,
    /// Echo it in `X-CSRF-Token` on cookie-authenticated POST/PUT/PATCH/DELETE.
    pub csrf_token: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SecondFactorRequired {
    pub two_factor_required: bool,
    pub login_token: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MeResponse {
    pub user: MeUser,
    pub org: MeOrg,
    pub role: Role,
}

fn org_view(org: &accounts::model::Org) -> MeOrg {
    MeOrg {
        id: org.id.to_string(),
        name: org.name.clone(),
        plan: org.plan,
        two_factor_required: org.two_factor_required,
    }
}

/// A cookie with the attributes every Lookout cookie shares.
fn cookie(
    auth: &Auth,
    name: &'static str,
    value: String,
    max_age_seconds: i64,
    http_only: bool,
) -> HeaderValue {
    let settings = auth.settings();
    let mut cookie = Cookie::build((name, value))
        .path("/")
        .http_only(http_only)
        .same_site(SameSite::Lax)
        .secure(settings.cookie_secure)
        .max_age(time::Duration::seconds(max_age_seconds));
    if let Some(domain) = &settings.cookie_domain {
        cookie = cookie.domain(domain.clone());
    }
    HeaderValue::from_str(&cookie.build().to_string())
        .unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// 200 with the session body and its two cookies (and the login cookie cleared).
pub(super) fn session_response(auth: &Auth, signed: SignedIn) -> Response {
    let max_age = i64::try_from(auth.settings().jwt_ttl.as_secs()).unwrap_or(i64::MAX);
    let body = SessionResponse {
        user: MeUser {
            id: signed.user.id.to_string(),
            email: signed.user.email.clone(),
            two_factor_enabled: signed.two_factor_enabled,
        },
        org: org_view(&signed.org),
        role: signed.role,
        csrf_token: signed.csrf_token.clone(),
    };
    let mut response = Json(body).into_response();
    let headers = response.headers_mut();
    headers.append(
        header::SET_COOKIE,
        cookie(auth, SESSION_COOKIE, signed.token, max_age, true),
    );
    headers.append(
        header::SET_COOKIE,
        cookie(auth, CSRF_COOKIE, signed.csrf_token, max_age, false),
    );
    headers.append(
        header::SET_COOKIE,
        cookie(auth, LOGIN_COOKIE, String::new(), 0, true),
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A browser sign-in that ends elsewhere (SSO): 303 to `location` with the session's cookies,
/// as `session_response` sets them.
pub fn session_redirect(auth: &Auth, signed: SignedIn, location: &str) -> Response {
    let mut response = session_response(auth, signed);
    *response.status_mut() = StatusCode::SEE_OTHER;
    *response.body_mut() = axum::body::Body::empty();
    response.headers_mut().remove(header::CONTENT_TYPE);
    set_location(&mut response, location);
    response
}

/// A browser sign-in whose second factor is still due: 303 to `location` (the sign-in page's
/// code step) with the `lookout_login` cookie, as a password sign-in sets it.
pub fn second_factor_redirect(auth: &Auth, login_token: String, location: &str) -> Response {
    let max_age = i64::try_from(LOGIN_TOKEN_TTL.as_secs()).unwrap_or(300);
    let mut response = StatusCode::SEE_OTHER.into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        cookie(auth, LOGIN_COOKIE, login_token, max_age, true),
    );
    set_location(&mut response, location);
    response
}

fn set_location(response: &mut Response, location: &str) {
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
}

/// Signs in with e-mail and password.
#[utoipa::path(post, path = "/api/v1/auth/login", tag = "auth", request_body = LoginRequest,
    responses(
        (status = 200, description = "signed in (cookies set), or a second factor is required", body = SessionResponse),
        (status = 400, description = "invalid_email: not an address, or over 254 bytes", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "invalid_credentials", body = Problem, content_type = "application/problem+json"),
        problems::Locked,
        problems::TooLarge,
        problems::Unavailable,
    ))]
async fn login_handler(
    State(auth): State<Auth>,
    ClientAddr(client): ClientAddr,
    ApiJson(request): ApiJson<LoginRequest>,
) -> Result<Response, ApiError> {
    match login::password_login(
        &auth,
        &request.email,
        &request.password,
        request.org.as_deref(),
        client,
    )
    .await?
    {
        LoginOutcome::SignedIn(signed) => Ok(session_response(&auth, *signed)),
        LoginOutcome::SecondFactor { login_token } => {
            let max_age = i64::try_from(LOGIN_TOKEN_TTL.as_secs()).unwrap_or(300);
            let mut response = Json(SecondFactorRequired {
                two_factor_required: true,
                login_token: login_token.clone(),
            })
            .into_response();
            response.headers_mut().append(
                header::SET_COOKIE,
                cookie(&auth, LOGIN_COOKIE, login_token, max_age, true),
            );
            Ok(response)
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct CompleteRequest {
    /// A current TOTP code, or one of the recovery codes.
    pub code: String,
    /// The login token of the first step; the `lookout_login` cookie is used when omitted.
    #[serde(default)]
    pub login_token: Option<String>,
}

/// Finishes a sign-in that requires a second factor.
#[utoipa::path(post, path = "/api/v1/auth/2fa/complete", tag = "auth", request_body = CompleteRequest,
    responses(
        (status = 200, body = SessionResponse),
        (status = 401, description = "invalid_code or a bad login token", body = Problem, content_type = "application/problem+json"),
        problems::Locked,
        problems::TooLarge,
    ))]
async fn complete_second_factor(
    State(auth): State<Auth>,
    ClientAddr(client): ClientAddr,
    headers: HeaderMap,
    ApiJson(request): ApiJson<CompleteRequest>,
) -> Result<Response, ApiError> {
    let jar = CookieJar::from_headers(&headers);
    let token = request
        .login_token
        .or_else(|| jar.get(LOGIN_COOKIE).map(|c| c.value().to_string()))
        .filter(|token| !token.is_empty())
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::Unauthorized,
                "no sign-in in progress: send login_token or the lookout_login cookie",
            )
        })?;
    let signed = login::complete_second_factor(&auth, &token, &request.code, client).await?;
    Ok(session_response(&auth, signed))
}

pub(super) fn cleared_cookies(auth: &Auth) -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    for name in [SESSION_COOKIE, CSRF_COOKIE] {
        response.headers_mut().append(
            header::SET_COOKIE,
            cookie(auth, name, String::new(), 0, name == SESSION_COOKIE),
        );
    }
    response
}

/// Ends the current session only.
#[utoipa::path(post, path = "/api/v1/auth/logout", tag = "auth", responses((status = 204)))]
async fn logout(State(auth): State<Auth>, caller: Caller) -> Result<Response, ApiError> {
    if let Some(claims) = caller.session().cloned() {
        let actor = caller.actor();
        let now = auth.clock().now();
        let (org, written) = (caller.org_id.clone(), claims.clone());
        auth.store()
            .write(move |txn| {
                Revocations::write_session_logout(txn, &written)?;
                audit::record(txn, Some(&org), &actor, "logout", None, json!({}), now)
            })
            .await?;
        auth.revocations().note_session_logout(&claims);
    }
    Ok(cleared_cookies(&auth))
}

/// Ends every session of the caller (RegisterUserLogout).
#[utoipa::path(post, path = "/api/v1/auth/logout-everywhere", tag = "auth", responses((status = 204)))]
async fn logout_everywhere(State(auth): State<Auth>, caller: Caller) -> Result<Response, ApiError> {
    let now = auth.clock().now();
    let (user, org, actor) = (
        caller.user_id.clone(),
        caller.org_id.clone(),
        caller.actor(),
    );
    auth.store()
        .write(move |txn| {
            Revocations::write_user_logout(txn, &user, now)?;
            audit::record(
                txn,
                Some(&org),
                &actor,
                "logout.everywhere",
                None,
                json!({}),
                now,
            )
        })
        .await?;
    auth.revocations().note_user_logout(&caller.user_id, now);
    Ok(cleared_cookies(&auth))
}

/// Who is calling.
#[utoipa::path(get, path = "/api/v1/auth/me", tag = "auth", responses((status = 200, body = MeResponse)))]
async fn me(State(store): State<Store>, caller: Caller) -> Result<Json<MeResponse>, ApiError> {
    let (user_id, org_id) = (caller.user_id.clone(), caller.org_id.clone());
    let (user, org, enabled) = store
        .read(move |txn| {
            let user = accounts::get_user(txn, &user_id)?;
            let org = accounts::get_org(txn, &org_id)?;
            Ok::<_, StoreError>((user, org, db::two_factor_enabled(txn, &user_id)?))
        })
        .await?;
    let (Some(user), Some(org)) = (user, org) else {
        return Err(ApiError::new(
            ErrorCode::Unauthorized,
            "the account no longer exists",
        ));
    };
    Ok(Json(MeResponse {
        user: MeUser {
            id: user.id.to_string(),
            email: user.email,
            two_factor_enabled: enabled,
        },
        org: org_view(&org),
        role: caller.role,
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct PasswordChange {
    pub current_password: String,
    pub new_password: String,
}

/// Changes the caller's password and ends every one of the caller's sessions
/// (RegisterUserLogout), this one included.
#[utoipa::path(post, path = "/api/v1/auth/password", tag = "auth", request_body = PasswordChange,
    responses((status = 204),
        problems::Invalid,
        (status = 401, description = "invalid_credentials: the current password is wrong", body = Problem, content_type = "application/problem+json")))]
async fn change_password(
    State(auth): State<Auth>,
    caller: Caller,
    ApiJson(request): ApiJson<PasswordChange>,
) -> Result<Response, ApiError> {
    accounts::model::validate_password(&request.new_password)
        .map_err(|err| ApiError::new(ErrorCode::InvalidPayload, err.to_string()))?;
    let user_id = caller.user_id.clone();
    let user = auth
        .store()
        .read(move |txn| accounts::get_user(txn, &user_id))
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::Unauthorized, "the account no longer exists"))?;
    let (current, stored, new) = (
        request.current_password,
        user.password_hash.clone(),
        request.new_password,
    );
    if !password::verify_bounded(current, stored).await? {
        return Err(ApiError::new(
            ErrorCode::InvalidCredentials,
            "the current password is wrong",
        ));
    }
    let new_hash = password::hash_bounded(new).await?;
    let now = auth.clock().now();
    let (org, actor) = (caller.org_id.clone(), caller.actor());
    let mut updated = user;
    updated.password_hash = new_hash;
    let user_id = updated.id.clone();
    auth.store()
        .write(move |txn| {
            accounts::update_user(txn, &updated)?;
            Revocations::write_user_logout(txn, &updated.id, now)?;
            audit::record(
                txn,
                Some(&org),
                &actor,
                "password.changed",
                Some(updated.id.as_str()),
                json!({}),
                now,
            )
        })
        .await?;
    auth.revocations().note_user_logout(&user_id, now);
    Ok(cleared_cookies(&auth))
}
