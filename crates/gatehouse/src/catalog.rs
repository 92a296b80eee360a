//! Discovery and the catalog: every server's tools, under names the host gives them.
//!
//! Servers name their tools without knowing about each other, so the host prefixes each
//! with its server (`support__get_ticket`) and makes the name safe for model APIs
//! (`^[a-zA-Z0-9_-]{1,64}$`). Making names safe can make two collide; a collision never
//! hides a tool: the later one gets a numbered, stable name and the host says so.

use std::collections::HashMap;

use rmcp::model::{PaginatedRequestParams, Tool};
use serde::Serialize;
use serde_json::Value;

use crate::{
    connect::Connection,
    schema::{self, Compiled},
};

/// Longest tool name model APIs accept.
pub const MAX_MODEL_TOOL_NAME: usize = 64;
/// Between the server's name and the tool's.
pub const NAMESPACE_SEPARATOR: &str = "__";

/// One tool as the host offers it.
#[derive(Debug, Clone)]
pub struct CatalogTool {
    /// The name the model sees and proposes.
    pub name: String,
    /// The server that offers it (its name in the servers file).
    pub server: String,
    /// The tool exactly as the server described it; `tool.name` is used on the wire.
    pub tool: Tool,
    /// Its input schema, compiled once: every proposal is checked against it.
    pub input: Compiled,
    /// Its output schema, compiled once, when it declares one.
    pub output: Option<Compiled>,
}

/// A tool in the shape chat-completion APIs take: a function with JSON Schema parameters.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// Every tool the host may offer, by model-facing name.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tools: Vec<CatalogTool>,
    index: HashMap<String, usize>,
    /// What the host had to rename, in words, for the person.
    pub collisions: Vec<String>,
    /// Tools left out because their schemas cannot be used, in words.
    pub left_out: Vec<String>,
}

/// `server__tool`, with every character a model API refuses replaced by `_`, cut to 64.
pub fn namespaced(server: &str, tool: &str) -> String {
    let raw = format!("{server}{NAMESPACE_SEPARATOR}{tool}");
    let safe: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    safe.chars().take(MAX_MODEL_TOOL_NAME).collect()
}

impl Catalog {
    /// Build the catalog from each server's tools, in the servers' order.
    pub fn build(listings: Vec<(String, Vec<Tool>)>) -> Catalog {
        let mut catalog = Catalog::default();
        for (server, tools) in listings {
            for tool in tools {
                catalog.insert(&server, tool);
            }
        }
        catalog
    }

    fn insert(&mut self, server: &str, tool: Tool) {
        let compiled = schema::compile_input(&tool.input_schema).and_then(|input| {
            let output = tool
                .output_schema
                .as_ref()
                .map(|s| schema::compile_output(s))
                .transpose()?;
            Ok((input, output))
        });
        let (input, output) = match compiled {
            Ok(c) => c,
            Err(reason) => {
                self.left_out.push(format!(
                    "{server}'s tool {:?} is left out: {reason}",
                    tool.name
                ));
                return;
            }
        };
        let base = namespaced(server, &tool.name);
        let mut name = base.clone();
        let mut n = 2;
        while self.index.contains_key(&name) {
            let suffix = format!("_{n}");
            let keep = MAX_MODEL_TOOL_NAME - suffix.len();
            name = format!("{}{suffix}", base.chars().take(keep).collect::<String>());
            n += 1;
        }
        if name != base {
            let first = &self.tools[self.index[&base]];
            self.collisions.push(format!(
                "{server}'s tool {:?} and {}'s tool {:?} both map to {base}; the first keeps it, this one is offered as {name}",
                tool.name, first.server, first.tool.name
            ));
        }
        self.index.insert(name.clone(), self.tools.len());
        self.tools.push(CatalogTool {
            name,
            server: server.into(),
            tool,
            input,
            output,
        });
    }

