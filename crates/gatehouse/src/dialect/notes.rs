//! What the conversion says in words instead of writing: a dropped keyword's constraint
//! (`at most 200 characters`), and how a strict schema lets an optional property be null.

use serde_json::{Value, json};

/// Keywords the conversion handles itself, or that are never passed on.
pub(super) const HANDLED: &[&str] = &[
    "type",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "allOf",
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "items",
    "prefixItems",
    "description",
    "title",
    "$ref",
    "$defs",
    "definitions",
    "$schema",
    "$id",
    "$comment",
];

/// Keywords whose values are schemas that are not passed on (a lenient schema would have
/// to resolve their references too): said in the description instead.
pub(super) const SCHEMA_VALUED: &[&str] = &[
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "dependencies",
];

/// Let a strict schema's optional property be null, as strict mode wants it.
pub(super) fn nullable(schema: &mut Value) {
    let Value::Object(m) = schema else { return };
    match m.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = t.clone();
            m.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
            types.push(json!("null"))
        }
        Some(_) => {}
        None => {
            if let Some(Value::Array(any)) = m.get_mut("anyOf")
                && !any.iter().any(|a| a.get("type") == Some(&json!("null")))
            {
                any.push(json!({"type": "null"}));
            }
        }
    }
    if let Some(Value::Array(values)) = m.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

/// A dropped keyword in words, if it constrains the value.
pub(super) fn told(key: &str, v: &Value) -> Option<String> {
    let n = |v: &Value| v.to_string();
    Some(match key {
        "minLength" => format!("at least {} characters", n(v)),
        "maxLength" => format!("at most {} characters", n(v)),
        "pattern" => format!(
            "matching {}",
            crate::text::head(v.as_str().unwrap_or(""), 120)
        ),
        "format" => format!("format {}", crate::text::head(v.as_str().unwrap_or(""), 40)),
        "minimum" => format!("at least {}", n(v)),
        "maximum" => format!("at most {}", n(v)),
        "exclusiveMinimum" => format!("more than {}", n(v)),
        "exclusiveMaximum" => format!("less than {}", n(v)),
        "multipleOf" => format!("a multiple of {}", n(v)),
        "minItems" => format!("at least {} items", n(v)),
        "maxItems" => format!("at most {} items", n(v)),
        "uniqueItems" if v == &Value::Bool(true) => "no item twice".into(),
        "minProperties" => format!("at least {} properties", n(v)),
        "maxProperties" => format!("at most {} properties", n(v)),
        "default" => format!("default {}", crate::text::head(&n(v), 80)),
        "examples" => format!("for example {}", crate::text::head(&n(v), 80)),
        "not"
        | "if"
        | "then"
        | "else"
        | "dependentRequired"
        | "dependentSchemas"
        | "contains"
        | "propertyNames"
        | "unevaluatedProperties"
        | "unevaluatedItems"
        | "additionalItems"
        | "dependencies" => "further conditions apply".into(),
        _ => return None,
    })
}

/// A few values, for a description.
pub(super) fn clip_list(values: &[Value]) -> String {
    let shown: Vec<String> = values.iter().take(20).map(Value::to_string).collect();
    let more = if values.len() > 20 { ", …" } else { "" };
    format!("{}{more}", shown.join(", "))
}
