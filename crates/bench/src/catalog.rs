//! The 1,000-tool catalog of the tool-search quality set (`bench/catalog/`): the pinned
//! tool lists of real servers (`bench/catalog/servers/*.json`, each saying where it came
//! from), the reference servers' own definitions (`crates/servers/tools/`), and generated
//! servers of common products (`domains`) to reach [`CATALOG_TOOLS`].

mod domains;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// How many tools the quality catalog holds.
pub const CATALOG_TOOLS: usize = 1_000;

/// The repository's root, from this crate's folder.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One server's tools as a servers file would list them: its name and definitions.
pub type ServerTools = (String, Vec<Value>);

/// The pinned real servers, by file name order.
pub fn pinned(root: &Path) -> anyhow::Result<Vec<ServerTools>> {
    let dir = root.join("bench/catalog/servers");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            let doc: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
            let server = doc["server"]
                .as_str()
                .ok_or_else(|| anyhow::anyhow!("{}: no \"server\"", path.display()))?;
            let tools = doc["tools"]
                .as_array()
                .ok_or_else(|| anyhow::anyhow!("{}: no \"tools\"", path.display()))?;
            Ok((server.to_owned(), tools.clone()))
        })
        .collect()
}

/// The reference servers' tools (`crates/servers/tools/SERVER.TOOL.json`), by server.
pub fn reference(root: &Path) -> anyhow::Result<Vec<ServerTools>> {
    let dir = root.join("crates/servers/tools");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    let mut out: Vec<ServerTools> = Vec::new();
    for path in files {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let Some((server, _)) = stem.split_once('.') else {
            continue;
        };
        let tool: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
        match out.iter_mut().find(|(s, _)| s == server) {
            Some((_, tools)) => tools.push(tool),
            None => out.push((server.to_owned(), vec![tool])),
        }
    }
    Ok(out)
}

/// JSON Schema of one generated parameter.
fn parameter(kind: &str, description: &str) -> Value {
    let mut p = json!({"type": kind, "description": description});
    if kind == "array" {
        p["items"] = json!({"type": "string"});
    }
    p
}

/// A generated tool definition.
fn tool(name: String, description: String, params: &[(&str, &str, &str, bool)]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (pname, kind, desc, req) in params {
        properties.insert((*pname).into(), parameter(kind, desc));
        if *req {
            required.push(Value::from(*pname));
        }
    }
    let read_only = ["list_", "get_", "search_", "find_", "query_", "describe_"]
        .iter()
        .any(|p| name.starts_with(p));
    json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": required},
        "annotations": {"readOnlyHint": read_only, "destructiveHint": name.starts_with("delete_")}
    })
}

/// `a` or `an`, as the word after it sounds.
fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// The plain tools of one entity of a product.
fn entity_tools(product: &str, e: &domains::Entity) -> Vec<Value> {
    let id = format!("{}_id", e.one.replace([' ', '-'], "_"));
    let one = e.one.replace([' ', '-'], "_");
    let many = e.many.replace([' ', '-'], "_");
    let id_param = (id.as_str(), "string", "Its id.", true);
    let fields: Vec<(&str, &str, &str, bool)> = e
        .fields
        .iter()
        .map(|(n, k, d)| (*n, *k, *d, false))
        .collect();
    let mut out = Vec::new();
    for verb in e.verbs.chars() {
        let (name, description, params): (String, String, Vec<_>) = match verb {
            'l' => (
                format!("list_{many}"),
                format!(
                    "List {} in {product}, newest first, a page at a time.",
                    e.many
                ),
                vec![
                    ("limit", "integer", "How many to return.", false),
                    ("cursor", "string", "Where the last page ended.", false),
                ],
            ),
            'g' => (
                format!("get_{one}"),
                format!(
                    "Get one {} from {product} by its id, with all its fields.",
                    e.one
                ),
                vec![id_param],
            ),
            'c' => (
                format!("create_{one}"),
                format!(
                    "Create a new {} in {product}. Returns it with its id.",
                    e.one
                ),
                fields.clone(),
            ),
            'u' => (
                format!("update_{one}"),
                format!("Update fields of an existing {product} {}.", e.one),
                std::iter::once(id_param)
                    .chain(fields.iter().copied())
                    .collect(),
            ),
            'd' => (
                format!("delete_{one}"),
                format!(
                    "Delete {} {} from {product}. This cannot be undone.",
                    article(e.one),
                    e.one
                ),
                vec![id_param],
            ),
            's' => (
                format!("search_{many}"),
                format!("Search {product} {} by text and filters.", e.many),
                vec![
                    ("query", "string", "Words to look for.", true),
                    ("limit", "integer", "Most results.", false),
                ],
            ),
            _ => continue,
        };
        out.push(tool(name, description, &params));
    }
    out
}

/// Every generated server, with all of its tools.
pub fn generated() -> Vec<ServerTools> {
    domains::DOMAINS
        .iter()
        .map(|d| {
            let mut tools: Vec<Value> = d
                .entities
                .iter()
                .flat_map(|e| entity_tools(d.product, e))
                .collect();
            tools.extend(
                d.extras
                    .iter()
                    .map(|(name, desc, params)| tool((*name).into(), (*desc).into(), params)),
            );
            (d.server.to_owned(), tools)
        })
        .collect()
}

/// The quality catalog: the reference servers, the pinned real servers, then generated
/// servers, the last one cut so that the whole holds exactly [`CATALOG_TOOLS`] tools.
pub fn quality_catalog(root: &Path) -> anyhow::Result<Vec<ServerTools>> {
    let mut servers = reference(root)?;
    servers.extend(pinned(root)?);
    let mut count: usize = servers.iter().map(|(_, t)| t.len()).sum();
    for (name, mut tools) in generated() {
        if count >= CATALOG_TOOLS {
            break;
        }
        tools.truncate(CATALOG_TOOLS - count);
        count += tools.len();
        servers.push((name, tools));
    }
    anyhow::ensure!(
        count == CATALOG_TOOLS,
        "the catalog has {count} tools, not {CATALOG_TOOLS}: add generated products"
    );
    Ok(servers)
}
