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
//! control, whitespace or invisible characters) leaves its tool out, with the reason. A
//! server's `enabledTools` and `disabledTools` leave out what they say
//! ([`Catalog::build_with`]): such a tool is unknown to the model and to the policy.

use std::{
    collections::HashMap,
    sync::{Arc, OnceLock},
};

use rmcp::model::{JsonObject, Tool};

use crate::{
    config::{ServerName, ToolRules},
    schema::{Checker, Kind, Lazy},
};

pub mod cached;
pub mod change;
pub mod host_tools;
pub mod listing;
pub mod live;
pub mod offer;
pub mod search;
pub mod words;

mod described;
mod spec;

pub use spec::ToolSpec;
#[cfg(test)]
mod tests;

pub use host_tools::{READ_RESULT, SEARCH_TOOLS};
pub use listing::{ListError, Listing, list_tools};
pub use live::Live;

/// Longest tool name model APIs accept.
pub const MAX_MODEL_TOOL_NAME: usize = 64;
pub use crate::config::NAMESPACE_SEPARATOR;

/// One tool as the host offers it.
#[derive(Debug, Clone)]
pub struct CatalogTool {
    /// The name the model sees and proposes.
    pub name: String,
    /// Where it comes from: a server, or the host itself.
    pub origin: Origin,
    /// The tool exactly as the server described it; `tool.name` is used on the wire.
    pub tool: Tool,
    /// Its input schema, compiled once when first needed: every proposal is checked
    /// against it. It is known to compile: a tool whose schema does not is left out.
    pub input: Lazy,
    /// Its output schema, when it declares one, likewise.
    pub output: Option<Lazy>,
    /// Sent to the model in full on every call, even when the catalog is searched instead
    /// (`alwaysLoad`; the host's own tools).
    pub always_load: bool,
    /// The tool changed more than its wording ([`change`]) after the host decided to run
    /// it without asking: the person is asked before its next call.
    pub changed: bool,
    /// What changed since the list before, until the person approves a call of it.
    pub change: Option<Arc<change::Change>>,
    /// A description put in place of the server's for the model and `search_tools` (an
    /// eval's variant, [`Catalog::describe`]); never for the policy: the digest is of the
    /// server's own definition.
    pub described: Option<Arc<str>>,
    /// The digest of its server's box, when it runs in one ([`ToolRules::boxed`]): part
    /// of its definition digest.
    pub boxed: Option<Arc<str>>,
    /// The digest of its definition ([`CatalogTool::definition_digest`]), made on first
    /// use: every proposal's ledger line needs it, and serialising the schemas for each
    /// call was a third of the host's own time per call. Shared by clones, since a
    /// proposal works on a clone taken out of the catalog's lock.
    digest: Arc<OnceLock<String>>,
    /// The input schema as the model gets it, invisible characters out of every string
    /// ([`crate::text::uncloaked`]); the server's own when it has none (nearly always).
    /// Made on first use and shared by clones, as the digest is.
    for_model: Arc<OnceLock<Arc<JsonObject>>>,
}

impl CatalogTool {
    /// The digest of what the host relies on in this tool's definition
    /// ([`crate::catalog::definition_digest`]), computed once per catalog entry.
    /// A tool of a server in a box is digested with its box: what was approved is the tool
    /// as it runs there.
    pub fn definition_digest(&self) -> &str {
        self.digest.get_or_init(|| match &self.boxed {
            None => definition_digest(&self.tool),
            Some(boxed) => crate::digest::sha256_hex(
                format!("{}\nsandbox {boxed}", fingerprint(&self.tool)).as_bytes(),
            ),
        })
    }
}

