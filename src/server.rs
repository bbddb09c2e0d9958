//! The composition root: opens the store, builds `AppState`, mounts every route, starts the
//! admin socket and serves until shutdown.
//!
//! Invariants: every `/api` and `/ingest` route is mounted through an `OpenApiRouter`, so the
//! document at `/api/v1/openapi.json` lists it (a tidy test forbids bypassing it); shutdown
//! stops accepting, lets requests in flight finish, commits every queued write and only then
//! releases the data dir.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::extract::{FromRef, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use metrics_exporter_prometheus::PrometheusHandle;
use serde::Serialize;
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{PropagateRequestIdLayer, SetRequestIdLayer};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::admin::AdminContext;
use crate::admin::server::AdminSocket;
use crate::agents::Agents;
use crate::alerting::Alerting;
use crate::auth::{Admin, Auth};
use crate::clock::Clock;
use crate::config::Config;
use crate::http::error::ApiError;
use crate::http::extract::{BodyRules, ClientAddr, TrustedProxies};
use crate::http::middleware::{self, HeadLimits, MakeUlidRequestId};
use crate::http::serve::{ConnectionLimits, serve};
use crate::ingest::Ingest;
use crate::notify::Notify;
use crate::store::data_dir::DataDir;
use crate::store::{Health, Store, StoreOptions};

/// How long requests in flight get to finish once shutdown begins (exit follows within 10 s).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(8);

/// Handles shared by every handler. Handlers take the parts they use (`State<Store>`, ...).
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub store: Store,
    pub clock: Clock,
    pub auth: Auth,
    pub ingest: Ingest,
    pub notify: Notify,
    pub agents: Agents,
    pub search: crate::errors::Search,
    pub alerting: Alerting,
    pub spikes: crate::alerting::SpikeWake,
    pub metrics: PrometheusHandle,
    pub sso: crate::sso::Sso,
    /// The chunks `sentry-cli` uploads before their bundle is assembled (memory only).
    pub artifacts: crate::compat::Artifacts,
}

impl FromRef<AppState> for crate::compat::Artifacts {
    fn from_ref(state: &AppState) -> crate::compat::Artifacts {
        state.artifacts.clone()
    }
}

impl FromRef<AppState> for crate::sso::Sso {
    fn from_ref(state: &AppState) -> crate::sso::Sso {
        state.sso.clone()
    }
}

impl FromRef<AppState> for Alerting {
    fn from_ref(state: &AppState) -> Alerting {
        state.alerting.clone()
    }
}

impl FromRef<AppState> for crate::alerting::SpikeWake {
    fn from_ref(state: &AppState) -> crate::alerting::SpikeWake {
        state.spikes.clone()
    }
}

impl FromRef<AppState> for crate::alerting::rules::readings::RuleReadings {
    fn from_ref(state: &AppState) -> crate::alerting::rules::readings::RuleReadings {
        state.alerting.readings().clone()
    }
}

impl FromRef<AppState> for crate::errors::Search {
    fn from_ref(state: &AppState) -> crate::errors::Search {
        state.search.clone()
    }
}

impl FromRef<AppState> for Agents {
    fn from_ref(state: &AppState) -> Agents {
        state.agents.clone()
    }
}

impl FromRef<AppState> for Auth {
    fn from_ref(state: &AppState) -> Auth {
        state.auth.clone()
    }
}

impl FromRef<AppState> for Ingest {
    fn from_ref(state: &AppState) -> Ingest {
        state.ingest.clone()
    }
}

impl FromRef<AppState> for Notify {
    fn from_ref(state: &AppState) -> Notify {
        state.notify.clone()
    }
}

impl FromRef<AppState> for Store {
    fn from_ref(state: &AppState) -> Store {
        state.store.clone()
    }
}

impl FromRef<AppState> for Clock {
    fn from_ref(state: &AppState) -> Clock {
        state.clock.clone()
    }
}

impl FromRef<AppState> for Arc<Config> {
    fn from_ref(state: &AppState) -> Arc<Config> {
        state.config.clone()
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Lookout API",
        description = "Self-hosted monitoring: the HTTP API of one Lookout server."
    ),
    components(schemas(crate::http::error::Problem))
)]
struct ApiDoc;

