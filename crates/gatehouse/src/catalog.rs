//! Discovery and the catalog: every server's tools, under names the host gives them.
//!
//! Servers name their tools without knowing about each other, so the host prefixes each
//! with its server (`support__get_ticket`) and makes the name safe for model APIs
//! (`^[a-zA-Z0-9_-]{1,64}$`). Making names safe can make two collide; a collision never
//! hides a tool: the one whose name had to change gets a numbered, stable name and the host
//! says so. A tool whose name was already safe always keeps it, so no server can list a
//! decoy (`search.knowledge`) that takes a real tool's name (`search_knowledge`).
//!
//! A name that cannot be shown plainly (empty, longer than [`MAX_TOOL_NAME`], or holding
//! control, whitespace or invisible characters) leaves its tool out, with the reason.

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
    /// Where it comes from: a server, or the host itself.
    pub origin: Origin,
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

/// Where a catalog tool comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A configured server, by its name in the servers file.
    Server(String),
    /// The host's own tools ([`READ_RESOURCE`]): never sent to a server as such.
    Host,
}

impl Origin {
    /// How records and the person name it: the server's name, or `host`.
    pub fn label(&self) -> &str {
        match self {
            Origin::Server(name) => name,
            Origin::Host => HOST_LABEL,
        }
    }

    /// The server's name, for a server's tool.
    pub fn server(&self) -> Option<&str> {
        match self {
            Origin::Server(name) => Some(name),
            Origin::Host => None,
        }
    }
}

/// How records name the host's own tools' origin. Only a label: a server may be called
/// `host` too, and its tools are still its own ([`Origin`] tells them apart).
pub const HOST_LABEL: &str = "host";
/// Longest tool name a server may give (the revision's SHOULD: `[A-Za-z0-9_.-]{1,128}`).
pub const MAX_TOOL_NAME: usize = 128;
/// The host's tool that follows resource links from this turn's results.
pub const READ_RESOURCE: &str = "read_resource";

