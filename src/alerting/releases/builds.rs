//! Jenkins builds: `POST /api/v1/jenkins/notify` takes the Notification plugin's JSON (with a
//! `jenkins` inbound token) and `GET /api/v1/builds` lists what it recorded.
//!
//! Invariants: one build per job and number, whatever order or how often the plugin's phases
//! arrive (the lookup and the write share one transaction); the phase never moves backwards
//! (`model::apply_notification`).

use axum::Json;
use axum::extract::{FromRef, RawQuery, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::db;
use super::deployments::{optional, required};
use super::model::{Build, BuildId, BuildNotification, apply_notification, phase_rank};
use crate::alerting::inbound::api::{Inbound, JenkinsKind};
use crate::alerting::{Alerting, AlertingError};
use crate::auth::{Auth, Viewer};
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::http::query::{filters, newest_first};
use crate::http::{ApiError, ApiJson, ErrorCode};
use crate::store::Store;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Alerting: FromRef<S>,
    Store: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(jenkins_notify))
        .routes(routes!(list_builds))
}

/// The Notification plugin's body; the fields Lookout reads, others ignored.
#[derive(Debug, Deserialize, ToSchema)]
pub struct JenkinsNotification {
    /// The job name.
    pub name: String,
    pub build: JenkinsBuild,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct JenkinsBuild {
    pub number: u64,
    /// QUEUED, STARTED, COMPLETED or FINALIZED.
    pub phase: String,
    /// SUCCESS, FAILURE, UNSTABLE, ABORTED or NOT_BUILT once finished.
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub full_url: Option<String>,
    #[serde(default)]
    pub scm: Option<JenkinsScm>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct JenkinsScm {
    #[serde(default)]
    pub commit: Option<String>,
    #[serde(default)]
    pub branch: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BuildResponse {
    pub id: String,
    pub job: String,
    pub number: u64,
    pub phase: String,
    pub status: Option<String>,
    pub url: Option<String>,
    pub commit: Option<String>,
    pub branch: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
}

fn build_view(build: &Build) -> BuildResponse {
    BuildResponse {
        id: build.id.to_string(),
        job: build.job.clone(),
        number: build.number,
        phase: build.phase.clone(),
        status: build.status.clone(),
        url: build.url.clone(),
        commit: build.commit.clone(),
        branch: build.branch.clone(),
        started_at: build.started_at.map(|at| at.to_rfc3339()),
        finished_at: build.finished_at.map(|at| at.to_rfc3339()),
    }
}

fn validated(request: &JenkinsNotification) -> Result<BuildNotification, ApiError> {
    let phase = request.build.phase.trim().to_ascii_uppercase();
    if phase_rank(&phase).is_none() {
        return Err(ApiError::new(
            ErrorCode::InvalidPayload,
            "build.phase: one of QUEUED, STARTED, COMPLETED, FINALIZED",
        ));
    }
    let status = optional("build.status", request.build.status.as_deref(), 50)?
        .map(|status| status.to_ascii_uppercase());
    let scm = request.build.scm.as_ref();
    Ok(BuildNotification {
        job: required("name", &request.name, 300)?,
        number: request.build.number,
        phase,
        status,
        url: optional("build.full_url", request.build.full_url.as_deref(), 2000)?,
        commit: optional(
            "build.scm.commit",
            scm.and_then(|s| s.commit.as_deref()),
            200,
        )?,
        branch: optional(
            "build.scm.branch",
            scm.and_then(|s| s.branch.as_deref()),
            300,
        )?,
    })
}

/// Records one Jenkins Notification plugin message; answers with the build as it now stands.
#[utoipa::path(post, path = "/api/v1/jenkins/notify", tag = "builds",
    request_body = JenkinsNotification,
    params(("X-Lookout-Token" = Option<String>, Header, description = "inbound token"),
        ("token" = Option<String>, Query, description = "inbound token, when X-Lookout-Token cannot be sent")),
    responses((status = 200, body = BuildResponse),
        problems::Unauthenticated,
        problems::Forbidden))]
async fn jenkins_notify(
    State(alerting): State<Alerting>,
    inbound: Inbound<JenkinsKind>,
    ApiJson(request): ApiJson<JenkinsNotification>,
) -> Result<Json<BuildResponse>, ApiError> {
    let note = validated(&request)?;
    let org = inbound.token.org_id.clone();
    let now = alerting.clock().now();
    let build = alerting
        .store()
        .write(move |txn| {
            let mut build = match db::build_by_number(txn, &org, &note.job, note.number)? {
                Some(build) => build,
                None => Build {
                    id: BuildId::generate(),
                    org_id: org.clone(),
                    job: note.job.clone(),
                    number: note.number,
                    phase: note.phase.clone(),
                    status: None,
                    url: None,
                    commit: None,
                    branch: None,
                    started_at: None,
                    finished_at: None,
                    updated_at: now,
                },
            };
            apply_notification(&mut build, &note, now);
            db::put_build(txn, &build)?;
            Ok::<_, AlertingError>(build)
        })
        .await?;
    Ok(Json(build_view(&build)))
}

/// Lists the builds Jenkins reported, in order of their first notification (`order=newest`:
/// newest first).
#[utoipa::path(get, path = "/api/v1/builds", tag = "builds",
    params(("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query),
        ("order" = Option<String>, Query, description = "oldest (the default) or newest first")),
    responses((status = 200, body = Page<BuildResponse>), problems::Invalid))]
async fn list_builds(
    State(alerting): State<Alerting>,
    Viewer(caller): Viewer,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<BuildResponse>>, ApiError> {
    let page = PageRequest::from_query(query.as_deref())?;
    let after = page.cursor_as(BuildId::parse)?;
    let newest = newest_first(&filters(query.as_deref(), &["order"])?)?;
    let (org, limit) = (caller.org_id.clone(), page.limit);
    let rows = alerting
        .store()
        .read(move |txn| db::builds_of_org(txn, &org, after.as_ref(), limit + 1, newest))
        .await?;
    Ok(Json(page.answer(
        rows,
        |build| build.id.to_string(),
        build_view,
    )))
}
