//! Management API of flags and experiments, and experiment results (CONTRACT section 3).
//! Admins change them; every member reads them.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{FromRef, Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::ExperimentError;
use super::model::{Experiment, Flag, Variant, validate_key, validate_variants};
use crate::auth::audit;
use crate::auth::{Admin, Auth, Viewer};
use crate::clock::Clock;
use crate::http::error::Problem;
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::http::{ApiError, ApiJson, ErrorCode};
use crate::store::{Store, StoreError};

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Store: FromRef<S>,
    Clock: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(list_flags))
        .routes(routes!(put_flag, delete_flag))
        .routes(routes!(list_experiments, create_experiment))
        .routes(routes!(get_experiment, patch_experiment, delete_experiment))
        .routes(routes!(experiment_results))
}

fn invalid(message: String) -> ApiError {
    ApiError::new(ErrorCode::InvalidPayload, message)
}

impl From<ExperimentError> for ApiError {
    fn from(error: ExperimentError) -> ApiError {
        match error {
            ExperimentError::Store(store) => ApiError::from(store),
            ExperimentError::FlagNotFound => ApiError::not_found("flag"),
            ExperimentError::ExperimentNotFound => ApiError::not_found("experiment"),
            ExperimentError::ExperimentExists(key) => ApiError::new(
                ErrorCode::ExperimentExists,
                format!("experiment {key:?} exists"),
            ),
            ExperimentError::ArchivedAndActive => invalid(error.to_string()),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FlagView {
    pub name: String,
    #[schema(value_type = Object)]
    pub value: Value,
    pub updated_at: String,
}

impl From<Flag> for FlagView {
    fn from(flag: Flag) -> Self {
        FlagView {
            name: flag.name,
            value: flag.value,
            updated_at: flag.updated_at.to_rfc3339(),
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutFlag {
    /// Any JSON value (boolean, number, string, object).
    #[schema(value_type = Object)]
    pub value: Value,
}

/// Every flag of the organisation.
#[utoipa::path(get, path = "/api/v1/flags", tag = "experiments",
    params(("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = Page<FlagView>)))]
async fn list_flags(
    State(store): State<Store>,
    Viewer(caller): Viewer,
    page: PageRequest,
) -> Result<Json<Page<FlagView>>, ApiError> {
    // The cursor is the last name listed: any string is a position in name order.
    let (org, after, limit) = (caller.org_id, page.cursor.clone(), page.limit);
    let flags = store
        .read(move |txn| super::flags_page_of(txn, &org, after.as_deref(), limit + 1))
        .await
        .map_err(ApiError::from)?;
    let view = |flag: &Flag| FlagView::from(flag.clone());
    Ok(Json(page.answer(flags, |flag| flag.name.clone(), view)))
}

/// Sets a flag; `ab-config` serves the new value at once.
#[utoipa::path(put, path = "/api/v1/flags/{name}", tag = "experiments", request_body = PutFlag,
    params(("name" = String, Path)),
    responses((status = 200, body = FlagView), problems::Invalid))]
async fn put_flag(
    State(store): State<Store>,
    State(clock): State<Clock>,
    Admin(caller): Admin,
    Path(name): Path<String>,
    ApiJson(request): ApiJson<PutFlag>,
) -> Result<Json<FlagView>, ApiError> {
    validate_key("flag name", &name).map_err(invalid)?;
    if request.value.is_null() {
        return Err(invalid(
            "value must not be null; DELETE the flag instead".into(),
        ));
    }
    let now = clock.now();
    let flag = Flag {
        name,
        value: request.value,
        updated_at: now,
    };
    let (stored, org, actor) = (flag.clone(), caller.org_id.clone(), caller.actor());
    store
        .write(move |txn| {
            super::put_flag(txn, &org, &stored)?;
            audit::record(
                txn,
                Some(&org),
                &actor,
                "flag.set",
                Some(&stored.name),
                json!({"value": stored.value}),
                now,
            )
        })
        .await?;
    Ok(Json(flag.into()))
}

/// Removes a flag.
#[utoipa::path(delete, path = "/api/v1/flags/{name}", tag = "experiments", params(("name" = String, Path)),
    responses((status = 204), problems::NotFound))]
async fn delete_flag(
    State(store): State<Store>,
    State(clock): State<Clock>,
    Admin(caller): Admin,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    let now = clock.now();
    let (org, actor) = (caller.org_id.clone(), caller.actor());
    store
        .write(move |txn| {
            if !super::remove_flag(txn, &org, &name)? {
                return Err(ExperimentError::FlagNotFound);
            }
            audit::record(
                txn,
                Some(&org),
                &actor,
                "flag.deleted",
                Some(&name),
                json!({}),
                now,
            )?;
            Ok(())
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ExperimentView {
    pub key: String,
    pub variants: Vec<Variant>,
    pub active: bool,
    /// Archived: off, left out of `ab-config`, results kept.
    pub archived: bool,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Experiment> for ExperimentView {
    fn from(e: Experiment) -> Self {
        ExperimentView {
            key: e.key,
            variants: e.variants,
            active: e.active,
            archived: e.archived,
            created_at: e.created_at.to_rfc3339(),
            updated_at: e.updated_at.to_rfc3339(),
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateExperiment {
    pub key: String,
    pub variants: Vec<Variant>,
    #[serde(default = "default_active")]
    pub active: bool,
}

fn default_active() -> bool {
    true
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchExperiment {
    #[serde(default)]
    pub variants: Option<Vec<Variant>>,
    #[serde(default)]
    pub active: Option<bool>,
    /// `true` archives (and switches off), `false` brings back (still off until switched on).
    #[serde(default)]
    pub archived: Option<bool>,
}

/// Every experiment of the organisation.
#[utoipa::path(get, path = "/api/v1/experiments", tag = "experiments",
    params(("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = Page<ExperimentView>)))]
async fn list_experiments(
    State(store): State<Store>,
    Viewer(caller): Viewer,
    page: PageRequest,
) -> Result<Json<Page<ExperimentView>>, ApiError> {
    // The cursor is the last key listed: any string is a position in key order.
    let (org, after, limit) = (caller.org_id, page.cursor.clone(), page.limit);
    let found = store
        .read(move |txn| super::experiments_page_of(txn, &org, after.as_deref(), limit + 1))
        .await
        .map_err(ApiError::from)?;
    let view = |experiment: &Experiment| ExperimentView::from(experiment.clone());
    Ok(Json(page.answer(
        found,
        |experiment| experiment.key.clone(),
        view,
    )))
}

/// Creates an experiment.
#[utoipa::path(post, path = "/api/v1/experiments", tag = "experiments", request_body = CreateExperiment,
    responses((status = 201, body = ExperimentView), problems::Invalid,
        (status = 409, description = "experiment_exists", body = Problem, content_type = "application/problem+json")))]
async fn create_experiment(
    State(store): State<Store>,
    State(clock): State<Clock>,
    Admin(caller): Admin,
    ApiJson(request): ApiJson<CreateExperiment>,
) -> Result<(StatusCode, Json<ExperimentView>), ApiError> {
    validate_key("experiment key", &request.key).map_err(invalid)?;
    validate_variants(&request.variants).map_err(invalid)?;
    let now = clock.now();
    let experiment = Experiment {
        key: request.key,
        variants: request.variants,
        active: request.active,
        created_at: now,
        updated_at: now,
        archived: false,
    };
    let (stored, org, actor) = (experiment.clone(), caller.org_id.clone(), caller.actor());
    store
        .write(move |txn| {
            if super::get_experiment(txn, &org, &stored.key)?.is_some() {
                return Err(ExperimentError::ExperimentExists(stored.key.clone()));
            }
            super::put_experiment(txn, &org, &stored)?;
            audit::record(
                txn,
                Some(&org),
                &actor,
                "experiment.created",
                Some(&stored.key),
                json!({}),
                now,
            )?;
            Ok(())
        })
        .await?;
    Ok((StatusCode::CREATED, Json(experiment.into())))
}

/// One experiment.
#[utoipa::path(get, path = "/api/v1/experiments/{key}", tag = "experiments", params(("key" = String, Path)),
    responses((status = 200, body = ExperimentView), problems::NotFound))]
async fn get_experiment(
    State(store): State<Store>,
    Viewer(caller): Viewer,
    Path(key): Path<String>,
) -> Result<Json<ExperimentView>, ApiError> {
    let org = caller.org_id;
    let found = store
        .read(move |txn| super::get_experiment(txn, &org, &key))
        .await
        .map_err(ApiError::from)?;
    found
        .map(|e| Json(e.into()))
        .ok_or_else(|| ApiError::not_found("experiment"))
}

/// Changes an experiment's variants, switches it on or off, or archives it (`archived`: off and
/// out of `ab-config`, its results kept).
#[utoipa::path(patch, path = "/api/v1/experiments/{key}", tag = "experiments", params(("key" = String, Path)),
    request_body = PatchExperiment,
    responses((status = 200, body = ExperimentView), problems::NotFound))]
async fn patch_experiment(
    State(store): State<Store>,
    State(clock): State<Clock>,
    Admin(caller): Admin,
    Path(key): Path<String>,
    ApiJson(request): ApiJson<PatchExperiment>,
) -> Result<Json<ExperimentView>, ApiError> {
    if let Some(variants) = &request.variants {
        validate_variants(variants).map_err(invalid)?;
    }
    let now = clock.now();
    let (org, actor) = (caller.org_id.clone(), caller.actor());
    let updated = store
        .write(move |txn| {
            let mut experiment = super::get_experiment(txn, &org, &key)?
                .ok_or(ExperimentError::ExperimentNotFound)?;
            if let Some(variants) = request.variants.clone() {
                experiment.variants = variants;
            }
            if let Some(archived) = request.archived {
                // Archiving switches off; bringing back leaves it off until switched on.
                experiment.archived = archived;
                experiment.active &= !archived;
            }
            if let Some(active) = request.active {
                experiment.active = active;
            }
            if experiment.archived && experiment.active {
                return Err(ExperimentError::ArchivedAndActive);
            }
            experiment.updated_at = now;
            super::put_experiment(txn, &org, &experiment)?;
            audit::record(
                txn,
                Some(&org),
                &actor,
                "experiment.updated",
                Some(&key),
                json!({"active": experiment.active, "archived": experiment.archived}),
                now,
            )?;
            Ok::<_, ExperimentError>(experiment)
        })
        .await?;
    Ok(Json(updated.into()))
}

/// Deletes an experiment and its counts.
#[utoipa::path(delete, path = "/api/v1/experiments/{key}", tag = "experiments", params(("key" = String, Path)),
    responses((status = 204), problems::NotFound))]
async fn delete_experiment(
    State(store): State<Store>,
    State(clock): State<Clock>,
    Admin(caller): Admin,
    Path(key): Path<String>,
) -> Result<StatusCode, ApiError> {
    let now = clock.now();
    let (org, actor) = (caller.org_id.clone(), caller.actor());
    store
        .write(move |txn| {
            if !super::remove_experiment(txn, &org, &key)? {
                return Err(ExperimentError::ExperimentNotFound);
            }
            audit::record(
                txn,
                Some(&org),
                &actor,
                "experiment.deleted",
                Some(&key),
                json!({}),
                now,
            )?;
            Ok(())
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ResultDay {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    /// Unique visitors per variant.
    pub variants: BTreeMap<String, u64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ExperimentResults {
    pub key: String,
    pub days: Vec<ResultDay>,
}

/// Unique visitors per variant and UTC day.
#[utoipa::path(get, path = "/api/v1/experiments/{key}/results", tag = "experiments", params(("key" = String, Path)),
    responses((status = 200, body = ExperimentResults), problems::NotFound))]
async fn experiment_results(
    State(store): State<Store>,
    Viewer(caller): Viewer,
    Path(key): Path<String>,
) -> Result<Json<ExperimentResults>, ApiError> {
    let org = caller.org_id;
    let lookup = key.clone();
    let found = store
        .read(move |txn| {
            if super::get_experiment(txn, &org, &lookup)?.is_none() {
                return Ok::<_, StoreError>(None);
            }
            super::results(txn, &org, &lookup).map(Some)
        })
        .await?
        .ok_or_else(|| ApiError::not_found("experiment"))?;
    let days = found
        .into_iter()
        .map(|(day, variants)| ResultDay { day, variants })
        .collect();
    Ok(Json(ExperimentResults { key, days }))
}
