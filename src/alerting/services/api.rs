//! `GET /api/v1/services`: the services registry as a page, with each service's environments
//! and its error events of the last 24 hours.

use axum::Json;
use axum::extract::{FromRef, State};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{SERVICES, Service};
use crate::alerting::Alerting;
use crate::auth::{Auth, Viewer};
use crate::http::ApiError;
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::store::{Store, StoreError};

#[derive(Debug, Serialize, ToSchema)]
pub struct ServiceView {
    pub name: String,
    pub environments: Vec<String>,
    pub last_seen: String,
    /// Error events received in the last 24 hours.
    pub errors_24h: u64,
}

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Alerting: FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(list_services))
}

/// Services seen by this organisation, with their environments and error counts.
#[utoipa::path(get, path = "/api/v1/services", tag = "services",
    params(("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = Page<ServiceView>), problems::Invalid),
    security(("session" = []), ("api_key" = [])))]
async fn list_services(
    State(alerting): State<Alerting>,
    Viewer(caller): Viewer,
    page: PageRequest,
) -> Result<Json<Page<ServiceView>>, ApiError> {
    let store: Store = alerting.store().clone();
    let now = alerting.clock().now();
    // The cursor is the last name listed: any string is a position in name order.
    let (org, after, limit) = (caller.org_id, page.cursor.clone(), page.limit);
    let services = store
        .read(move |txn| SERVICES.page_of_owner(txn, org.as_str(), after.as_deref(), limit + 1))
        .await
        .map_err(|e: StoreError| ApiError::from(e))?;
    let this_hour = now.unix_seconds().div_euclid(3600);
    let view = |service: &Service| ServiceView {
        errors_24h: service
            .error_hours
            .iter()
            .filter(|(hour, _)| this_hour - hour < 24)
            .map(|(_, n)| n)
            .sum(),
        name: service.name.clone(),
        environments: service.environments.clone(),
        last_seen: service.last_seen.to_rfc3339(),
    };
    Ok(Json(page.answer(
        services,
        |service| service.name.clone(),
        view,
    )))
}
