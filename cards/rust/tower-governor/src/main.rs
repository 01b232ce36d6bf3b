//! The tower_governor card: tower_governor's `GovernorLayer` (governor's
//! keyed GCRA behind a tower middleware) on an axum router, served as an
//! endpoint: `GET /` answers 200 "ok" when the layer lets it through, and
//! the layer's own 429 otherwise.
//!
//! ```text
//! PORT=8080 rlconform-card-tower-governor --limit 5 --window-ms 1000
//! ```
//!
//! A limit of N per W is the layer's documented configuration for it:
//! `burst_size(N)` and `period(W/N)`, "the interval after which one
//! element of the quota is replenished", with `use_headers()` (the
//! x-ratelimit-limit and -remaining headers). Requests are keyed by their
//! X-User header through a `KeyExtractor`, the trait the crate documents
//! for keys of one's own (README, "Customize rate limiting key"); a
//! request without one is the layer's `UnableToExtractKey` (500).

use std::env;
use std::sync::Arc;
use std::time::Duration;

use axum::http::Request;
use axum::routing::get;
use axum::Router;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::KeyExtractor;
use tower_governor::{GovernorError, GovernorLayer};

/// The X-User header as the key.
#[derive(Clone)]
struct UserHeader;

impl KeyExtractor for UserHeader {
    type Key = String;

    fn extract<T>(&self, req: &Request<T>) -> Result<Self::Key, GovernorError> {
        req.headers()
            .get("x-user")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or(GovernorError::UnableToExtractKey)
    }
}

/// --limit N and --window-ms W.
fn parse_args() -> Result<(u32, u64), String> {
    let (mut limit, mut window_ms) = (0u32, 0u64);
    let mut it = env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--limit" => limit = value.parse().map_err(|e| format!("--limit {value}: {e}"))?,
            "--window-ms" => window_ms = value.parse().map_err(|e| format!("--window-ms {value}: {e}"))?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if limit == 0 || window_ms == 0 {
        return Err("--limit and --window-ms are needed, above 0".into());
    }
    Ok((limit, window_ms))
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("rlconform-card-tower-governor: {e}");
        std::process::exit(2);
    }
}

async fn run() -> Result<(), String> {
    let (limit, window_ms) = parse_args()?;
    let port = env::var("PORT").map_err(|_| "PORT is not set".to_string())?;
    let period = Duration::from_nanos(window_ms * 1_000_000 / u64::from(limit));
    let config = GovernorConfigBuilder::default()
        .key_extractor(UserHeader)
        .period(period)
        .burst_size(limit)
        .use_headers()
        .finish()
        .ok_or("tower_governor refused the configuration (a period or burst of 0)")?;
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(GovernorLayer::new(Arc::new(config)));
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}"))
        .await
        .map_err(|e| format!("listening on 127.0.0.1:{port}: {e}"))?;
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| format!("serving: {e}"))
}
