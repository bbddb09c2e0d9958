//! Per-request authentication overhead: the `Caller` extractor alone, in-process, on a real
//! store in a temp dir — cookie JWT verification, revocation, CSRF and the organisation's
//! policies for sessions; digest lookup and membership read for API keys; the rate limit for
//! both. Nothing of HTTP parsing or routing is included.
//!
//! Run: `cargo bench --bench auth` (LOOKOUT_BENCH_ITERATIONS sets the timed iterations per
//! case, default 200 000, after a warm-up of a tenth as many).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{Method, Request};
use lookout::accounts::model::Role;
use lookout::accounts::{self, NewUser};
use lookout::auth::model::{ApiKey, ApiKeyId};
use lookout::auth::{Auth, Caller};
use lookout::clock::Clock;
use lookout::config::Config;
use lookout::store::{Store, StoreError, StoreOptions};

const BASE_URL: &str = "http://127.0.0.1:8080";

/// The credentials the cases use.
struct Fixture {
    auth: Auth,
    session_token: String,
    csrf_token: String,
    api_key: String,
}

/// A store with one owner, a session signed for it and an API key of it.
async fn fixture(dir: &std::path::Path, allowlist: &[&str]) -> Fixture {
    let store = Store::open(&dir.join("bench.redb"), StoreOptions::default()).expect("store");
    let clock = Clock::system();
    let mut config = Config::default();
    // The limiter still runs on every request; it just never refuses one of the benchmark's.
    config.auth.api_rate_per_min = u32::MAX;
    let key = lookout::auth::keys::load_or_create_jwt_key(dir).expect("jwt key");
    let base_url: url::Url = BASE_URL.parse().expect("url");
    let auth = Auth::new(store.clone(), clock.clone(), &config, key, &base_url)
        .await
        .expect("auth");
    let new_user = NewUser {
        email: "bench@example.com".into(),
        password: "correct horse battery staple".into(),
        role: Role::Owner,
        org_name: None,
    };
    let created = accounts::create_user(&store, &clock, new_user)
        .await
        .expect("user");
    let mut org = created.org.clone();
    org.ip_allowlist = allowlist
        .iter()
        .map(|net| net.parse().expect("cidr"))
        .collect();
    let stored_org = org.clone();
    store
        .write(move |txn| accounts::db::update_org(txn, &stored_org))
        .await
        .expect("org policy");
    let now = clock.now();
    let signed = lookout::auth::login::issue_session(
        &auth,
        created.user.clone(),
        org,
        Role::Owner,
        false,
        now,
    )
    .expect("session");
    let api_key = format!("lk_{}", lookout::secrets::random_token());
    let record = ApiKey {
        id: ApiKeyId::generate(),
        org_id: created.org.id.clone(),
        user_id: created.user.id.clone(),
        name: "bench".into(),
        prefix: api_key[..10].to_string(),
        created_at: now,
        expires_at: None,
        revoked_at: None,
        last_used_at: None,
    };
    let digest = lookout::secrets::digest_hex(&api_key);
    store
        .write(move |txn| -> Result<(), StoreError> {
            lookout::auth::db::insert_api_key(txn, &record, &digest)
        })
        .await
        .expect("api key");
    Fixture {
        auth,
        session_token: signed.token,
        csrf_token: signed.csrf_token,
        api_key,
    }
}

#[derive(Clone, Copy)]
enum Case {
    CookieGet,
    CookiePostWithCsrf,
    BearerApiKey,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::CookieGet => "cookie session, GET",
            Case::CookiePostWithCsrf => "cookie session, POST + CSRF",
            Case::BearerApiKey => "bearer API key, GET",
        }
    }
}

/// The request head of one case, as a browser or script would send it.
fn parts(fixture: &Fixture, case: Case) -> Parts {
    let builder = Request::builder()
        .header("host", "127.0.0.1:8080")
        .header("user-agent", "Mozilla/5.0 (X11; Linux x86_64) bench")
        .header("accept", "application/json");
    let builder = match case {
        Case::CookieGet => builder
            .method(Method::GET)
            .uri("/api/v1/services")
            .header("cookie", session_cookies(fixture)),
        Case::CookiePostWithCsrf => builder
            .method(Method::POST)
            .uri("/api/v1/orgs/me/api-keys")
            .header("cookie", session_cookies(fixture))
            .header("origin", BASE_URL)
            .header("content-type", "application/json")
            .header("x-csrf-token", &fixture.csrf_token),
        Case::BearerApiKey => builder
            .method(Method::GET)
            .uri("/api/v1/services")
            .header("authorization", format!("Bearer {}", fixture.api_key)),
    };
    let (mut parts, ()) = builder.body(()).expect("request").into_parts();
    let peer: SocketAddr = "127.0.0.1:50000".parse().expect("addr");
    parts.extensions.insert(ConnectInfo(peer));
    parts
}

fn session_cookies(fixture: &Fixture) -> String {
    format!(
        "theme=dark; lookout_session={}; lookout_csrf={}",
        fixture.session_token, fixture.csrf_token
    )
}

/// Polls a future that never waits (the extractor reads the store inline) to completion.
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the Caller extractor is expected to finish without waiting"),
    }
}

/// One authentication; only the extractor is inside the timed span.
fn authenticate_once(fixture: &Fixture, case: Case) -> Duration {
    let mut parts = parts(fixture, case);
    let started = Instant::now();
    let caller = ready(Caller::from_request_parts(&mut parts, &fixture.auth));
    let elapsed = started.elapsed();
    let caller = caller.unwrap_or_else(|err| panic!("{}: refused: {err:?}", case.name()));
    std::hint::black_box(caller);
    elapsed
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

fn run(fixture: &Fixture, label: &str, case: Case, iterations: usize) {
    for _ in 0..iterations / 10 {
        authenticate_once(fixture, case);
    }
    let mut samples: Vec<Duration> = (0..iterations)
        .map(|_| authenticate_once(fixture, case))
        .collect();
    samples.sort();
    let total: Duration = samples.iter().sum();
    let mean = total / u32::try_from(samples.len()).expect("iterations fit u32");
    println!(
        "| {}{label} | {iterations} | {:.2} | {:.2} | {:.2} | {:.1} | {:.0} |",
        case.name(),
        micros(mean),
        micros(percentile(&samples, 0.50)),
        micros(percentile(&samples, 0.99)),
        micros(percentile(&samples, 0.999)),
        micros(samples[samples.len() - 1]),
    );
}

fn main() {
    let iterations: usize = std::env::var("LOOKOUT_BENCH_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("| case | iterations | mean µs | p50 µs | p99 µs | p99.9 µs | max µs |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let setups: [(&str, &[&str]); 2] = [
        ("", &[]),
        (
            ", 3-CIDR allowlist",
            &["10.0.0.0/8", "2001:db8::/32", "127.0.0.1/32"],
        ),
    ];
    for (label, allowlist) in setups {
        let dir = tempfile::tempdir().expect("temp dir");
        let fixture = runtime.block_on(fixture(dir.path(), allowlist));
        for case in [
            Case::CookieGet,
            Case::CookiePostWithCsrf,
            Case::BearerApiKey,
        ] {
            run(&fixture, label, case, iterations);
        }
        runtime.block_on(fixture.auth.store().close());
    }
}
