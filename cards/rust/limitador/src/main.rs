//! The Limitador card: the `limitador` crate (0.12.0, in memory) behind
//! Envoy's rate limit service, rls.proto's ShouldRateLimit over gRPC,
//! answered as limitador-server v2.4.0 answers it
//! (limitador-server/src/envoy_rls/server.rs, `should_rate_limit`), and
//! nothing more: no decision, default, rounding or cache of its own.
//!
//! ```text
//! rlconform-card-limitador --namespace rlconform --max-value 5 --seconds 1 \
//!     --variable 'descriptors[0].user' [--rate-limit-headers]
//! ```
//!
//! It listens on 127.0.0.1:$PORT. The limit is one limitador `Limit`, as
//! limitador-server reads one from its limits file: a namespace (Envoy's
//! domain), max_value per seconds, and the variable that names a counter.
//! `--rate-limit-headers` is limitador-server's `--rate-limit-headers
//! DRAFT_VERSION_03`: X-RateLimit-Limit, -Remaining and -Reset in
//! response_headers_to_add.

use std::collections::HashMap;
use std::env;
use std::net::SocketAddr;

use envoy_types::pb::envoy::config::core::v3::HeaderValue;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::Code;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::{
    RateLimitService, RateLimitServiceServer,
};
use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};
use limitador::limit::{Context, Expression, Limit};
use limitador::RateLimiter;
use tonic::transport::Server;
use tonic::{Request, Response, Status};

/// The service: limitador-server's `MyRateLimiter` on a blocking (in
/// memory) limiter, without its metrics and tracing.
struct Rls {
    limiter: RateLimiter,
    rate_limit_headers: bool,
}

#[tonic::async_trait]
impl RateLimitService for Rls {
    /// server.rs `should_rate_limit`, step for step.
    async fn should_rate_limit(
        &self,
        request: Request<RateLimitRequest>,
    ) -> Result<Response<RateLimitResponse>, Status> {
        let req = request.into_inner();
        // server.rs: an empty domain is answered UNKNOWN, no statuses.
        if req.domain.is_empty() {
            return Ok(Response::new(RateLimitResponse {
                overall_code: Code::Unknown.into(),
                ..Default::default()
            }));
        }
        let namespace = req.domain.as_str().into();
        // server.rs: each descriptor's entries become a map, bound as the
        // CEL list `descriptors`.
        let values: Vec<HashMap<String, String>> = req
            .descriptors
            .iter()
            .map(|d| {
                d.entries
                    .iter()
                    .map(|e| (e.key.clone(), e.value.clone()))
                    .collect()
            })
            .collect();
        // server.rs: "hits_addend is optional according to the spec, and
        // should default to 1": the request's field, 0 read as 1. A
        // descriptor's own hits_addend is not read.
        let hits_addend = if req.hits_addend == 0 {
            1
        } else {
            req.hits_addend
        } as u64;
        let mut ctx = Context::default();
        ctx.list_binding("descriptors".to_string(), values);
        let result = self.limiter.check_rate_limited_and_update(
            &namespace,
            &ctx,
            hits_addend,
            self.rate_limit_headers,
        );
        // server.rs: a storage error is UNAVAILABLE, which Envoy's
        // failure_mode_deny decides.
        let mut result = match result {
            Ok(r) => r,
            Err(e) => {
                eprintln!("limitador: {e:?}");
                return Err(Status::unavailable("Service unavailable"));
            }
        };
        let code = if result.limited {
            Code::OverLimit
        } else {
            Code::Ok
        };
        // server.rs RateLimitHeaders::headers: the CheckResult's headers,
        // sorted by name.
        let mut headers: Vec<HeaderValue> = if self.rate_limit_headers {
            result
                .response_header()
                .into_iter()
                .map(|(key, value)| HeaderValue {
                    key,
                    value,
                    ..Default::default()
                })
                .collect()
        } else {
            Vec::new()
        };
        headers.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Response::new(RateLimitResponse {
            overall_code: code.into(),
            response_headers_to_add: headers,
            ..Default::default()
        }))
    }
}

/// The command line: the one limit and the headers switch.
struct Args {
    namespace: String,
    max_value: u64,
    seconds: u64,
    variable: String,
    rate_limit_headers: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        namespace: String::new(),
        max_value: 0,
        seconds: 0,
        variable: String::new(),
        rate_limit_headers: false,
    };
    let mut it = env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--rate-limit-headers" {
            a.rate_limit_headers = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--namespace" => a.namespace = value,
            "--max-value" => a.max_value = value.parse().map_err(|e| format!("--max-value {value}: {e}"))?,
            "--seconds" => a.seconds = value.parse().map_err(|e| format!("--seconds {value}: {e}"))?,
            "--variable" => a.variable = value,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if a.namespace.is_empty() || a.max_value == 0 || a.seconds == 0 || a.variable.is_empty() {
        return Err("--namespace, --max-value, --seconds and --variable are needed".into());
    }
    Ok(a)
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("rlconform-card-limitador: {e}");
        std::process::exit(2);
    }
}

async fn run() -> Result<(), String> {
    let args = parse_args()?;
    let port = env::var("PORT").map_err(|_| "PORT is not set".to_string())?;
    let addr: SocketAddr = format!("127.0.0.1:{port}")
        .parse()
        .map_err(|e| format!("PORT {port}: {e}"))?;
    let variable = Expression::parse(&args.variable)
        .map_err(|e| format!("--variable {}: {e:?}", args.variable))?;
    let limit = Limit::new(
        args.namespace.as_str(),
        args.max_value,
        args.seconds,
        Vec::new(),
        vec![variable],
    );
    // limitador-server's memory storage: RateLimiterBuilder::new(cache
    // size); 10,000 counters, its documented default for a limits file.
    let limiter = RateLimiter::new(10_000);
    limiter
        .configure_with(vec![limit])
        .map_err(|e| format!("limits: {e:?}"))?;
    let rls = Rls {
        limiter,
        rate_limit_headers: args.rate_limit_headers,
    };
    Server::builder()
        .add_service(RateLimitServiceServer::new(rls))
        .serve_with_shutdown(addr, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| format!("serving on {addr}: {e}"))
}
