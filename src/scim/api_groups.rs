//! `/scim/v2/Groups`: the organisation's roles as groups (`admins`, `members`, `viewers`), so a
//! provider's group membership sets a member's role. Owners are not a group: ownership is given
//! in Lookout itself.
//!
//! Invariants: adding a user to a group gives it that role and removing it from the group it is
//! in makes it a viewer, by the role rules of the token's creator (an admin's token cannot make
//! admins) and the last-owner rule; a role change ends the member's sessions, as in the members
//! API. A group is created only by naming one of the three (a provider linking its group), and
//! never deleted.

use std::collections::BTreeSet;

use axum::extract::{FromRef, Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::access::ScimCaller;
use super::api::{ScimJson, base, note_logout, provision_error, provisioner};
use super::api_users::list_query;
use super::filter::FilterAttribute;
use super::patch::{self, Op};
use super::protocol::{GROUP_SCHEMA, ScimError, scim_json};
use super::provision::{self, ScimUser};
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
        .routes(routes!(list_groups, create_group))
        .routes(routes!(get_group, replace_group, patch_group, delete_group))
}

/// The groups: id (also the display name) and role.
const GROUPS: [(&str, Role); 3] = [
    ("admins", Role::Admin),
    ("members", Role::Member),
    ("viewers", Role::Viewer),
];

/// The group a provider names: its id, or the role's name, singular or plural, in any case.
fn group_named(name: &str) -> Option<(&'static str, Role)> {
    let name = name.trim().to_ascii_lowercase();
    let name = name.strip_prefix("lookout ").unwrap_or(&name);
    GROUPS
        .into_iter()
        .find(|(id, role)| name == *id || name == role.as_str())
}

fn render(id: &str, role: Role, users: &[ScimUser], base: &str) -> Value {
    let members: Vec<Value> = users
        .iter()
        .filter(|user| user.attributes.active && user.role == role)
        .map(|user| {
            json!({"value": user.user_id, "display": user.email,
                   "$ref": format!("{base}/scim/v2/Users/{}", user.user_id)})
        })
        .collect();
    json!({
        "schemas": [GROUP_SCHEMA],
        "id": id,
        "displayName": id,
        "members": members,
        "meta": {"resourceType": "Group", "location": format!("{base}/scim/v2/Groups/{id}")},
    })
}

async fn users(auth: &Auth, caller: &ScimCaller) -> Result<Vec<ScimUser>, ScimError> {
    let org = caller.org_id.clone();
    auth.store()
        .read(move |txn| provision::users_of_org(txn, &org))
        .await
        .map_err(ScimError::internal)
}

fn group(id: &str) -> Result<(&'static str, Role), ScimError> {
    GROUPS
        .into_iter()
        .find(|(group, _)| *group == id)
        .ok_or_else(|| ScimError::not_found("group"))
}

/// The user ids of a `members` value: `[{"value": "usr_…"}, …]`.
fn member_ids(value: &Value) -> Result<Vec<UserId>, ScimError> {
    let members = match value {
        Value::Array(members) => members.as_slice(),
        Value::Object(_) => std::slice::from_ref(value),
        _ => return Err(ScimError::bad("invalidValue", "members: expected an array")),
    };
    members
        .iter()
        .map(|member| {
            member["value"]
                .as_str()
                .and_then(|id| UserId::parse(id).ok())
                .ok_or_else(|| {
                    ScimError::bad("invalidValue", "members: each needs the value of a user id")
                })
        })
        .collect()
}

/// The member named in a path such as `members[value eq "usr_…"]`.
fn member_in_path(path: &str) -> Result<Option<UserId>, ScimError> {
    let lower = path.to_ascii_lowercase();
    if lower == "members" {
        return Ok(None);
    }
    let inner = lower
        .strip_prefix("members[")
        .and_then(|rest| rest.strip_suffix(']'))
        .ok_or_else(|| {
            ScimError::bad("invalidPath", format!("{path}: groups take members only"))
        })?;
    // `value eq "…"` chooses a member by its id.
    let comparison = inner
        .starts_with("value ")
        .then(|| format!("id{}", &path["members[value".len()..path.len() - 1]))
        .ok_or_else(|| ScimError::bad("invalidPath", "members are chosen by value"))?;
    let filter = super::filter::Filter::parse(&comparison)
        .map_err(|_| ScimError::bad("invalidPath", format!("{inner}: expected value eq \"…\"")))?;
    UserId::parse(&filter.value)
        .map(Some)
        .map_err(|_| ScimError::bad("invalidValue", "not a user id"))
}

