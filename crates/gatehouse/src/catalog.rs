//! Discovery and the catalog: every server's tools, under names the host gives them.
//!
//! Servers name their tools without knowing about each other, so the host prefixes each
//! with its server (`support__get_ticket`) and makes the name safe for model APIs
//! (`^[a-zA-Z0-9_-]{1,64}$`). Making names safe can make two collide; a collision never
//! hides a tool: the later one gets a numbered, stable name and the host says so.

use std::{collections::HashMap, sync::Arc};

use rmcp::model::{JsonObject, PaginatedRequestParams, Tool};
use serde::Serialize;

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
    /// The tool changed (description, schemas or annotations) after the host decided to
    /// run it without asking: the person is asked before its next call.
    pub changed: bool,
}

/// The server name of the host's own tools.
pub const HOST_SERVER: &str = "host";
/// The host's tool that follows resource links from this turn's results.
pub const READ_RESOURCE: &str = "read_resource";

/// The definition of [`READ_RESOURCE`], offered when any server has resources.
pub fn read_resource_tool() -> Tool {
    serde_json::from_value(serde_json::json!({
        "name": READ_RESOURCE,
        "description": "Read a resource that a tool result in this turn linked to (a resource_link, an embedded resource, or a uri field), by its URI. Other URIs are refused.",
        "inputSchema": {"type": "object", "properties": {
            "uri": {"type": "string", "minLength": 1, "maxLength": 2048, "description": "A URI exactly as a result of this turn gave it."}
        }, "required": ["uri"], "additionalProperties": false},
        "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
    }))
    .expect("the read_resource definition is valid")
}

/// What the host relies on in a tool's definition: if any of it changes, a decision made
/// on the old definition no longer holds.
pub fn fingerprint(tool: &Tool) -> String {
    serde_json::json!([
        tool.description,
        tool.input_schema,
        tool.output_schema,
        tool.annotations
    ])
    .to_string()
}

/// A tool in the shape chat-completion APIs take: a function with JSON Schema parameters.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// The tool's `inputSchema`, shared with the catalog rather than copied: the tools are
    /// listed for every model call, and a large catalog's schemas are megabytes.
    pub parameters: Arc<JsonObject>,
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
            changed: false,
        });
    }

    /// Add one of the host's own tools under its own name (no server prefix).
    pub fn add_host_tool(&mut self, tool: Tool) {
        let name = tool.name.to_string();
        let Ok(input) = schema::compile_input(&tool.input_schema) else {
            return;
        };
        if self.index.contains_key(&name) {
            return;
        }
        self.index.insert(name.clone(), self.tools.len());
        self.tools.push(CatalogTool {
            name,
            server: HOST_SERVER.into(),
            tool,
            input,
            output: None,
            changed: false,
        });
    }

    /// Carry decisions over from the catalog this one replaces: a tool on `allow` whose
    /// definition changed is flagged (and stays flagged until the person approves a call).
    /// Returns the names newly flagged.
    pub fn carry_over(&mut self, previous: &Catalog, allow: &[String]) -> Vec<String> {
        let mut flagged = Vec::new();
        for t in &mut self.tools {
            let Some(old) = previous.get(&t.name).filter(|o| o.server == t.server) else {
                continue;
            };
            let differs = fingerprint(&old.tool) != fingerprint(&t.tool);
            if differs && allow.contains(&t.name) && !old.changed {
                flagged.push(t.name.clone());
            }
            t.changed = old.changed || (differs && allow.contains(&t.name));
        }
        flagged
    }

    /// The person approved a call to a changed tool: its new definition is the one decided on.
    pub fn mark_approved(&mut self, name: &str) {
        if let Some(&i) = self.index.get(name) {
            self.tools[i].changed = false;
        }
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
                parameters: t.tool.input_schema.clone(),
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

/// One server's tool list as the host last read it.
#[derive(Debug, Clone)]
pub struct Listing {
    pub server: String,
    pub tools: Vec<Tool>,
    pub listed_at: std::time::Instant,
    /// How long the server said the list stays fresh (`ttlMs`; absent means 0).
    pub ttl: std::time::Duration,
}

impl Listing {
    /// Is the list older than the server said it stays fresh?
    pub fn stale(&self) -> bool {
        self.listed_at.elapsed() >= self.ttl
    }
}

/// Read every page of a server's tool list, at most `max_pages` of them. An empty-string
/// cursor is a cursor like any other; only an absent one ends the list.
pub async fn list_tools(conn: &Connection, max_pages: usize) -> Result<Listing, ListError> {
    let mut tools = Vec::new();
    let mut ttl_ms: Option<u64> = None;
    let mut cursor: Option<String> = None;
    for _ in 0..max_pages {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let page = conn
            .client
            .list_tools(Some(params))
            .await
            .map_err(|e| ListError::Request(e.to_string()))?;
        tools.extend(page.tools);
        // Pages cache on their own; the list is as fresh as its stalest page.
        ttl_ms = Some(ttl_ms.unwrap_or(u64::MAX).min(page.ttl_ms.unwrap_or(0)));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => {
                return Ok(Listing {
                    server: conn.name.clone(),
                    tools,
                    listed_at: std::time::Instant::now(),
                    ttl: std::time::Duration::from_millis(ttl_ms.unwrap_or(0)),
                });
            }
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
    fn a_changed_allowed_tool_is_flagged_until_approved() {
        let old = Catalog::build(vec![("s".into(), vec![tool("a"), tool("b")])]);
        let mut changed_a: Tool = tool("a");
        changed_a.description = Some("now it deletes things".into());
        let mut new = Catalog::build(vec![("s".into(), vec![changed_a.clone(), tool("b")])]);
        let allow = vec!["s__a".to_string()];
        assert_eq!(new.carry_over(&old, &allow), vec!["s__a".to_string()]);
        assert!(new.get("s__a").unwrap().changed);
        assert!(!new.get("s__b").unwrap().changed);
        let mut again = Catalog::build(vec![("s".into(), vec![changed_a, tool("b")])]);
        assert!(again.carry_over(&new, &allow).is_empty(), "flagged once");
        assert!(
            again.get("s__a").unwrap().changed,
            "and kept until approved"
        );
        again.mark_approved("s__a");
        assert!(!again.get("s__a").unwrap().changed);
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
