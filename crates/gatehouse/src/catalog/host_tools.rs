//! The host's own tools besides `read_resource`: `search_tools`, offered instead of every
//! definition when a catalog passes the tool budget, and `read_result`, offered once a
//! result of the turn was cut. Neither reaches a server, reads anything but the host's
//! own state, or needs the person: they run without asking ([`runs_unasked`]).

use rmcp::model::Tool;
use serde_json::json;

use super::{CatalogTool, Origin, search};

/// The host's tool that finds catalog tools for a task and offers their definitions.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The host's tool that reads on in a result of this turn that was cut.
pub const READ_RESULT: &str = "read_result";
/// Longest `query` of `search_tools`.
pub const MAX_SEARCH_QUERY_CHARS: usize = 500;
/// Most server names the `search_tools` description lists.
pub const MAX_LISTED_SERVERS: usize = 40;

/// Is this one of the host's tools that reads only the host's own state, so the person is
/// never asked about it?
pub fn runs_unasked(tool: &CatalogTool) -> bool {
    tool.origin == Origin::Host && [SEARCH_TOOLS, READ_RESULT].contains(&tool.name.as_str())
}

/// The definition of [`SEARCH_TOOLS`] for a catalog of `tools` tools on these servers.
pub fn search_tools_tool(tools: usize, servers: &[&str]) -> Tool {
    let listed: Vec<&str> = servers.iter().take(MAX_LISTED_SERVERS).copied().collect();
    let more = servers.len().saturating_sub(listed.len());
    let and_more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    let description = format!(
        "Find the tools for a task among the {tools} tools of this host's servers ({}{and_more}): only some of their definitions are listed here. Say what you want to do, in your own words; the best matches are listed, and their definitions are added to your tools for the rest of this question. A tool may also be called by its exact name.",
        listed.join(", ")
    );
    serde_json::from_value(json!({
        "name": SEARCH_TOOLS,
        "description": description,
        "inputSchema": {"type": "object", "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": MAX_SEARCH_QUERY_CHARS,
                      "description": "What you want to do (\"post a message to a Slack channel\"), or tool names."},
            "limit": {"type": "integer", "minimum": 1, "maximum": search::MAX_SEARCH_LIMIT,
                      "description": format!("How many tools to find (default {}).", search::DEFAULT_SEARCH_LIMIT)}
        }, "required": ["query"], "additionalProperties": false},
        "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
    }))
    .expect("the search_tools definition is valid")
}

/// The definition of [`READ_RESULT`].
pub fn read_result_tool() -> Tool {
    serde_json::from_value(json!({
        "name": READ_RESULT,
        "description": "Read on in a result of this question that was cut to fit: give the id and the offset its note named, and get the next part.",
        "inputSchema": {"type": "object", "properties": {
            "id": {"type": "string", "pattern": "^r[0-9]{1,9}$", "description": "The result's id, as its note gives it (r3)."},
            "offset": {"type": "integer", "minimum": 0, "description": "The character to read from, as the note gives it."}
        }, "required": ["id", "offset"], "additionalProperties": false},
        "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
    }))
    .expect("the read_result definition is valid")
}
