//! The reference MCP servers Gatehouse is shown and tested with. Each module is one server;
//! `common` holds what they share (identity, logging, result shapes).

pub mod common;
pub mod data;
pub mod support;
pub mod testbed;

use rmcp::ServiceExt;

/// The servers `gatehouse serve NAME` can start.
pub const SERVER_NAMES: &[&str] = &["support", "testbed"];

/// Run one reference server on stdio until the client goes away.
pub async fn serve_stdio(name: &str) -> anyhow::Result<()> {
    let caller = common::Caller::from_env();
    match name {
        "support" => {
            let service = support::SupportServer::new(caller)?
                .serve(rmcp::transport::stdio())
                .await?;
            service.waiting().await?;
        }
        "testbed" => {
            if !testbed::misbehave_at_start() {
                std::process::exit(1);
            }
            let max_version = match std::env::var("TESTBED_MAX_VERSION") {
                Ok(v) => Some(
                    serde_json::from_value(serde_json::Value::String(v.clone())).map_err(|_| {
                        anyhow::anyhow!("TESTBED_MAX_VERSION={v:?} is not a protocol revision")
                    })?,
                ),
                Err(_) => None,
            };
            let service = testbed::Testbed::new(max_version)
                .serve(rmcp::transport::stdio())
                .await?;
            service.waiting().await?;
        }
        other => anyhow::bail!(
            "there is no reference server named {other:?} (known: {})",
            SERVER_NAMES.join(", ")
        ),
    }
    Ok(())
}