/// What a change asks of the group's membership.
#[derive(Default)]
struct Edit {
    add: BTreeSet<UserId>,
    remove: BTreeSet<UserId>,
    /// The whole membership (a PUT, or a replace of `members`).
    replace: Option<BTreeSet<UserId>>,
}

fn edit_of_patch(body: &Value) -> Result<Edit, ScimError> {
    let mut edit = Edit::default();
    for operation in patch::parse(body, GROUP_SCHEMA)? {
        match (
            operation.op,
            operation.path.as_deref(),
            operation.value.as_ref(),
        ) {
            (Op::Add, Some(path), Some(value)) if path.eq_ignore_ascii_case("members") => {
                edit.add.extend(member_ids(value)?);
            }
            (Op::Replace, Some(path), Some(value)) if path.eq_ignore_ascii_case("members") => {
                edit.replace = Some(member_ids(value)?.into_iter().collect());
            }
            (Op::Remove, Some(path), value) => match (member_in_path(path)?, value) {
                (Some(member), _) => {
                    edit.remove.insert(member);
                }
                (None, Some(value)) => edit.remove.extend(member_ids(value)?),
                // Removing every member.
                (None, None) => edit.replace = Some(BTreeSet::new()),
            },
            // Okta's `{"op":"replace","value":{"id":…,"displayName":…}}` and a `members` key.
            (Op::Add | Op::Replace, None, Some(Value::Object(values))) => {
                if let Some(members) = values.get("members") {
                    let ids = member_ids(members)?;
                    match operation.op {
                        Op::Add => edit.add.extend(ids),
                        _ => edit.replace = Some(ids.into_iter().collect()),
                    }
                }
            }
            (_, Some(path), _) if path.eq_ignore_ascii_case("displayName") => {}
            (_, Some(path), _) => {
                return Err(ScimError::bad(
                    "invalidPath",
                    format!("{path}: groups take members only"),
                ));
            }
            _ => {
                return Err(ScimError::bad(
                    "invalidSyntax",
                    "an operation groups do not take",
                ));
            }
        }
    }
    Ok(edit)
}

/// Applies `edit` to the group of `role`: added users get the role, removed ones (and, for a
/// replace, those left out) become viewers.
async fn apply(auth: &Auth, caller: &ScimCaller, role: Role, edit: Edit) -> Result<(), ScimError> {
    let current: BTreeSet<UserId> = users(auth, caller)
        .await?
        .into_iter()
        .filter(|user| user.attributes.active && user.role == role)
        .map(|user| user.user_id)
        .collect();
    let (mut add, mut remove) = (edit.add, edit.remove);
    if let Some(replace) = edit.replace {
        remove.extend(current.difference(&replace).cloned());
        add.extend(replace);
    }
    let by = provisioner(caller);
    let downgrade = if role == Role::Viewer {
        None
    } else {
        Some(Role::Viewer)
    };
    let changes = add
        .into_iter()
        .filter(|user| !current.contains(user))
        .map(|user| (user, Some(role)))
        .chain(
            remove
                .into_iter()
                .filter(|user| current.contains(user))
                .map(|user| (user, downgrade)),
        );
    for (user, next) in changes {
        let Some(next) = next else { continue };
        let changed = provision::give_role(auth.store(), auth.clock(), &by, user, next)
            .await
            .map_err(provision_error)?;
        note_logout(auth, &changed);
    }
    Ok(())
}

async fn answer(
    auth: &Auth,
    caller: &ScimCaller,
    id: &str,
    role: Role,
    status: StatusCode,
) -> Result<Response, ScimError> {
    let users = users(auth, caller).await?;
    Ok(scim_json(status, render(id, role, &users, &base(auth))))
}

/// The organisation's role groups.
#[utoipa::path(get, path = "/scim/v2/Groups", tag = "scim",
    params(("filter" = Option<String>, Query, description = "displayName eq \"…\""),
        ("startIndex" = Option<usize>, Query), ("count" = Option<usize>, Query)),
    responses((status = 200, description = "a ListResponse of Group", content_type = "application/scim+json")))]
