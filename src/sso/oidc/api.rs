//! The SSO sign-in routes for browsers and the sign-in page: `GET /api/v1/auth/sso/oidc/start`,
//! `GET /api/v1/auth/sso/oidc/callback` and `GET /api/v1/auth/sso/discover`.
//!
//! Invariants: the start answers a 302 to the provider with the attempt cookie, or a problem
//! (an unknown or free organisation: 404 `sso_not_configured`, 403 `plan_required`); the
//! callback always answers a redirect (the UI, the code step, or `/login?sso_error=<code>`),
//! and clears the attempt cookie. Neither stores anything for an unauthenticated caller.

use axum::Json;
use axum::extract::{FromRef, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum_extra::extract::cookie::CookieJar;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::attempt;
use super::flow::{self, CallbackQuery};
use crate::accounts::model::OrgId;
use crate::accounts::model::Role;
use crate::auth::{Auth, Caller};
use crate::http::{ApiError, ClientAddr, ErrorCode, problems};
use crate::sso::{Landing, Sso, SsoError, browser_answer_to, config_for, db, model};

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Sso: FromRef<S>,
    Auth: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(start))
        .routes(routes!(callback))
        .routes(routes!(discover))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct StartQuery {
    /// The organisation's id (`org_…`).
    pub org: String,
    /// `1` to link the identity to the signed-in account instead of signing in.
    #[serde(default)]
    pub link: Option<String>,
    /// `1` for an owner's test sign-in: the provider's answer is checked and shown on the
    /// settings page (`/settings/sso?sso_test=ok&email=…`); nobody signs in and nothing changes.
    #[serde(default)]
    pub test: Option<String>,
}

/// `1` → true; absent, empty or `0` → false; anything else refused.
fn flag(value: Option<&str>, name: &str) -> Result<bool, SsoError> {
    match value {
        None | Some("0") | Some("") => Ok(false),
        Some("1") => Ok(true),
        Some(_) => Err(SsoError::InvalidParameter(format!("{name} must be 1 or 0"))),
    }
}

/// Whether the request is a browser's navigation (it accepts HTML): refusals then land on a
/// page that says why, instead of a problem document the person cannot act on.
pub(crate) fn navigating(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|accept| accept.contains("text/html"))
}

/// Starts an OIDC sign-in: 302 to the organisation's provider.
#[utoipa::path(get, path = "/api/v1/auth/sso/oidc/start", tag = "sso", params(StartQuery),
    responses((status = 302, description = "to the provider's authorization endpoint, with the attempt cookie"),
        problems::Invalid, problems::Unauthenticated,
        (status = 403, description = "plan_required on the free plan", body = crate::http::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "sso_not_configured", body = crate::http::error::Problem, content_type = "application/problem+json")))]
async fn start(
    State(sso): State<Sso>,
    Query(query): Query<StartQuery>,
    caller: Result<Caller, ApiError>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (link, test) = (
        flag(query.link.as_deref(), "link"),
        flag(query.test.as_deref(), "test"),
    );
    let landing = match (&link, &test) {
        (_, Ok(true)) => Landing::Test,
        (Ok(true), _) => Landing::Link,
        _ => Landing::SignIn,
    };
    let started = begin(&sso, &query.org, link?, test?, caller).await;
    match started {
        Ok(started) => {
            let secure = sso.auth().settings().cookie_secure;
            Ok((
                StatusCode::FOUND,
                [
                    (header::LOCATION, started.location),
                    (header::CACHE_CONTROL, "no-store".to_string()),
                ],
                [(header::SET_COOKIE, attempt::cookie(started.cookie, secure))],
            )
                .into_response())
        }
        Err(problem) if navigating(&headers) => {
            tracing::info!(code = problem.code.as_str(), "sso start refused");
            Ok((
                StatusCode::SEE_OTHER,
                [(header::LOCATION, landing.refused(problem.code.as_str()))],
            )
                .into_response())
        }
        Err(problem) => Err(problem),
    }
}

