//! `/scim/v2/Users`: list (with one `eq` filter and `startIndex`/`count`), create, read,
//! replace, patch and delete the organisation's users (RFC 7644 section 3).
//!
//! Invariants: a user's SCIM `id` is its account's user id; new users join with the viewer role
//! until a group gives them another; deactivating (`active: false`) or deleting a member ends
//! its sessions, closes its terminals (they follow the sessions) and revokes its API keys in
//! the organisation, as removing a member does.

use axum::extract::{FromRef, Path, RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::access::ScimCaller;
use super::api::{ScimJson, base, note_logout, provision_error, provisioner};
use super::filter::{Filter, FilterAttribute};
use super::patch;
use super::protocol::{ListWindow, ScimError, USER_SCHEMA, scim_json};
use super::provision::{self, ScimUser};
use super::user::UserAttributes;
use crate::accounts::model::{Role, UserId};
use crate::auth::Auth;
use crate::store::Store;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Store: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(list_users, create_user))
        .routes(routes!(get_user, replace_user, patch_user, delete_user))
}

/// The role a provisioned user starts with.
const FIRST_ROLE: Role = Role::Viewer;

pub(super) fn render(user: &ScimUser, base: &str) -> Value {
    let meta = json!({
        "resourceType": "User",
        "created": user.created_at.to_rfc3339(),
        "lastModified": user.updated_at.to_rfc3339(),
        "location": format!("{base}/scim/v2/Users/{}", user.user_id),
    });
    let mut shown = user.attributes.render(user.user_id.as_str(), meta);
    shown["emails"] = json!([{"value": user.email, "type": "work", "primary": true}]);
    shown
}

fn matches(user: &ScimUser, filter: &Filter) -> bool {
    let value = filter.value.as_str();
    match filter.attribute {
        FilterAttribute::UserName => user.attributes.user_name.eq_ignore_ascii_case(value),
        FilterAttribute::Email => user.email.eq_ignore_ascii_case(value),
        FilterAttribute::ExternalId => user.attributes.external_id.as_deref() == Some(value),
        FilterAttribute::DisplayName => user.attributes.display_name.as_deref() == Some(value),
        FilterAttribute::Id => user.user_id.as_str() == value,
    }
}

/// The query parameters of a list: `filter`, `startIndex`, `count`.
pub(super) fn list_query(query: Option<&str>) -> Result<(Option<Filter>, ListWindow), ScimError> {
    let (mut filter, mut start, mut count) = (None, None, None);
    for (name, value) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match name.as_ref() {
            "filter" => filter = Some(value.into_owned()),
            "startIndex" => start = Some(value.into_owned()),
            "count" => count = Some(value.into_owned()),
            _ => {}
        }
    }
    let filter = filter
        .map(|text| {
            Filter::parse(&text).map_err(|error| ScimError::bad("invalidFilter", error.to_string()))
        })
        .transpose()?;
    Ok((
        filter,
        ListWindow::parse(start.as_deref(), count.as_deref())?,
    ))
}

async fn users(store: &Store, caller: &ScimCaller) -> Result<Vec<ScimUser>, ScimError> {
    let org = caller.org_id.clone();
    store
        .read(move |txn| provision::users_of_org(txn, &org))
        .await
        .map_err(ScimError::internal)
}

async fn one_user(store: &Store, caller: &ScimCaller, id: &str) -> Result<ScimUser, ScimError> {
    let id = UserId::parse(id).map_err(|_| ScimError::not_found("user"))?;
    let org = caller.org_id.clone();
    store
        .read(move |txn| provision::user_of_org(txn, &org, &id))
        .await
        .map_err(ScimError::internal)?
        .ok_or_else(|| ScimError::not_found("user"))
}

fn user_id(id: &str) -> Result<UserId, ScimError> {
    UserId::parse(id).map_err(|_| ScimError::not_found("user"))
}

/// The organisation's users.
#[utoipa::path(get, path = "/scim/v2/Users", tag = "scim",
    params(("filter" = Option<String>, Query, description = "one comparison: userName, externalId, emails or id eq \"…\""),
        ("startIndex" = Option<usize>, Query), ("count" = Option<usize>, Query)),
    responses((status = 200, description = "a ListResponse of User", content_type = "application/scim+json"),
        (status = 400, description = "invalidFilter"), (status = 401, description = "no or a bad SCIM token"),
        (status = 403, description = "plan_required, or an address outside the allowlist")))]
async fn list_users(
    State(auth): State<Auth>,
    caller: ScimCaller,
    RawQuery(query): RawQuery,
) -> Result<Response, ScimError> {
    let (filter, window) = list_query(query.as_deref())?;
    let base = base(&auth);
    let found: Vec<Value> = users(auth.store(), &caller)
        .await?
        .iter()
        .filter(|user| filter.as_ref().is_none_or(|filter| matches(user, filter)))
        .map(|user| render(user, &base))
        .collect();
    Ok(scim_json(StatusCode::OK, window.answer(found)))
}

