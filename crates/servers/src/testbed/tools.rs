//! The tools the testbed lists: its fixed ones (each a way to misbehave) and its long job,
//! or a file's tools instead (`TESTBED_TOOLS_FILE`), then as many generated ones as asked.

use rmcp::model::Tool;
use serde_json::{Value, json};

use crate::common;

/// Most generated tools.
pub const MAX_GENERATED_TOOLS: usize = 10_000;

const FIXED_TOOLS: &str = r#"[
 {"name": "sleep", "description": "Wait the given number of seconds, reporting progress (unless quiet), then say so. Honours cancellation.",
  "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number", "minimum": 0, "maximum": 600}, "quiet": {"type": "boolean", "default": false}}, "required": ["seconds"]},
  "annotations": {"readOnlyHint": true}},
 {"name": "echo", "description": "Return the text it is given.",
  "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
  "annotations": {"readOnlyHint": true}},
 {"name": "repeat", "description": "Return a text repeated a number of times (for large results).",
  "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}, "times": {"type": "integer", "minimum": 1, "maximum": 100000}}, "required": ["text", "times"]}},
 {"name": "content", "description": "Return content blocks of one kind, or of every kind: text, image, audio, resource_link, resource, blob.",
  "inputSchema": {"type": "object", "properties": {"kind": {"type": "string", "enum": ["text", "image", "audio", "resource_link", "resource", "blob", "for_user", "all"]}}, "required": ["kind"]}},
 {"name": "bad_output", "description": "Declares an output schema and returns a result that breaks it.",
  "inputSchema": {"type": "object", "properties": {}},
  "outputSchema": {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}},
 {"name": "broken_schema", "description": "A tool whose input schema does not compile.",
  "inputSchema": {"type": "object", "properties": {"x": {"type": 12}}}},
 {"name": "add_tool", "description": "Add a tool to this server's list and announce that the list changed.",
  "inputSchema": {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z_]{1,32}$"}}, "required": ["name"]}},
 {"name": "change_echo", "description": "Change the description of the echo tool and announce that the list changed.",
  "inputSchema": {"type": "object", "properties": {"description": {"type": "string"}}, "required": ["description"]}},
 {"name": "ghost_rpc", "description": "Listed, but answers as if it did not exist, with a JSON-RPC error.",
  "inputSchema": {"type": "object", "properties": {}}},
 {"name": "ghost_result", "description": "Listed, but answers as if it did not exist, with an isError result.",
  "inputSchema": {"type": "object", "properties": {}}},
 {"name": "ask_forever", "description": "Ask the person a question on every round, never finishing (tests the host's round cap).",
  "inputSchema": {"type": "object", "properties": {}}},
 {"name": "ask_url", "description": "Ask the person to open a web page (URL-mode elicitation), then report their answer.",
  "inputSchema": {"type": "object", "properties": {}}},
 {"name": "crash", "description": "Exit the server process in the middle of the call.",
  "inputSchema": {"type": "object", "properties": {}}}
]"#;

/// The list: the file's tools if given (each call of one answers with its arguments), else
/// the fixed ones and `task_job`; then `generated` generated ones.
pub(super) fn listed(file: Option<Vec<Tool>>, generated: usize) -> Vec<Tool> {
    let from_file = file.is_some();
    let mut tools: Vec<Tool> =
        file.unwrap_or_else(|| serde_json::from_str(FIXED_TOOLS).expect("the fixed tools parse"));
    if !from_file {
        tools.push(common::tool_from_json(super::job::TOOL));
    }
    tools.extend((1..=generated).map(generated_tool));
    tools
}

/// The tool definitions of a file: a JSON array, or an object with `tools`.
pub(super) fn tools_file(path: &std::path::Path) -> anyhow::Result<Vec<Tool>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("TESTBED_TOOLS_FILE {}: {e}", path.display()))?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("TESTBED_TOOLS_FILE {}: {e}", path.display()))?;
    let list = match doc {
        Value::Array(list) => list,
        Value::Object(mut m) => match m.remove("tools") {
            Some(Value::Array(list)) => list,
            _ => anyhow::bail!("TESTBED_TOOLS_FILE {}: no \"tools\" array", path.display()),
        },
        _ => anyhow::bail!("TESTBED_TOOLS_FILE {}: not a list of tools", path.display()),
    };
    list.into_iter()
        .take(MAX_GENERATED_TOOLS)
        .map(|t| serde_json::from_value(t).map_err(anyhow::Error::from))
        .collect()
}

fn generated_tool(i: usize) -> Tool {
    common::tool_from_json(
        &json!({
            "name": format!("gen_{i:04}"),
            "description": format!("Generated tool number {i}: returns its arguments. Used to measure large catalogs."),
            "inputSchema": {"type": "object", "properties": {
                "query": {"type": "string", "maxLength": 200, "description": "Any text."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10}
            }, "required": ["query"]},
            "annotations": {"readOnlyHint": true}
        })
        .to_string(),
    )
}