/// Where a catalog tool comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A configured server, by its name in the servers file.
    Server(ServerName),
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
    pub fn server(&self) -> Option<&ServerName> {
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
/// Most tools a catalog may hold and still keep the validators that checked its schemas,
/// so that a call does not compile them again; a larger one compiles each on first use
/// (`schema::Checker`).
pub const KEEP_COMPILED_TOOLS: usize = 64;
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

/// The digest of what the host relies on in a tool's definition ([`fingerprint`]), as
/// remembered approvals and the ledger keep it: when it changes, an approval given on the
/// old definition no longer holds. It lives here, not in `policy`, so that the catalog
/// (which keeps it per entry) does not import the policy that reads it.
pub fn definition_digest(tool: &Tool) -> String {
    crate::digest::sha256_hex(fingerprint(tool).as_bytes())
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

/// Every tool the host may offer, by model-facing name.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tools: Vec<CatalogTool>,
    index: HashMap<String, usize>,
    /// What the host had to rename, in words, for the person.
    pub collisions: Vec<String>,
    /// Tools left out because their schemas cannot be used, in words.
    pub left_out: Vec<String>,
    /// What the servers' `enabledTools` and `disabledTools` left out, in words.
    pub filtered: Vec<String>,
    /// The host's tools offered only when needed (`search_tools`, `read_result`): known
    /// to [`Catalog::get`], not among [`Catalog::tools`].
    on_demand: Vec<CatalogTool>,
    /// Bytes of every definition as the model would get them, counted once when asked.
    request_bytes: OnceLock<usize>,
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
    pub fn build(listings: Vec<(ServerName, Vec<Tool>)>) -> Catalog {
        Catalog::build_with(listings, &HashMap::new())
    }

    /// [`Catalog::build`], each server's tools kept or left out by its rules
    /// (`enabledTools`, `disabledTools`) and marked by its `alwaysLoad`.
    pub fn build_with(
        listings: Vec<(ServerName, Vec<Tool>)>,
        rules: &HashMap<ServerName, ToolRules>,
    ) -> Catalog {
        let mut catalog = Catalog::default();
        let mut kept: Vec<(usize, CatalogTool)> = Vec::new();
        let mut changed: Vec<(usize, String, CatalogTool)> = Vec::new();
        let mut order = 0;
        let tools: usize = listings.iter().map(|(_, tools)| tools.len()).sum();
        let mut checker = Checker::keeping(tools <= KEEP_COMPILED_TOOLS);
        for (server, tools) in listings {
            let tools = catalog.filter(&server, tools, rules.get(&server));
            for (tool, always_load) in tools {
                order += 1;
                let Some(mut entry) = catalog.checked(&server, tool, &mut checker) else {
                    continue;
                };
                entry.always_load = always_load;
                entry.boxed = rules
                    .get(&server)
                    .and_then(|r| r.boxed.as_deref())
                    .map(Arc::from);
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

    /// The tools of one server that its rules offer, each with whether it is always
    /// loaded; what was left out, and patterns that matched nothing, noted for the person.
    fn filter(
        &mut self,
        server: &str,
        tools: Vec<Tool>,
        rules: Option<&ToolRules>,
    ) -> Vec<(Tool, bool)> {
        let Some(rules) = rules.filter(|r| !r.is_default()) else {
            return tools.into_iter().map(|t| (t, false)).collect();
        };
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        for (key, pattern) in rules.unmatched(&names) {
            self.filtered.push(format!(
                "warning: {key} of {server} names {pattern:?}, which matches none of its tools"
            ));
        }
        let total = tools.len();
        let offered: Vec<(Tool, bool)> = tools
            .into_iter()
            .filter(|t| rules.offers(&t.name))
            .map(|t| {
                let always = rules.always_loads(&t.name);
                (t, always)
            })
            .collect();
        if offered.len() < total {
            self.filtered.push(format!(
                "{server}: {} of its {total} tools offered ({} left out by enabledTools and disabledTools)",
                offered.len(),
                total - offered.len()
            ));
        }
        offered
    }

    /// One server's tool, its schemas checked, or `None` (and the reason noted) when its
    /// name or its schemas cannot be used. Its catalog name is given by [`Catalog::build`].
    fn checked(
        &mut self,
        server: &ServerName,
        tool: Tool,
        checker: &mut Checker,
    ) -> Option<CatalogTool> {
        if let Some(problem) = name_problem(&tool.name) {
            self.left_out.push(format!(
                "{server}'s tool {:?} is left out: its name {problem}",
                crate::text::clip(&tool.name, MAX_TOOL_NAME)
            ));
            return None;
        }
        let compiled = checker
            .check(&tool.input_schema, Kind::Input)
            .and_then(|input| {
                let output = tool
                    .output_schema
                    .as_ref()
                    .map(|s| checker.check(s, Kind::Output))
                    .transpose()?;
                Ok((input, output))
            });
        match compiled {
            Ok((input, output)) => Some(CatalogTool {
                name: String::new(),
                origin: Origin::Server(server.clone()),
                tool,
                input,
                output,
                always_load: false,
                changed: false,
                change: None,
                described: None,
                boxed: None,
                digest: Arc::default(),
                for_model: Arc::default(),
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
        let Ok(input) = Lazy::check(&tool.input_schema, Kind::Input) else {
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
            always_load: true,
            changed: false,
            change: None,
            described: None,
            boxed: None,
            digest: Arc::default(),
            for_model: Arc::default(),
        });
        self.request_bytes = OnceLock::new();
    }

    /// Add one of the host's tools that is offered only when needed: [`Catalog::get`]
    /// finds it, [`Catalog::tools`] and [`Catalog::model_tools`] leave it out.
    pub fn add_on_demand_tool(&mut self, tool: Tool) {
        let name = tool.name.to_string();
        if self.get(&name).is_some() {
            return;
        }
        if let Ok(input) = Lazy::check(&tool.input_schema, Kind::Input) {
            self.on_demand.push(CatalogTool {
                name,
                origin: Origin::Host,
                tool,
                input,
                output: None,
                always_load: false,
                changed: false,
                change: None,
                described: None,
                boxed: None,
                digest: Arc::default(),
                for_model: Arc::default(),
            });
        }
    }

    /// The servers the catalog's tools come from, each once, in the catalog's order.
    pub fn servers(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for t in &self.tools {
            if let Origin::Server(s) = &t.origin
                && !out.contains(&s.as_str())
            {
                out.push(s);
            }
        }
        out
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
            let change = change::classify(&old.tool, &t.tool).map(Arc::new);
            // Only more than a rewording asks again; a rewording is still shown.
            let risky = change.as_ref().is_some_and(|c| c.risky());
            if risky && allow.contains(&t.name) && !old.changed {
                flagged.push(t.name.clone());
            }
            t.changed = old.changed || (risky && allow.contains(&t.name));
            t.change = change.or_else(|| old.change.clone());
        }
        flagged
    }

    /// The person approved a call to a changed tool: its new definition is the one decided on.
    pub fn mark_approved(&mut self, name: &str) {
        if let Some(&i) = self.index.get(name) {
            self.tools[i].changed = false;
            self.tools[i].change = None;
        }
    }

    /// A tool by the name the model uses, the host's on-demand tools included.
    pub fn get(&self, name: &str) -> Option<&CatalogTool> {
        match self.index.get(name) {
            Some(&i) => Some(&self.tools[i]),
            None => self.on_demand.iter().find(|t| t.name == name),
        }
    }

    /// Every tool, in the catalog's stable order.
    pub fn tools(&self) -> &[CatalogTool] {
        &self.tools
    }

    /// Every offered tool's name.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name.clone()).collect()
    }

    /// How many tools the catalog holds.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether the catalog holds no tool.
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
        self.request_bytes = OnceLock::new();
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
        self.tools.iter().map(CatalogTool::spec).collect()
    }

    /// Bytes of every definition in a model call ([`ToolSpec::request_bytes`]), counted
    /// once per catalog.
    pub fn request_bytes(&self) -> usize {
        *self
            .request_bytes
            .get_or_init(|| self.tools.iter().map(|t| t.spec().request_bytes()).sum())
    }
}