/// Provisions a user: a membership of the account with that e-mail, made when there is none.
#[utoipa::path(post, path = "/scim/v2/Users", tag = "scim",
    request_body(content = Object, content_type = "application/scim+json"),
    responses((status = 201, description = "the User", content_type = "application/scim+json"),
        (status = 409, description = "uniqueness: already a user of this organisation")))]
async fn create_user(
    State(auth): State<Auth>,
    caller: ScimCaller,
    ScimJson(body): ScimJson,
) -> Result<Response, ScimError> {
    let attributes = UserAttributes::from_resource(&body)?;
    let by = provisioner(&caller);
    let clock = auth.clock().clone();
    let created = auth
        .store()
        .write(move |txn| provision::create(txn, &by, attributes.clone(), FIRST_ROLE, clock.now()))
        .await
        .map_err(provision_error)?;
    let shown = render(&created, &base(&auth));
    let mut response = scim_json(StatusCode::CREATED, shown);
    if let Ok(location) = HeaderValue::from_str(&format!(
        "{}/scim/v2/Users/{}",
        base(&auth),
        created.user_id
    )) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// One user.
#[utoipa::path(get, path = "/scim/v2/Users/{id}", tag = "scim",
    params(("id" = String, Path, description = "the user's id")),
    responses((status = 200, description = "the User", content_type = "application/scim+json"),
        (status = 404, description = "no such user in this organisation")))]
async fn get_user(
    State(auth): State<Auth>,
    caller: ScimCaller,
    Path(id): Path<String>,
) -> Result<Response, ScimError> {
    let user = one_user(auth.store(), &caller, &id).await?;
    Ok(scim_json(StatusCode::OK, render(&user, &base(&auth))))
}

/// Applies new attributes (from a PUT or a PATCH) and answers the user.
async fn update(
    auth: &Auth,
    caller: &ScimCaller,
    id: &str,
    next: UserAttributes,
) -> Result<Response, ScimError> {
    let changed = provision::update(
        auth.store(),
        auth.clock(),
        &provisioner(caller),
        user_id(id)?,
        next,
    )
    .await
    .map_err(provision_error)?;
    note_logout(auth, &changed);
    Ok(scim_json(
        StatusCode::OK,
        render(&changed.answer, &base(auth)),
    ))
}

/// Replaces a user's attributes; `active: false` deactivates it.
#[utoipa::path(put, path = "/scim/v2/Users/{id}", tag = "scim",
    params(("id" = String, Path, description = "the user's id")),
    request_body(content = Object, content_type = "application/scim+json"),
    responses((status = 200, description = "the User", content_type = "application/scim+json"),
        (status = 404, description = "no such user in this organisation")))]
async fn replace_user(
    State(auth): State<Auth>,
    caller: ScimCaller,
    Path(id): Path<String>,
    ScimJson(body): ScimJson,
) -> Result<Response, ScimError> {
    let next = UserAttributes::from_resource(&body)?;
    update(&auth, &caller, &id, next).await
}

/// Changes some of a user's attributes (PatchOp, as Okta and Entra ID send it).
#[utoipa::path(patch, path = "/scim/v2/Users/{id}", tag = "scim",
    params(("id" = String, Path, description = "the user's id")),
    request_body(content = Object, content_type = "application/scim+json"),
    responses((status = 200, description = "the User", content_type = "application/scim+json"),
        (status = 404, description = "no such user in this organisation")))]
async fn patch_user(
    State(auth): State<Auth>,
    caller: ScimCaller,
    Path(id): Path<String>,
    ScimJson(body): ScimJson,
) -> Result<Response, ScimError> {
    let operations = patch::parse(&body, USER_SCHEMA)?;
    let current = one_user(auth.store(), &caller, &id).await?;
    let next = current.attributes.patched(&operations)?;
    update(&auth, &caller, &id, next).await
}

/// Deletes a user from the organisation (the account stays, with its other organisations).
#[utoipa::path(delete, path = "/scim/v2/Users/{id}", tag = "scim",
    params(("id" = String, Path, description = "the user's id")),
    responses((status = 204), (status = 404, description = "no such user in this organisation")))]
async fn delete_user(
    State(auth): State<Auth>,
    caller: ScimCaller,
    Path(id): Path<String>,
) -> Result<StatusCode, ScimError> {
    let changed = provision::delete(
        auth.store(),
        auth.clock(),
        &provisioner(&caller),
        user_id(&id)?,
    )
    .await
    .map_err(provision_error)?;
    note_logout(&auth, &changed);
    Ok(StatusCode::NO_CONTENT)
}