/// The served OpenAPI document, rendered once at start-up.
#[derive(Clone)]
struct OpenApiJson(Arc<String>);

/// Every `/api` and `/ingest` route, with the OpenAPI document that describes them.
pub fn api_routes() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(openapi_document))
        .merge(crate::accounts::api::routes())
        .merge(crate::auth::api_session::routes())
        .merge(crate::auth::api_twofactor::routes())
        .merge(crate::auth::api_keys::routes())
        .merge(crate::auth::api_members::routes())
        .merge(crate::auth::api_invitations::routes())
        .merge(crate::auth::api_org::routes())
        .merge(crate::auth::api_audit::routes())
        .merge(crate::alerting::services::api::routes())
        .merge(crate::ingest::api_settings::routes())
        .merge(crate::ingest::experiments::api::routes())
        .merge(crate::ingest::api::routes())
        .merge(crate::ingest::api_reads::routes())
        .merge(crate::errors::routes())
        .merge(crate::notify::api::routes())
        .merge(crate::notify::api_deliveries::routes())
        .merge(crate::alerting::routes())
        .merge(crate::agents::api::routes())
        .merge(crate::agents::connect::routes())
        .merge(crate::agents::terminal::routes())
        .merge(crate::agents::sessions::routes())
        .merge(crate::agents::history::routes())
        .merge(crate::http::sdk::routes())
        .merge(crate::scim::api_tokens::routes())
        .merge(crate::scim::api::routes())
        .merge(crate::sso::api_config::routes())
        .merge(crate::sso::oidc::api::routes())
        .merge(crate::compat::api::routes())
        .merge(crate::sso::saml::routes())
        .split_for_parts()
}

/// The whole application: API routes, health, metrics, UI, and the layers around them.
pub fn build_router(state: AppState) -> Router {
    let (api, openapi) = api_routes();
    let document = serde_json::to_string(&openapi).unwrap_or_else(|_| "{}".to_string());
    let config = state.config.clone();
    let body_rules = BodyRules {
        max_bytes: config.http.max_api_body_bytes,
        read_timeout: config.http.body_read_timeout,
    };
    let head_limits = HeadLimits {
        max_uri_bytes: config.http.max_uri_bytes,
        max_header_count: config.http.max_header_count,
        max_header_bytes: config.http.max_header_bytes,
    };
    let proxies = TrustedProxies(Arc::new(config.trusted_proxies.clone()));
    // The ingest gate is a middleware, which sees extensions rather than the router's state.
    let ingest = state.ingest.clone();
    api.route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/assets/{*path}", get(crate::http::ui::app_file))
        .route("/vendor/{*path}", get(crate::http::ui::vendor_file))
        .fallback(crate::http::ui::fallback)
        .with_state(state)
        .layer(axum::middleware::from_fn(middleware::observe))
        .layer(axum::middleware::from_fn(
            crate::http::memory::count_requests,
        ))
        .layer(Extension(OpenApiJson(Arc::new(document))))
        .layer(Extension(body_rules))
        .layer(Extension(ingest))
        .layer(Extension(proxies))
        .layer(axum::middleware::from_fn(
            middleware::problem_for_framework_errors,
        ))
        .layer(CatchPanicLayer::custom(|_| {
            ApiError::internal("a handler panicked").into_response()
        }))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeUlidRequestId))
        // Outermost: the limits measure what the client sent, before any layer adds headers.
        .layer(axum::middleware::from_fn_with_state(
            head_limits,
            middleware::limit_request_head,
        ))
}

#[derive(Serialize, utoipa::ToSchema)]
struct HealthBody {
    /// `ok`, or `degraded` while storage refuses writes (reads keep working).
    status: &'static str,
    /// `catching_up` while the search index indexes what it missed before this start (after
    /// a crash or a restore): searches answer from the index as it is meanwhile. Absent
    /// otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    search: Option<&'static str>,
}

