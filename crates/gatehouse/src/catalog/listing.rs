//! One server's tool list, read to its last page (at most a bound of pages), with how
//! long the server said it stays fresh.

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::{Map, Value};

use crate::{config::ServerName, connect::Connection};

/// Why a server's tool list could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error("tools/list failed: {0}")]
    /// The request failed (transport, protocol).
    Request(String),
    #[error("tools/list did not end after {0} pages")]
    /// The server kept giving a next page.
    TooManyPages(usize),
}

/// One server's tool list as the host last read it.
#[derive(Debug, Clone)]
pub struct Listing {
    /// The server, by its name in the servers file.
    pub server: ServerName,
    /// Every tool of every page, in the server's order.
    pub tools: Vec<Tool>,
    /// When the list was read.
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
        let page = conn
            .list_page::<rmcp::model::ListToolsResult>(cursor.take())
            .await
            .map_err(|e| ListError::Request(e.to_string()))?;
        tools.extend(page.tools.into_iter().map(compact));
        // Pages cache on their own; the list is as fresh as its stalest page.
        ttl_ms = Some(ttl_ms.unwrap_or(u64::MAX).min(page.ttl_ms.unwrap_or(0)));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => {
                tools.shrink_to_fit();
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

/// `tool`, its schemas holding no room past their size. JSON is read one member at a time,
/// so an object of four members is left with room for seven (and a list with room to
/// spare); a host keeps every tool of every server for its whole run, so each schema is
/// built again at its size: a fifth of a generated tool's memory (docs/benchmarks.md).
pub fn compact(mut tool: Tool) -> Tool {
    if let Some(schema) = Arc::get_mut(&mut tool.input_schema) {
        compact_object(schema);
    }
    if let Some(schema) = tool.output_schema.as_mut().and_then(Arc::get_mut) {
        compact_object(schema);
    }
    tool
}

/// `map` rebuilt at its size, in its order, each value compacted. The depth is bounded by
/// the JSON reader's own (128 levels), so the recursion is too.
fn compact_object(map: &mut Map<String, Value>) {
    let members = std::mem::take(map);
    let mut sized = Map::with_capacity(members.len());
    for (key, mut value) in members {
        compact_value(&mut value);
        sized.insert(key, value);
    }
    *map = sized;
}

fn compact_value(value: &mut Value) {
    match value {
        Value::Object(map) => compact_object(map),
        Value::Array(items) => {
            items.iter_mut().for_each(compact_value);
            items.shrink_to_fit();
        }
        Value::String(text) => text.shrink_to_fit(),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "[a-z\\u{e9}]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(6, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                proptest::collection::vec(("[a-z]{1,4}", inner), 0..8)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Compacting changes nothing a reader sees: the same members, in the same order.
        #[test]
        fn a_compacted_schema_is_the_same_schema(schema in json_value()) {
            let mut object = Map::new();
            object.insert("type".into(), json!("object"));
            object.insert("properties".into(), schema.clone());
            let tool = Tool::new("t", "d", Arc::new(object.clone()));
            let compacted = compact(tool);
            let before = serde_json::to_string(&object).unwrap();
            let after = serde_json::to_string(&*compacted.input_schema).unwrap();
            prop_assert_eq!(before, after);
        }
    }

    #[test]
    fn a_schema_another_holder_shares_is_left_as_it_is() {
        let schema = Arc::new(json!({"type": "object"}).as_object().unwrap().clone());
        let tool = Tool::new("t", "d", Arc::clone(&schema));
        let compacted = compact(tool);
        assert!(Arc::ptr_eq(&schema, &compacted.input_schema));
    }
}
