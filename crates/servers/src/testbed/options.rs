//! The testbed's settings, read from the environment at start (`TESTBED_*`): the newest
//! revision it speaks, the tools it lists and in what pages, and how it misbehaves first.

use rmcp::model::{ProtocolVersion, Tool};
use serde_json::Value;

use super::tools::{MAX_GENERATED_TOOLS, tools_file};

/// Settings read from the environment at start.
#[derive(Debug, Default, Clone)]
pub struct TestbedOptions {
    /// The newest revision it speaks (`TESTBED_MAX_VERSION`).
    pub max_version: Option<ProtocolVersion>,
    /// How many generated tools it lists after the fixed ones (`TESTBED_TOOLS`).
    pub generated_tools: usize,
    /// The size of its `tools/list` pages (`TESTBED_PAGE_SIZE`).
    pub page_size: Option<usize>,
    /// Tools listed instead of the fixed ones (`TESTBED_TOOLS_FILE`).
    pub tools: Option<Vec<Tool>>,
}

impl TestbedOptions {
    /// Read the options from the environment; a bad value is an error naming it.
    pub fn from_env() -> anyhow::Result<Self> {
        let number = |name: &str| -> anyhow::Result<Option<usize>> {
            match std::env::var(name) {
                Err(_) => Ok(None),
                Ok(v) => v
                    .parse::<usize>()
                    .map(Some)
                    .map_err(|_| anyhow::anyhow!("{name}={v:?} is not a whole number")),
            }
        };
        let max_version = match std::env::var("TESTBED_MAX_VERSION") {
            Ok(v) => Some(
                serde_json::from_value(Value::String(v.clone())).map_err(|_| {
                    anyhow::anyhow!("TESTBED_MAX_VERSION={v:?} is not a protocol revision")
                })?,
            ),
            Err(_) => None,
        };
        Ok(TestbedOptions {
            max_version,
            generated_tools: number("TESTBED_TOOLS")?
                .unwrap_or(0)
                .min(MAX_GENERATED_TOOLS),
            page_size: number("TESTBED_PAGE_SIZE")?.filter(|p| *p > 0),
            tools: match std::env::var_os("TESTBED_TOOLS_FILE") {
                None => None,
                Some(path) => Some(tools_file(std::path::Path::new(&path))?),
            },
        })
    }
}

/// Misbehave at start as `TESTBED_START` says; returns whether to go on serving.
pub fn misbehave_at_start() -> bool {
    use std::io::Write;
    match std::env::var("TESTBED_START").as_deref() {
        Ok("exit") => {
            eprintln!("testbed: refusing to start (TESTBED_START=exit)");
            std::process::exit(3);
        }
        Ok("garbage") | Ok("garbage-exit") => {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "this is not JSON-RPC\n{{\"not\": \"a message\"");
            let _ = out.flush();
            std::env::var("TESTBED_START").as_deref() == Ok("garbage")
        }
        _ => true,
    }
}
