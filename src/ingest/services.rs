//! The services registry: every service an organisation's telemetry or deployments named, with
//! its environments and when it was last seen. Filled by ingest and deployments; read by
//! `GET /api/v1/services` (the example bearer-token call of SPEC.md).

use axum::Json;
use axum::extract::{FromRef, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{Auth, Viewer};
use crate::clock::Timestamp;
use crate::http::ApiError;
use crate::store::codec::Record;
use crate::store::{RecordTable, Scan, Store, StoreError, tables};

/// A service as stored, keyed `{org_id}/{name}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Service {
    pub name: String,
    pub environments: Vec<String>,
    pub last_seen: Timestamp,
    /// Error events per hour bucket (unix hour -> count), trimmed to the last 24 hours.
    #[serde(default)]
    pub error_hours: Vec<(i64, u64)>,
}

impl Record for Service {
    const KIND: &'static str = "service";
}

const SERVICES: RecordTable<Service> = RecordTable::new(tables::SERVICES);

#[derive(Debug, Serialize, ToSchema)]
pub struct ServiceView {
    pub name: String,
    pub environments: Vec<String>,
    pub last_seen: String,
    /// Error events received in the last 24 hours.
    pub errors_24h: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ServiceList {
    pub items: Vec<ServiceView>,
}

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(list_services))
}

/// Services seen by this organisation, with their environments and error counts.
#[utoipa::path(get, path = "/api/v1/services", tag = "services",
    responses((status = 200, body = ServiceList)),
    security(("session" = []), ("api_key" = [])))]
async fn list_services(
    State(auth): State<Auth>,
    Viewer(caller): Viewer,
) -> Result<Json<ServiceList>, ApiError> {
    let store: Store = auth.store().clone();
    let now = auth.clock().now();
    let prefix = tables::owner_prefix(caller.org_id.as_str());
    let services = store
        .read(move |txn| SERVICES.scan(txn, Scan::prefix(&prefix)))
        .await
        .map_err(|e: StoreError| ApiError::from(e))?;
    let this_hour = now.unix_seconds().div_euclid(3600);
    let items = services
        .into_iter()
        .map(|(_, service)| ServiceView {
            errors_24h: service
                .error_hours
                .iter()
                .filter(|(hour, _)| this_hour - hour < 24)
                .map(|(_, n)| n)
                .sum(),
            name: service.name,
            environments: service.environments,
            last_seen: service.last_seen.to_rfc3339(),
        })
        .collect();
    Ok(Json(ServiceList { items }))
}
