//! Tool schemas in the JSON Schema each model provider's API accepts (`schemaDialect`):
//! plain JSON Schema as the server wrote it, OpenAI's strict function calling, or Gemini's
//! function declarations. What each accepts is in [`rules`]; the conversion, bounded for
//! any input, cycles and depth included, in [`convert`].
//!
//! The model only ever sees the converted schema; the host still checks every proposal
//! against the server's own ([`crate::policy`]). A strict OpenAI schema makes every
//! property required and lets an optional one be `null`: [`restore_arguments`] takes such
//! nulls out again before the check, so the server never sees a value it did not ask for.
//! A schema that strict mode cannot say faithfully (a map of any names, a value of any
//! type, a cut cycle) is sent without `strict`, references inlined and arrays given
//! `items`, which every provider takes.

pub mod convert;
mod notes;
pub mod rules;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::config::SchemaDialect;
pub use convert::{Converted, Target};
pub use rules::{lenient_violations, violations};

/// Deepest an argument value is walked to take out the nulls strict mode added.
pub const MAX_RESTORE_DEPTH: usize = 32;

/// `schema` for `dialect`: the schema, and whether the tool may be sent `strict`.
pub fn parameters(
    schema: &Arc<Map<String, Value>>,
    dialect: SchemaDialect,
) -> (Arc<Map<String, Value>>, bool) {
    match dialect {
        SchemaDialect::JsonSchema => (schema.clone(), false),
        SchemaDialect::Gemini => (
            Arc::new(convert::convert(schema, Target::Gemini).schema),
            false,
        ),
        SchemaDialect::OpenAiStrict => {
            let strict = convert::convert(schema, Target::Strict);
            if strict.faithful
                && violations(&Value::Object(strict.schema.clone()), dialect).is_empty()
            {
                (Arc::new(strict.schema), true)
            } else {
                (
                    Arc::new(convert::convert(schema, Target::Lenient).schema),
                    false,
                )
            }
        }
    }
}

/// Take out of `arguments` the nulls a strict schema let the model give for properties the
/// server's `schema` does not require and does not let be null: such a null means "not
/// given". Everything else is left as the model wrote it.
pub fn restore_arguments(arguments: &mut Value, schema: &Map<String, Value>) {
    restore(arguments, schema, schema, 0);
}

fn restore(value: &mut Value, node: &Map<String, Value>, root: &Map<String, Value>, depth: usize) {
    if depth > MAX_RESTORE_DEPTH {
        return;
    }
    let node = match node.get("$ref").and_then(Value::as_str) {
        Some(r) => match local(root, r) {
            Some(target) => target,
            None => return,
        },
        None => node,
    };
    match value {
        Value::Object(fields) => {
            let props = node.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            fields.retain(|name, v| {
                let schema = props.and_then(|p| p.get(name)).and_then(Value::as_object);
                !(v.is_null()
                    && !required.contains(&name.as_str())
                    && schema.is_some_and(|s| !allows_null(s)))
            });
            for (name, v) in fields.iter_mut() {
                if let Some(s) = props.and_then(|p| p.get(name)).and_then(Value::as_object) {
                    restore(v, s, root, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = node.get("items").and_then(Value::as_object) {
                for item in items.iter_mut().take(10_000) {
                    restore(item, s, root, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// The schema a local `$ref` names, within the root.
fn local<'a>(root: &'a Map<String, Value>, reference: &str) -> Option<&'a Map<String, Value>> {
    let pointer = reference.strip_prefix('#')?;
    let mut at: &Map<String, Value> = root;
    for token in pointer.split('/').skip(1) {
        at = at
            .get(&token.replace("~1", "/").replace("~0", "~"))?
            .as_object()?;
    }
    Some(at)
}

/// Does this schema let a value be null?
fn allows_null(s: &Map<String, Value>) -> bool {
    let type_null = match s.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => !s.contains_key("properties") && !s.contains_key("items") && !s.contains_key("enum"),
    };
    let enum_null = s
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|e| e.contains(&Value::Null));
    let any_null = ["anyOf", "oneOf"].iter().any(|k| {
        s.get(*k)
            .and_then(Value::as_array)
            .is_some_and(|alts| alts.iter().filter_map(Value::as_object).any(allows_null))
    });
    type_null || enum_null || any_null
}
