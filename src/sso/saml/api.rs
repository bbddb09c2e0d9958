//! The SAML routes under `/api/v1/auth/sso/saml` (CONTRACT §7, docs/sso.md): our metadata for
//! an organisation's IdP, the start of a sign-in, and the ACS the IdP posts the Response to.
//!
//! Invariants: none needs a session (the IdP and a browser that has not signed in call them);
//! the metadata and the start answer a problem for a missing, malformed, unknown or free
//! organisation; the ACS reads at most `MAX_ACS_BODY_BYTES` and otherwise always answers a
//! redirect (the UI, the code step, or `/login?sso_error=<code>`), clearing the attempt cookie.

use axum::extract::{FromRef, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::flow::{self, Departure};
use super::{ATTEMPT_COOKIE, ATTEMPT_LIFETIME, MAX_RESPONSE_BYTES, ServiceProvider};
use crate::accounts::model::{OrgId, Plan, Role};
use crate::auth::{Auth, Caller};
use crate::http::extract::{BodyRules, read_body};
use crate::http::query::{filters, parameter_error};
use crate::http::{ApiError, ClientAddr, ErrorCode, problems};
use crate::sso::oidc::api::navigating;
use crate::sso::{Landing, Sso, SsoError, browser_answer_to};
use crate::store::Store;

/// The media type of SAML metadata (OASIS SAML metadata, section 4.1).
pub const METADATA_MEDIA_TYPE: &str = "application/samlmetadata+xml";
/// The largest ACS body read: the Response plus RelayState and form encoding.
pub const MAX_ACS_BODY_BYTES: usize = MAX_RESPONSE_BYTES + 8 * 1024;
const COOKIE_PATH: &str = "/api/v1/auth/sso/saml";

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Store: FromRef<S>,
    Sso: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(service_provider_metadata))
        .routes(routes!(start))
        .routes(routes!(assertion_consumer_service))
}

/// The organisation `?org=` names: 400 when missing, repeated or malformed.
fn org_parameter(query: Option<&str>) -> Result<OrgId, ApiError> {
    filters(query, &["org"])?
        .get("org")
        .and_then(|org| OrgId::parse(org).ok())
        .ok_or_else(|| parameter_error("org: the organisation's id (org_…) is required"))
}

/// 404 for an unknown organisation, 403 `plan_required` for a free one.
async fn require_enterprise(store: &Store, id: &OrgId) -> Result<(), ApiError> {
    let lookup = id.clone();
    let found = store
        .read(move |txn| crate::accounts::get_org(txn, &lookup))
        .await?;
    match found {
        None => Err(ApiError::new(ErrorCode::NotFound, "no such organisation")),
        Some(org) if org.plan != Plan::Enterprise => Err(ApiError::new(
            ErrorCode::PlanRequired,
            "single sign-on needs the enterprise plan",
        )),
        Some(_) => Ok(()),
    }
}

/// The SP metadata of one organisation: entity id, ACS URL, unsigned requests, signed
/// assertions wanted.
#[utoipa::path(get, path = "/api/v1/auth/sso/saml/metadata", tag = "sso",
    params(("org" = String, Query, description = "the organisation's id (`org_…`)")),
    responses(
        (status = 200, description = "the SP metadata", body = String, content_type = "application/samlmetadata+xml"),
        problems::Invalid, problems::Forbidden, problems::NotFound))]
async fn service_provider_metadata(
    State(auth): State<Auth>,
    State(store): State<Store>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let org = org_parameter(query.as_deref())?;
    require_enterprise(&store, &org).await?;
    let sp = ServiceProvider::for_org(auth.base_url(), org.as_str());
    Ok((
        [(header::CONTENT_TYPE, METADATA_MEDIA_TYPE)],
        sp.metadata_xml(),
    )
        .into_response())
}

/// The attempt cookie. `SameSite=None` (with `Secure`) because the IdP's POST to the ACS is
/// a cross-site request that carries no `Lax` cookie; on a plain-HTTP server, where browsers
/// refuse `None` without `Secure`, it falls back to `Lax` (docs/sso.md).
fn attempt_cookie(value: String, secure: bool) -> HeaderValue {
    let max_age = if value.is_empty() {
        0
    } else {
        ATTEMPT_LIFETIME
    };
    let same_site = if secure {
        SameSite::None
    } else {
        SameSite::Lax
    };
    let cookie = Cookie::build((ATTEMPT_COOKIE, value))
        .path(COOKIE_PATH)
        .http_only(true)
        .same_site(same_site)
        .secure(secure)
        .max_age(time::Duration::seconds(max_age))
        .build();
    HeaderValue::from_str(&cookie.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// `test=1` (an owner's test sign-in) → true; absent, empty or `0` → false; else 400.
fn test_parameter(query: Option<&str>) -> Result<bool, ApiError> {
    match filters(query, &["test"])?.get("test").map(String::as_str) {
        None | Some("0") | Some("") => Ok(false),
        Some("1") => Ok(true),
        Some(_) => Err(parameter_error("test must be 1 or 0")),
    }
}

/// A test sign-in is an owner's, signed in to the organisation tested.
fn require_tester(caller: Result<Caller, ApiError>, org: &OrgId) -> Result<(), ApiError> {
    let caller = caller?;
    if &caller.org_id != org || caller.role != Role::Owner {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            "only the organisation's owners test its single sign-on, signed in to it",
        ));
    }
    Ok(())
}