/// The definition of [`READ_RESOURCE`], offered when any server has resources.
pub fn read_resource_tool() -> Tool {
    serde_json::from_value(serde_json::json!({
        "name": READ_RESOURCE,
        "description": "Read a resource that a tool result in this turn linked to (a resource_link, an embedded resource, or a uri field), by its URI. Other URIs are refused.",
        "inputSchema": {"type": "object", "properties": {
            "uri": {"type": "string", "minLength": 1, "maxLength": 2048, "description": "A URI exactly as a result of this turn gave it."},
            "server": {"type": "string", "maxLength": 128, "description": "The server whose result linked it; needed only when results of two servers linked the same URI."}
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

/// Is `name` (a server's `server__tool`) exactly what the server and the tool are called,
/// with nothing replaced or cut? Only such names are never renamed. A server name with the
/// separator in it, or ending in `_`, could be read two ways (`a__b` + `c` and `a` +
/// `b__c`), so its tools count as changed.
fn is_exact(server: &str, tool: &str, name: &str) -> bool {
    !server.contains(NAMESPACE_SEPARATOR)
        && !server.ends_with('_')
        && name.len() == server.len() + NAMESPACE_SEPARATOR.len() + tool.len()
        && name.starts_with(server)
        && name.ends_with(tool)
}

/// Why a tool's name cannot be used as given, if it cannot: a person must be able to read
/// the name they approve, and two names that look the same must be the same.
pub fn name_problem(name: &str) -> Option<String> {
    let count = name.chars().count();
    if count == 0 {
        return Some("is empty".into());
    }
    if count > MAX_TOOL_NAME {
        return Some(format!(
            "is {count} characters long, more than {MAX_TOOL_NAME}"
        ));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Some(format!("holds a control character (U+{:04X})", c as u32));
    }
    if let Some(c) = name.chars().find(|c| c.is_whitespace()) {
        return Some(format!("holds whitespace (U+{:04X})", c as u32));
    }
    if let Some(c) = name.chars().find(|c| is_invisible(*c)) {
        return Some(format!("holds an invisible character (U+{:04X})", c as u32));
    }
    None
}

/// Characters that show as nothing (zero-width spaces and joiners, direction marks,
/// variation selectors, tag characters, fillers): two names differing only in them look
/// the same to a person.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
        | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}'
        | '\u{ffa0}' | '\u{fff0}'..='\u{fffb}' | '\u{e0000}'..='\u{e0fff}')
}

impl Catalog {
    /// Build the catalog from each server's tools, in the servers' order. Names that are
    /// already safe are given first, so only a name that had to change is ever renamed.
    pub fn build(listings: Vec<(String, Vec<Tool>)>) -> Catalog {
        let mut catalog = Catalog::default();
        let mut kept: Vec<(usize, CatalogTool)> = Vec::new();
        let mut changed: Vec<(usize, String, CatalogTool)> = Vec::new();
        let mut order = 0;
        for (server, tools) in listings {
            for tool in tools {
                order += 1;
                let Some(mut entry) = catalog.checked(&server, tool) else {
                    continue;
                };
                let base = namespaced(&server, &entry.tool.name);
                if is_exact(&server, &entry.tool.name, &base) {
                    if catalog.index.contains_key(&base) {
                        catalog.left_out.push(format!(
                            "{server}'s tool {:?} is left out: the server lists that name twice",
                            entry.tool.name
                        ));
                        continue;
                    }
                    catalog.index.insert(base.clone(), usize::MAX);
                    entry.name = base;
                    kept.push((order, entry));
                } else {
                    changed.push((order, base, entry));
                }
            }
        }
        for (order, base, mut entry) in changed {
            let mut name = base.clone();
            let mut n = 2;
            while catalog.index.contains_key(&name) {
                let suffix = format!("_{n}");
                let keep = MAX_MODEL_TOOL_NAME - suffix.len();
                name = format!("{}{suffix}", base.chars().take(keep).collect::<String>());
                n += 1;
            }
            if name != base {
                let holder = kept
                    .iter()
                    .map(|(_, t)| t)
                    .find(|t| t.name == base)
                    .map(|t| format!(" ({}'s tool {:?})", t.origin.label(), t.tool.name))
                    .unwrap_or_default();
                catalog.collisions.push(format!(
                    "{}'s tool {:?} is offered as {name}: its safe name {base} is taken{holder}",
                    entry.origin.label(),
                    entry.tool.name
                ));
            }
            catalog.index.insert(name.clone(), usize::MAX);
            entry.name = name;
            kept.push((order, entry));
        }
        kept.sort_by_key(|(order, _)| *order);
        for (_, entry) in kept {
            catalog
                .index
                .insert(entry.name.clone(), catalog.tools.len());
            catalog.tools.push(entry);
        }
        catalog
    }

    /// One server's tool, with its schemas compiled, or `None` (and the reason noted) when
    /// its name or its schemas cannot be used. Its catalog name is given by [`Catalog::build`].
    fn checked(&mut self, server: &str, tool: Tool) -> Option<CatalogTool> {
        if let Some(problem) = name_problem(&tool.name) {
            self.left_out.push(format!(
                "{server}'s tool {:?} is left out: its name {problem}",
                crate::text::clip(&tool.name, MAX_TOOL_NAME)
            ));
            return None;
        }
        let compiled = schema::compile_input(&tool.input_schema).and_then(|input| {
            let output = tool
                .output_schema
                .as_ref()
                .map(|s| schema::compile_output(s))
                .transpose()?;
            Ok((input, output))
        });
        match compiled {
            Ok((input, output)) => Some(CatalogTool {
                name: String::new(),
                origin: Origin::Server(server.into()),
                tool,
                input,
                output,
                changed: false,
            }),
            Err(reason) => {
                self.left_out.push(format!(
                    "{server}'s tool {:?} is left out: {reason}",
                    tool.name
                ));
                None
            }
        }
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
            origin: Origin::Host,
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
            let Some(old) = previous.get(&t.name).filter(|o| o.origin == t.origin) else {
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
                    t.origin.label(),
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
        // The name that was already safe keeps it, whichever the server listed first.
        assert_eq!(c.get("a__x_y").unwrap().tool.name, "x_y");
        assert_eq!(c.get("a__x_y_2").unwrap().tool.name, "x.y");
        assert_eq!(c.collisions.len(), 1);
        assert!(c.collisions[0].contains("a__x_y_2"));
        // The listing's order is kept for the model.
        assert_eq!(c.tools()[0].tool.name, "x.y");
    }

    #[test]
    fn a_decoy_listed_first_cannot_take_a_real_tools_name() {
        let c = Catalog::build(vec![(
            "support".into(),
            vec![tool("search.knowledge"), tool("search_knowledge")],
        )]);
        assert_eq!(
            c.get("support__search_knowledge").unwrap().tool.name,
            "search_knowledge"
        );
        assert_eq!(
            c.get("support__search_knowledge_2").unwrap().tool.name,
            "search.knowledge"
        );
        // Across servers too, and a server whose name could be read two ways yields.
        let c = Catalog::build(vec![
            ("a".into(), vec![tool("b__c")]),
            ("a__b".into(), vec![tool("c")]),
        ]);
        assert_eq!(c.get("a__b__c").unwrap().origin, Origin::Server("a".into()));
        assert_eq!(
            c.get("a__b__c_2").unwrap().origin,
            Origin::Server("a__b".into())
        );
    }

    #[test]
    fn names_that_cannot_be_read_plainly_are_left_out() {
        let names = [
            "",
            &"n".repeat(129),
            "get\u{1b}[2J",
            "get ticket",
            "get\u{200b}ticket",
            "get\u{202e}tekcit",
            "dup",
            "dup",
        ];
        let c = Catalog::build(vec![("s".into(), names.iter().map(|n| tool(n)).collect())]);
        assert_eq!(c.len(), 1, "{:?}", c.left_out);
        let reasons = c.left_out.join("\n");
        for expected in [
            "is empty",
            "129 characters long",
            "control character (U+001B)",
            "whitespace (U+0020)",
            "invisible character (U+200B)",
            "invisible character (U+202E)",
            "lists that name twice",
        ] {
            assert!(reasons.contains(expected), "{expected}: {reasons}");
        }
        assert!(
            !reasons.contains('\u{1b}'),
            "reasons are shown to the person"
        );
    }

    #[test]
    fn a_server_named_host_keeps_its_tools() {
        let mut c = Catalog::build(vec![("host".into(), vec![tool("read_resource")])]);
        c.add_host_tool(read_resource_tool());
        assert_eq!(
            c.get("host__read_resource").unwrap().origin,
            Origin::Server("host".into())
        );
        assert_eq!(c.get(READ_RESOURCE).unwrap().origin, Origin::Host);
    }

    use proptest::prelude::*;

    proptest! {
        /// Whatever names servers give, every catalog name is unique and valid for model
        /// APIs, and every tool whose name was already safe keeps exactly that name.
        #[test]
        fn names_are_unique_valid_and_safe_ones_kept(
            listings in prop::collection::vec(
                ("[a-z_.]{1,6}", prop::collection::vec("[a-zA-Z0-9_.\\-/ ]{0,70}", 0..12)),
                1..4,
            ),
        ) {
            let listings: Vec<(String, Vec<Tool>)> = listings
                .into_iter()
                .map(|(server, names)| (server, names.iter().map(|n| tool(n)).collect()))
                .collect();
            let c = Catalog::build(listings.clone());
            let mut seen = std::collections::HashSet::new();
            for t in c.tools() {
                prop_assert!(seen.insert(t.name.clone()), "{} twice", t.name);
                prop_assert!(!t.name.is_empty() && t.name.len() <= MAX_MODEL_TOOL_NAME);
                prop_assert!(t.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
                prop_assert_eq!(c.get(&t.name).map(|g| &g.tool.name), Some(&t.tool.name));
            }
            for (server, tools) in &listings {
                for t in tools {
                    let exact = format!("{server}__{}", t.name);
                    let safe = name_problem(&t.name).is_none()
                        && exact == namespaced(server, &t.name)
                        && !server.contains("__")
                        && !server.ends_with('_');
                    if safe {
                        let got = c.get(&exact).expect("a safe name is kept");
                        prop_assert_eq!(&got.tool.name, &t.name);
                        prop_assert_eq!(got.origin.label(), server.as_str());
                    }
                }
            }
            let listed: usize = listings.iter().map(|(_, t)| t.len()).sum();
            prop_assert_eq!(c.len() + c.left_out.len(), listed);
        }
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
