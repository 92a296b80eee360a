//! The gateway's endpoints for operations, on its HTTP listener beside `/mcp` and outside
//! its authentication (a load balancer's probe and a Prometheus scrape hold no token):
//! `/healthz` answers while the process serves, `/readyz` only while the store and every
//! server of the file are ready (503 with why not, so a balancer sends calls elsewhere),
//! `/metrics` the gateway's metrics in Prometheus's text format. None of them names a
//! caller or an argument (`crate::ops`).

use crate::Gateway;
use axum::{
    Router,
    http::{StatusCode, header},
    response::IntoResponse,
    routing::get,
};

/// Liveness: the process answers.
pub const HEALTH_PATH: &str = "/healthz";
/// Readiness: the store answers and every server runs.
pub const READY_PATH: &str = "/readyz";
/// Prometheus's scrape.
pub const METRICS_PATH: &str = "/metrics";
/// The content type of Prometheus's text format.
const METRICS_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The three routes, answered from `gateway`.
pub fn routes(gateway: Gateway) -> Router {
    let ready = gateway.clone();
    Router::new()
        .route(HEALTH_PATH, get(|| async { "ok\n" }))
        .route(
            READY_PATH,
            get(move || {
                let gateway = ready.clone();
                async move {
                    let readiness = gateway.readiness().await;
                    let status = match readiness.ready() {
                        true => StatusCode::OK,
                        false => StatusCode::SERVICE_UNAVAILABLE,
                    };
                    let body = readiness.json().to_string();
                    (status, [(header::CONTENT_TYPE, "application/json")], body)
                }
            }),
        )
        .route(
            METRICS_PATH,
            get(move || {
                let gateway = gateway.clone();
                async move {
                    ([(header::CONTENT_TYPE, METRICS_TYPE)], gateway.metrics()).into_response()
                }
            }),
        )
}