    /// A tool by the name the model uses.
    pub fn get(&self, name: &str) -> Option<&CatalogTool> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    pub fn tools(&self) -> &[CatalogTool] {
        &self.tools
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Keep only the named tools (`--tools`). Names that match nothing are returned, so
    /// the caller can say which.
    pub fn retain_only(&mut self, names: &[String]) -> Vec<String> {
        let unknown = names
            .iter()
            .filter(|n| !self.index.contains_key(n.as_str()))
            .cloned()
            .collect();
        self.tools.retain(|t| names.contains(&t.name));
        self.index = self
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        unknown
    }

    /// The tools as the model sees them: name, `[server]`-prefixed description, and the
    /// input schema unchanged (it is already JSON Schema).
    pub fn model_tools(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .map(|t| ToolSpec {
                name: t.name.clone(),
                description: format!(
                    "[{}] {}",
                    t.server,
                    t.tool.description.as_deref().unwrap_or("")
                )
                .trim_end()
                .to_owned(),
                parameters: Value::Object((*t.tool.input_schema).clone()),
            })
            .collect()
    }
}

/// Why a server's tool list could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error("tools/list failed: {0}")]
    Request(String),
    #[error("tools/list did not end after {0} pages")]
    TooManyPages(usize),
}

/// Read every page of a server's tool list, at most `max_pages` of them. An empty-string
/// cursor is a cursor like any other; only an absent one ends the list.
pub async fn list_tools(conn: &Connection, max_pages: usize) -> Result<Vec<Tool>, ListError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..max_pages {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let page = conn
            .client
            .list_tools(Some(params))
            .await
            .map_err(|e| ListError::Request(e.to_string()))?;
        tools.extend(page.tools);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(tools),
        }
    }
    Err(ListError::TooManyPages(max_pages))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
    }

    #[test]
    fn names_are_namespaced_and_safe() {
        assert_eq!(namespaced("support", "get_ticket"), "support__get_ticket");
        assert_eq!(namespaced("fs", "read.file/v2"), "fs__read_file_v2");
        assert_eq!(namespaced("s", &"x".repeat(100)).len(), MAX_MODEL_TOOL_NAME);
    }

    #[test]
    fn collisions_keep_both_tools_under_stable_names() {
        let c = Catalog::build(vec![("a".into(), vec![tool("x.y"), tool("x_y")])]);
        assert_eq!(c.len(), 2);
        assert_eq!(c.get("a__x_y").unwrap().tool.name, "x.y");
        assert_eq!(c.get("a__x_y_2").unwrap().tool.name, "x_y");
        assert_eq!(c.collisions.len(), 1);
        assert!(c.collisions[0].contains("a__x_y_2"));
    }

    #[test]
    fn tools_with_unusable_schemas_are_left_out_with_the_reason() {
        let broken: Tool = serde_json::from_value(json!({"name": "b", "inputSchema": {"type": "object", "properties": {"x": {"type": 7}}}})).unwrap();
        let array: Tool =
            serde_json::from_value(json!({"name": "c", "inputSchema": {"type": "array"}})).unwrap();
        let c = Catalog::build(vec![("s".into(), vec![tool("ok"), broken, array])]);
        assert_eq!(c.len(), 1);
        assert_eq!(c.left_out.len(), 2);
        assert!(
            c.left_out[0]
                .starts_with("s's tool \"b\" is left out: its input schema does not compile"),
            "{:?}",
            c.left_out
        );
        assert!(c.left_out[1].contains("not \"object\""));
    }

    #[test]
    fn retain_only_reports_unknown_names() {
        let mut c = Catalog::build(vec![("a".into(), vec![tool("one"), tool("two")])]);
        let unknown = c.retain_only(&["a__two".into(), "a__nope".into()]);
        assert_eq!(unknown, vec!["a__nope".to_string()]);
        assert!(c.get("a__one").is_none());
        assert_eq!(c.get("a__two").unwrap().tool.name, "two");
        assert_eq!(c.model_tools()[0].description, "[a]");
    }
}
