//! The governor card: governor's keyed GCRA rate limiter (a DashMap of
//! per-key states, as `RateLimiter::keyed` builds it), served over
//! rlconform's protocol v1 on 127.0.0.1:$PORT. The shim only translates:
//! every decision is governor's `check_key_n`; the clock is governor's
//! `Clock` trait, read from each request's `X-Rlc-Now-Ms`.
//!
//! - configure(N, W): governor's `Quota` is fixed when a limiter is built
//!   (`Quota::with_period(W / N).allow_burst(N)`, as its own `per_second`
//!   divides), so a new configuration is a new limiter: every key starts
//!   afresh. The library has no way to change a live limiter's quota.
//! - allow(user, cost): `check_key_n(user, cost)`; a cost governor's
//!   `NonZeroU32` cannot hold (0, negative, above 2^32-1) and its
//!   `InsufficientCapacity` (a cost above the burst) are 400s.
//! - remaining and reset: governor has no call for either (no peek at a
//!   key's state, no removal of one key): the capabilities say so.

use std::cell::Cell;
use std::num::NonZeroU32;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use governor::clock::Clock;
use governor::nanos::Nanos;
use governor::state::keyed::DashMapStateStore;
use governor::middleware::NoOpMiddleware;
use governor::{Quota, RateLimiter};
use serde_json::{json, Value};
use tiny_http::{Header, Method, Request, Response, Server};

thread_local! {
    /// The instant of the request this thread is answering, in ns since
    /// the Unix epoch (X-Rlc-Now-Ms).
    static NOW: Cell<u64> = const { Cell::new(0) };
}

/// HeaderClock is the protocol's clock through governor's `Clock` trait:
/// the instant of the request the calling thread is answering.
#[derive(Clone, Copy, Debug, Default)]
struct HeaderClock;

impl Clock for HeaderClock {
    type Instant = Nanos;
    fn now(&self) -> Nanos {
        Nanos::from(NOW.with(|n| n.get()))
    }
}

type Limiter = RateLimiter<String, DashMapStateStore<String>, HeaderClock, NoOpMiddleware<Nanos>>;

/// The largest body the shim reads: protocol v1's are a few hundred bytes
/// (a user id is at most 512 bytes).
const MAX_BODY: u64 = 64 << 10;

fn new_limiter(n: u64, window_ms: u64) -> Result<Limiter, String> {
    let burst = u32::try_from(n)
        .ok()
        .and_then(NonZeroU32::new)
        .ok_or_else(|| format!("max_requests {n}: governor's burst is a NonZeroU32"))?;
    let window = Duration::from_millis(window_ms);
    let quota = Quota::with_period(window / burst.get())
        .ok_or_else(|| format!("window_ms {window_ms} / max_requests {n} is under a nanosecond: governor's Quota::with_period refuses it"))?
        .allow_burst(burst);
    Ok(RateLimiter::dashmap_with_clock(quota, HeaderClock))
}

fn main() {
    let port = std::env::var("PORT").unwrap_or_else(|_| "8080".into());
    let server = Arc::new(Server::http(format!("127.0.0.1:{port}")).unwrap_or_else(|e| {
        eprintln!("governor card: listen on 127.0.0.1:{port}: {e}");
        std::process::exit(2)
    }));
    let limiter = Arc::new(RwLock::new(Arc::new(new_limiter(5, 60_000).expect("5 per minute"))));
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (server, limiter) = (Arc::clone(&server), Arc::clone(&limiter));
            std::thread::spawn(move || loop {
                match server.recv() {
                    Ok(req) => answer(req, &limiter),
                    Err(e) => eprintln!("governor card: {e}"),
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
}

/// answer answers one request of protocol v1.
fn answer(mut req: Request, limiter: &RwLock<Arc<Limiter>>) {
    let now = req
        .headers()
        .iter()
        .find(|h| h.field.equiv("X-Rlc-Now-Ms"))
        .and_then(|h| h.value.as_str().parse::<u64>().ok());
    let path = req.url().to_string();
    let (status, body) = match (req.method(), path.as_str(), now) {
        (Method::Get, "/rlc/v1/capabilities", _) => (200, json!({"clock": true, "configure": true, "remaining": false, "reset": false, "cost": true})),
        (Method::Post, "/rlc/v1/configure" | "/rlc/v1/allow", Some(ms)) => match read_json(&mut req) {
            Err(e) => (400, json!({"error": e})),
            Ok(v) => {
                NOW.with(|n| n.set(ms.saturating_mul(1_000_000)));
                if path == "/rlc/v1/configure" {
                    configure(&v, limiter)
                } else {
                    allow(&v, limiter)
                }
            }
        },
        (Method::Post, "/rlc/v1/configure" | "/rlc/v1/allow", None) => (400, json!({"error": "no X-Rlc-Now-Ms: the card takes its clock from it"})),
        _ => (404, json!({"error": "not served: governor has no remaining or reset"})),
    };
    let header = Header::from_bytes("Content-Type", "application/json").expect("a valid header");
    let _ = req.respond(Response::from_string(body.to_string()).with_status_code(status).with_header(header));
}

fn read_json(req: &mut Request) -> Result<Value, String> {
    let mut body = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(req.as_reader(), MAX_BODY + 1), &mut body).map_err(|e| e.to_string())?;
    if body.len() as u64 > MAX_BODY {
        return Err("body too large".into());
    }
    serde_json::from_slice(&body).map_err(|e| format!("not JSON: {e}"))
}

fn configure(v: &Value, limiter: &RwLock<Arc<Limiter>>) -> (u16, Value) {
    let (Some(n), Some(w)) = (v["max_requests"].as_u64(), v["window_ms"].as_u64()) else {
        return (400, json!({"error": "want max_requests and window_ms, whole numbers of at least 1"}));
    };
    if n < 1 || w < 1 {
        return (400, json!({"error": "max_requests and window_ms must be at least 1"}));
    }
    match new_limiter(n, w) {
        Ok(l) => {
            *limiter.write().expect("the limiter's lock") = Arc::new(l);
            (200, json!({}))
        }
        Err(e) => (400, json!({"error": e})),
    }
}

fn allow(v: &Value, limiter: &RwLock<Arc<Limiter>>) -> (u16, Value) {
    let Some(user) = v["user_id"].as_str().filter(|u| !u.is_empty()) else {
        return (400, json!({"error": "want a non-empty user_id"}));
    };
    let cost = match &v["cost"] {
        Value::Null => 1,
        c => match c.as_i64() {
            Some(c) => c,
            None => return (400, json!({"error": "cost: want an integer"})),
        },
    };
    let Some(n) = u32::try_from(cost).ok().and_then(NonZeroU32::new) else {
        return (400, json!({"error": format!("cost {cost}: check_key_n takes a NonZeroU32")}));
    };
    let l = Arc::clone(&limiter.read().expect("the limiter's lock"));
    match l.check_key_n(&user.to_string(), n) {
        Ok(Ok(())) => (200, json!({"allowed": true})),
        Ok(Err(_)) => (200, json!({"allowed": false})),
        Err(e) => (400, json!({"error": format!("{e}")})),
    }
}