async fn list_groups(
    State(auth): State<Auth>,
    caller: ScimCaller,
    RawQuery(query): RawQuery,
) -> Result<Response, ScimError> {
    let (filter, window) = list_query(query.as_deref())?;
    let users = users(&auth, &caller).await?;
    let base = base(&auth);
    let found: Vec<Value> = GROUPS
        .into_iter()
        .filter(|(id, _)| {
            filter.as_ref().is_none_or(|filter| match filter.attribute {
                FilterAttribute::DisplayName => {
                    group_named(&filter.value).is_some_and(|(named, _)| named == *id)
                }
                FilterAttribute::Id => filter.value == *id,
                _ => false,
            })
        })
        .map(|(id, role)| render(id, role, &users, &base))
        .collect();
    Ok(scim_json(StatusCode::OK, window.answer(found)))
}

/// Links a provider's group to one of the role groups, by its name, with its members.
#[utoipa::path(post, path = "/scim/v2/Groups", tag = "scim",
    request_body(content = Object, content_type = "application/scim+json"),
    responses((status = 201, description = "the Group", content_type = "application/scim+json"),
        (status = 400, description = "not the name of a role group")))]
async fn create_group(
    State(auth): State<Auth>,
    caller: ScimCaller,
    ScimJson(body): ScimJson,
) -> Result<Response, ScimError> {
    let name = body["displayName"].as_str().unwrap_or("");
    let (id, role) = group_named(name).ok_or_else(|| {
        ScimError::bad(
            "invalidValue",
            "displayName: the groups are admins, members and viewers",
        )
    })?;
    if let Some(members) = body.get("members") {
        let edit = Edit {
            add: member_ids(members)?.into_iter().collect(),
            ..Edit::default()
        };
        apply(&auth, &caller, role, edit).await?;
    }
    answer(&auth, &caller, id, role, StatusCode::CREATED).await
}

/// One role group with its members.
#[utoipa::path(get, path = "/scim/v2/Groups/{id}", tag = "scim",
    params(("id" = String, Path, description = "admins, members or viewers")),
    responses((status = 200, description = "the Group", content_type = "application/scim+json"),
        (status = 404, description = "no such group")))]
async fn get_group(
    State(auth): State<Auth>,
    caller: ScimCaller,
    Path(id): Path<String>,
) -> Result<Response, ScimError> {
    let (id, role) = group(&id)?;
    answer(&auth, &caller, id, role, StatusCode::OK).await
}

/// Replaces a role group's members.
#[utoipa::path(put, path = "/scim/v2/Groups/{id}", tag = "scim",
    params(("id" = String, Path, description = "admins, members or viewers")),
    request_body(content = Object, content_type = "application/scim+json"),
    responses((status = 200, description = "the Group", content_type = "application/scim+json")))]
async fn replace_group(
    State(auth): State<Auth>,
    caller: ScimCaller,
    Path(id): Path<String>,
    ScimJson(body): ScimJson,
) -> Result<Response, ScimError> {
    let (id, role) = group(&id)?;
    let members = body
        .get("members")
        .map(member_ids)
        .transpose()?
        .unwrap_or_default();
    let edit = Edit {
        replace: Some(members.into_iter().collect()),
        ..Edit::default()
    };
    apply(&auth, &caller, role, edit).await?;
    answer(&auth, &caller, id, role, StatusCode::OK).await
}

/// Adds and removes members (PatchOp, as Okta and Entra ID send it).
#[utoipa::path(patch, path = "/scim/v2/Groups/{id}", tag = "scim",
    params(("id" = String, Path, description = "admins, members or viewers")),
    request_body(content = Object, content_type = "application/scim+json"),
    responses((status = 200, description = "the Group", content_type = "application/scim+json")))]
async fn patch_group(
    State(auth): State<Auth>,
    caller: ScimCaller,
    Path(id): Path<String>,
    ScimJson(body): ScimJson,
) -> Result<Response, ScimError> {
    let (id, role) = group(&id)?;
    apply(&auth, &caller, role, edit_of_patch(&body)?).await?;
    answer(&auth, &caller, id, role, StatusCode::OK).await
}

/// The role groups are never deleted.
#[utoipa::path(delete, path = "/scim/v2/Groups/{id}", tag = "scim",
    params(("id" = String, Path, description = "admins, members or viewers")),
    responses((status = 400, description = "mutability: the role groups cannot be deleted")))]
async fn delete_group(
    State(_auth): State<Auth>,
    _caller: ScimCaller,
    Path(id): Path<String>,
) -> Result<StatusCode, ScimError> {
    group(&id)?;
    Err(ScimError::bad(
        "mutability",
        "the role groups cannot be deleted; remove their members instead",
    ))
}
