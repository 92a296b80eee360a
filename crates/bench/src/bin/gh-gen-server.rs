//! `gh-gen-server`: an MCP server on stdio offering N generated tools (rmcp's server, as
//! the reference servers use it), for the catalog-scale row of the benchmarks.
//!
//!     gh-gen-server [--tools N]        serve N tools (default 50)
//!     gh-gen-server --dump [--tools N] print the N definitions as a JSON array and exit
//!
//! Every call answers with a small structured result naming the tool and its arguments.
#![warn(clippy::too_many_lines)]

use std::sync::Arc;

use gatehouse_bench::{Flags, generated_tool};
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};
use serde_json::{Value, json};

#[derive(Clone)]
struct Generated {
    tools: Arc<Vec<Tool>>,
}

impl ServerHandler for Generated {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("gen-mcp", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.get_tool(&request.name).is_none() {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {}", request.name),
                None,
            ));
        }
        let value = json!({"tool": request.name, "arguments": request.arguments});
        let result: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": value.to_string()}],
            "structuredContent": value,
            "isError": false,
        }))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(result.into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    let n = flags.number("tools", 50)?;
    let defs: Vec<Value> = (0..n).map(generated_tool).collect();
    if flags.has("dump") {
        println!("{}", Value::Array(defs));
        return Ok(());
    }
    let tools = defs
        .into_iter()
        .map(serde_json::from_value)
        .collect::<Result<Vec<Tool>, _>>()?;
    let server = Generated {
        tools: Arc::new(tools),
    };
    server
        .serve(rmcp::transport::stdio())
        .await?
        .waiting()
        .await?;
    Ok(())
}