async fn healthz(
    State(store): State<Store>,
    State(search): State<crate::errors::Search>,
) -> Json<HealthBody> {
    let status = match store.health() {
        Health::Ok => "ok",
        Health::Degraded => "degraded",
    };
    let search = search.catching_up().then_some("catching_up");
    Json(HealthBody { status, search })
}

/// Prometheus metrics: for loopback clients, or for an admin of any organisation.
async fn metrics(
    State(state): State<AppState>,
    ClientAddr(client): ClientAddr,
    admin: Result<Admin, ApiError>,
) -> Response {
    if let (false, Err(refused)) = (client.is_loopback(), admin) {
        return refused.into_response();
    }
    let mut response = state.metrics.render().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

/// The OpenAPI 3.1 document of every `/api` and `/ingest` route.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "meta",
    responses((status = 200, description = "OpenAPI 3.1 document", content_type = "application/json")))]
async fn openapi_document(Extension(document): Extension<OpenApiJson>) -> Response {
    let mut response = document.0.as_str().to_string().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Runs the server on `data_dir` until `shutdown` resolves.
pub async fn run(
    config: Config,
    data_dir: DataDir,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let metrics = crate::http::metrics::install().map_err(anyhow::Error::msg)?;
    let database_path = data_dir.database_path();
    let store =
        tokio::task::spawn_blocking(move || Store::open(&database_path, StoreOptions::default()))
            .await
            .context("store start-up task failed")??;
    let jwt_key = crate::auth::keys::load_or_create_jwt_key(data_dir.path())
        .with_context(|| format!("cannot create the JWT key in {}", data_dir.path().display()))?;
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let bound: SocketAddr = listener.local_addr()?;
    let base_url = config.effective_base_url(bound);
    let clock = Clock::system();
    clock.advance(config.clock_offset);
    let config = Arc::new(config);
    let auth = Auth::new(store.clone(), clock.clone(), &config, jwt_key, &base_url)
        .await
        .context("cannot load sessions and revocations")?;
    let housekeeping = spawn_housekeeping(auth.clone());
    let ingest = Ingest::new(&config, store.clone(), clock.clone());
    // The index catches up with events it missed (a crash, a restore) while the server serves.
    let search = {
        let (dir, store) = (crate::errors::index_dir(data_dir.path()), store.clone());
        let inbox_bytes = config.search_inbox_bytes;
        tokio::task::spawn_blocking(move || crate::errors::Search::start(&dir, &store, inbox_bytes))
            .await
            .context("search start-up task failed")?
            .context("cannot open the search index")?
    };
    let notify = Notify::new(
        store.clone(),
        clock.clone(),
        config.webhooks.clone(),
        &base_url,
    );
    // Websocket tasks outlive their HTTP connection; this tells them the server is stopping.
    let (stop_agents, agents_stopping) = tokio::sync::watch::channel(false);
    let agents = Agents::new(store.clone(), clock.clone(), &base_url, agents_stopping);
    let evaluator = crate::alerting::evaluator::Evaluator::new(
        notify.clone(),
        agents.clone(),
        config.web_error_alerts.clone(),
    );
    let alerting = Alerting::new(
        store.clone(),
        clock.clone(),
        &base_url,
        notify.clone(),
        evaluator.readings(),
    );
    let state = AppState {
        config: config.clone(),
        store: store.clone(),
        clock: clock.clone(),
        auth: auth.clone(),
        ingest: ingest.clone(),
        notify: notify.clone(),
        agents,
        search: search.clone(),
        alerting,
        spikes: evaluator.spike_wake(),
        metrics,
        sso: crate::sso::Sso::new(auth.clone(), config.webhooks.allow_private),
        artifacts: crate::compat::Artifacts::default(),
    };
    let router = build_router(state);

    announce_setup(&store, &base_url).await;
    let admin_socket = AdminSocket::bind(&data_dir.admin_socket_path()).with_context(|| {
        format!(
            "cannot create the admin socket in {}",
            data_dir.path().display()
        )
    })?;
    let (stop_admin, admin_stopped) = tokio::sync::watch::channel(false);
    let admin = tokio::spawn(admin_socket.serve(
        AdminContext {
            store: store.clone(),
            clock,
            search: Some(search.clone()),
            auth: Some(auth.clone()),
        },
        admin_stopped,
    ));

    let limits = ConnectionLimits {
        header_read_timeout: config.http.header_read_timeout,
        max_connections: config.http.max_connections,
        max_header_count: config.http.max_header_count + 28,
        max_head_bytes: config.http.max_uri_bytes + config.http.max_header_bytes + 8192,
        max_uri_bytes: config.http.max_uri_bytes,
        grace: SHUTDOWN_GRACE,
    };
    // The one plain stdout line scripts and tests wait for, whatever LOG_FORMAT says.
    println!("listening on {bound}");
    crate::systemd::notify_ready(&bound.to_string());
    let watchdog = tokio::spawn(crate::systemd::watchdog(
        store.clone(),
        stop_admin.subscribe(),
    ));
    let retention = tokio::spawn(crate::ingest::retention::run(
        ingest,
        stop_admin.subscribe(),
    ));
    let regroup = tokio::spawn(crate::errors::run_regroup(
        store.clone(),
        search.clone(),
        stop_admin.subscribe(),
    ));
    let alert_rules =
        tokio::spawn(evaluator.run(config.alert_eval_interval, stop_admin.subscribe()));
    let memory = tokio::spawn(crate::http::memory::return_freed_memory(
        stop_admin.subscribe(),
    ));
    // Deliveries due before this start (a restart, a crash) go out as soon as it runs.
    let deliveries = tokio::spawn(crate::notify::worker::run(notify, stop_admin.subscribe()));
    tracing::info!(address = %bound, base_url = %base_url, data_dir = %data_dir.path().display(), "lookout serving");
    let shutdown = async move {
        shutdown.await;
        let _ = stop_agents.send(true);
    };
    serve(listener, router, limits, shutdown).await;

    housekeeping.abort();
    // API key uses noted since the last tick are written before the store closes.
    auth.flush_key_usage().await;
    crate::systemd::notify_stopping();
    let _ = stop_admin.send(true);
    let _ = watchdog.await;
    let _ = admin.await;
    let _ = retention.await;
    let _ = regroup.await;
    let _ = alert_rules.await;
    let _ = deliveries.await;
    let _ = memory.await;
    // Requests are done: commit what the index has pending before the store goes.
    let _ = tokio::task::spawn_blocking(move || search.close()).await;
    store.close().await;
    tracing::info!("lookout stopped; every acknowledged write is committed");
    drop(data_dir);
    Ok(())
}

/// Once a minute (the first at start-up): forget expired revocations and idle rate-limit
/// buckets, write when API keys were last used, sweep expired login states and audit entries past their retention.
fn spawn_housekeeping(auth: Auth) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(60));
        loop {
            tick.tick().await;
            auth.housekeeping().await;
        }
    })
}

/// Prints the one-time setup URL while no user exists (stdout, never the log: it is a secret).
async fn announce_setup(store: &Store, base_url: &url::Url) {
    match crate::accounts::setup::prepare(store).await {
        Ok(Some(token)) => {
            let base = base_url.as_str().trim_end_matches('/');
            println!("no user exists yet: finish setup at {base}/setup?token={token}");
        }
        Ok(None) => {}
        Err(error) => tracing::warn!(%error, "cannot prepare the setup token"),
    }
}

/// Takes SIGTERM and SIGINT over at once (for `serve` and `agent`) and returns a future that resolves on either.
///
/// The handlers are installed here, inside the runtime but before anything is served, not when
/// the future is first polled: the accept loop polls it only once it waits for a connection, and
/// until then a SIGTERM sent just after `listening on` would kill the process (exit by signal,
/// nothing closed). A signal that arrives early is kept and ends the server at its first poll.
pub fn shutdown_signal(
    runtime: &tokio::runtime::Runtime,
) -> std::io::Result<impl Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    // Signal handlers register with the runtime's driver.
    let _inside = runtime.enter();
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
        tracing::info!("shutdown signal received");
    })
}