/// The checks of a start and the attempt it makes: a link needs a session in `org`, a test
/// an owner's session in `org`.
async fn begin(
    sso: &Sso,
    org: &str,
    link: bool,
    test: bool,
    caller: Result<Caller, ApiError>,
) -> Result<flow::Started, ApiError> {
    let org = OrgId::parse(org)
        .map_err(|_| SsoError::InvalidParameter("org must be an organisation id".to_string()))?;
    let mut link_as = None;
    if link || test {
        let caller = caller?;
        if caller.org_id != org {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                "link or test single sign-on while signed in to that organisation",
            ));
        }
        if test && caller.role != Role::Owner {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                "only owners test the organisation's single sign-on",
            ));
        }
        if link && !test {
            link_as = Some(caller.user_id);
        }
    }
    Ok(flow::start(sso, org, link_as, test).await?)
}

/// The provider's redirect back: signs in, then 303 to the UI (or the sign-in page with
/// `sso_error`).
#[utoipa::path(get, path = "/api/v1/auth/sso/oidc/callback", tag = "sso", params(CallbackQuery),
    responses((status = 303, description = "to `/` signed in, to `/login?two_factor=1`, or to `/login?sso_error=<code>`")))]
async fn callback(
    State(sso): State<Sso>,
    ClientAddr(client): ClientAddr,
    headers: HeaderMap,
    Query(query): Query<CallbackQuery>,
) -> Response {
    let jar = CookieJar::from_headers(&headers);
    let cookie = jar
        .get(attempt::COOKIE)
        .map(|cookie| cookie.value().to_string());
    let now = sso.auth().clock().now();
    let attempt = cookie
        .as_deref()
        .and_then(|value| attempt::Attempt::open(&sso.attempt_key(), value, now));
    let landing = attempt
        .as_ref()
        .map_or(Landing::SignIn, attempt::Attempt::landing);
    let result = flow::callback(&sso, query, attempt, client).await;
    let mut response = browser_answer_to(&sso, result, landing);
    let secure = sso.auth().settings().cookie_secure;
    response
        .headers_mut()
        .append(header::SET_COOKIE, attempt::cookie(String::new(), secure));
    response
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct DiscoverQuery {
    /// An address at one of the organisation's domains.
    pub email: Option<String>,
    /// Or the organisation's id, when the sign-in page knows it (`/login?org=`).
    pub org: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DiscoverResponse {
    pub org_id: String,
    /// `oidc` and/or `saml`.
    pub protocols: Vec<String>,
}

/// Which organisation signs in an e-mail address (or the organisation `org`) through SSO, and how.
#[utoipa::path(get, path = "/api/v1/auth/sso/discover", tag = "sso", params(DiscoverQuery),
    responses((status = 200, body = DiscoverResponse),
        (status = 400, description = "invalid_email", body = crate::http::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "sso_not_configured", body = crate::http::error::Problem, content_type = "application/problem+json")))]
async fn discover(
    State(sso): State<Sso>,
    Query(query): Query<DiscoverQuery>,
) -> Result<Json<DiscoverResponse>, ApiError> {
    let org = match (query.org.as_deref(), query.email.as_deref()) {
        (Some(org), _) => OrgId::parse(org).map_err(|_| {
            SsoError::InvalidParameter("org must be an organisation id".to_string())
        })?,
        (None, Some(email)) => {
            let email = crate::accounts::model::normalize_email(email)
                .map_err(|_| ApiError::new(ErrorCode::InvalidEmail, "email must be an address"))?;
            let domain = model::email_domain(&email).ok_or_else(|| {
                ApiError::new(ErrorCode::InvalidEmail, "email must be an address")
            })?;
            sso.store()
                .read(move |txn| db::org_of_domain(txn, &domain))
                .await?
                .ok_or(SsoError::NotConfigured)?
        }
        (None, None) => {
            return Err(SsoError::InvalidParameter("send email or org".to_string()).into());
        }
    };
    // A free organisation's domains lead nowhere: the same answer as an unknown domain.
    let config = config_for(sso.store(), &org)
        .await
        .map_err(|error| match error {
            SsoError::PlanRequired => SsoError::NotConfigured,
            other => other,
        })?;
    let mut protocols = Vec::new();
    if config.oidc.is_some() {
        protocols.push("oidc".to_string());
    }
    if config.saml.is_some() {
        protocols.push("saml".to_string());
    }
    if protocols.is_empty() {
        return Err(SsoError::NotConfigured.into());
    }
    Ok(Json(DiscoverResponse {
        org_id: org.to_string(),
        protocols,
    }))
}