/// Starts a SAML sign-in: 302 to the organisation's IdP with an AuthnRequest (or, for an IdP
/// without the HTTP-Redirect binding, a page posting it). With `test=1` an owner's test
/// sign-in: the IdP's answer is checked and shown on the settings page
/// (`/settings/sso?sso_test=ok&email=…`); nobody signs in and nothing changes.
#[utoipa::path(get, path = "/api/v1/auth/sso/saml/start", tag = "sso",
    params(("org" = String, Query, description = "the organisation's id (`org_…`)"),
        ("test" = Option<String>, Query, description = "`1` for an owner's test sign-in (a session of an owner of `org` required)")),
    responses((status = 302, description = "to the IdP's sign-on URL with `SAMLRequest` and `RelayState`, setting the attempt cookie"),
        (status = 200, description = "a form posting the AuthnRequest, for an IdP with the HTTP-POST binding only", body = String, content_type = "text/html"),
        problems::Invalid,
        (status = 403, description = "plan_required on the free plan", body = crate::http::error::Problem, content_type = "application/problem+json"),
        problems::Unauthenticated,
        (status = 404, description = "sso_not_configured", body = crate::http::error::Problem, content_type = "application/problem+json")))]
async fn start(
    State(sso): State<Sso>,
    RawQuery(query): RawQuery,
    caller: Result<Caller, ApiError>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let org = org_parameter(query.as_deref())?;
    let test = test_parameter(query.as_deref())?;
    let started = match test {
        true => match require_tester(caller, &org) {
            Ok(()) => flow::start(&sso, &org, true).await.map_err(ApiError::from),
            Err(refusal) => Err(refusal),
        },
        false => flow::start(&sso, &org, false).await.map_err(ApiError::from),
    };
    let (departure, cookie) = match started {
        Ok(started) => started,
        // The settings page's button is a navigation: show why there, not a problem document.
        Err(problem) if test && navigating(&headers) => {
            return Ok((
                StatusCode::SEE_OTHER,
                [(
                    header::LOCATION,
                    Landing::Test.refused(problem.code.as_str()),
                )],
            )
                .into_response());
        }
        Err(problem) => return Err(problem),
    };
    let cookie = attempt_cookie(cookie, sso.auth().settings().cookie_secure);
    let mut response = match departure {
        Departure::Redirect(location) => {
            (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
        }
        Departure::Post(action, fields) => Html(post_page(&action, &fields)).into_response(),
    };
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.append(header::SET_COOKIE, cookie);
    Ok(response)
}

/// A page with one button posting `fields` to `action` (no script, so the CSP stays strict).
fn post_page(action: &str, fields: &[(String, String)]) -> String {
    let escape = |text: &str| {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let inputs: String = fields
        .iter()
        .map(|(name, value)| {
            format!(
                "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
                escape(name),
                escape(value)
            )
        })
        .collect();
    format!(
        "<!doctype html><html lang=\"en\"><head><title>Sign in</title></head><body><form method=\"post\" action=\"{}\">{inputs}<button type=\"submit\">Continue to your identity provider</button></form></body></html>",
        escape(action)
    )
}

/// The ACS: the IdP posts `SAMLResponse` and `RelayState` here (HTTP-POST binding).
#[utoipa::path(post, path = "/api/v1/auth/sso/saml/acs", tag = "sso",
    request_body(content_type = "application/x-www-form-urlencoded", description = "`SAMLResponse` (base64) and `RelayState`"),
    responses((status = 303, description = "to `/` signed in, to the code step, or to `/login?sso_error=<code>`; a test sign-in to `/settings/sso?sso_test=ok&email=…` or `?sso_test=failed&code=…`"),
        problems::TooLarge))]
async fn assertion_consumer_service(
    State(sso): State<Sso>,
    ClientAddr(client): ClientAddr,
    headers: HeaderMap,
    request: Request,
) -> Result<Response, ApiError> {
    let rules = request
        .extensions()
        .get::<BodyRules>()
        .copied()
        .ok_or_else(|| ApiError::internal("no body rules for this route"))?;
    let rules = BodyRules {
        max_bytes: MAX_ACS_BODY_BYTES,
        ..rules
    };
    let body = read_body(request.into_body(), rules).await?;
    let jar = CookieJar::from_headers(&headers);
    let cookie = jar
        .get(ATTEMPT_COOKIE)
        .map(|cookie| cookie.value().to_owned());
    let landing = flow::landing(&sso, cookie.as_deref());
    let result = match acs_fields(&body) {
        Ok((saml_response, relay_state)) => {
            flow::consume(&sso, saml_response, relay_state, cookie.as_deref(), client).await
        }
        Err(error) => Err(error),
    };
    let mut response = browser_answer_to(&sso, result, landing);
    let secure = sso.auth().settings().cookie_secure;
    response
        .headers_mut()
        .append(header::SET_COOKIE, attempt_cookie(String::new(), secure));
    Ok(response)
}

/// `SAMLResponse` and `RelayState` of the form, each at most once.
fn acs_fields(body: &[u8]) -> Result<(String, Option<String>), SsoError> {
    let (mut saml_response, mut relay_state) = (None, None);
    for (name, value) in url::form_urlencoded::parse(body) {
        let slot = match name.as_ref() {
            "SAMLResponse" => &mut saml_response,
            "RelayState" => &mut relay_state,
            _ => continue,
        };
        if slot.replace(value.into_owned()).is_some() {
            return Err(SsoError::Rejected(format!("{name} given twice")));
        }
    }
    let saml_response =
        saml_response.ok_or_else(|| SsoError::Rejected("no SAMLResponse".to_string()))?;
    Ok((saml_response, relay_state))
}
