//! What each provider's API accepts in a tool's parameters, as its documentation says, and
//! a check of a schema against it ([`violations`]), which the tests run on every output.
//!
//! - OpenAI strict function calling ("Structured Outputs", supported schemas): types
//!   string, number, integer, boolean, object, array, null, and `anyOf`, `enum`; string
//!   `pattern` and `format` (date-time, time, date, duration, email, hostname, ipv4, ipv6,
//!   uuid); number `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
//!   `multipleOf`; array `items`, `minItems`, `maxItems`; every object with
//!   `additionalProperties: false` and every property required (an optional one may be
//!   null); at most 10 levels of nesting and 5,000 properties; the root an object.
//! - Gemini function declarations (the `Schema` object, an OpenAPI 3.0 subset): `type` (one
//!   name), `format`, `description`, `nullable`, `enum` (strings), `properties`, `required`,
//!   `items`, `minItems`, `maxItems`, `minProperties`, `maxProperties`, `minLength`,
//!   `maxLength`, `pattern`, `minimum`, `maximum`, `anyOf`; no `$ref`, `$defs`,
//!   `additionalProperties`, `const`, `oneOf`, `allOf`, `default` or `examples`.
//! - Any provider, even without strict mode: no `$ref` left to resolve, and arrays with
//!   `items` (OpenAI refuses an array schema without them).

use serde_json::{Map, Value};

use crate::config::SchemaDialect;

/// Keywords of a strict OpenAI schema.
pub const OPENAI_STRICT_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "enum",
    "anyOf",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];
/// String formats strict OpenAI schemas take.
pub const OPENAI_STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];
/// Deepest nesting of objects a strict OpenAI schema may have.
pub const OPENAI_STRICT_MAX_DEPTH: usize = 10;
/// Most properties, all objects together, of a strict OpenAI schema.
pub const OPENAI_STRICT_MAX_PROPERTIES: usize = 5_000;
/// Keywords of a Gemini schema.
pub const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "properties",
    "required",
    "items",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "anyOf",
];
/// Formats Gemini takes, by type.
pub fn gemini_format_ok(kind: &str, format: &str) -> bool {
    match kind {
        "string" => ["enum", "date-time"].contains(&format),
        "integer" => ["int32", "int64"].contains(&format),
        "number" => ["float", "double"].contains(&format),
        _ => false,
    }
}
/// The JSON types.
pub const TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// Everything about `schema` that the dialect's API would refuse, in words (empty: none).
/// Plain JSON Schema accepts anything that compiles.
pub fn violations(schema: &Value, dialect: SchemaDialect) -> Vec<String> {
    let mut out = Vec::new();
    if dialect != SchemaDialect::JsonSchema {
        walk(schema, dialect, "", 0, &mut out);
    }
    if dialect == SchemaDialect::OpenAiStrict {
        let props = count_properties(schema);
        if props > OPENAI_STRICT_MAX_PROPERTIES {
            out.push(format!(
                "{props} properties, more than {OPENAI_STRICT_MAX_PROPERTIES}"
            ));
        }
    }
    out
}

fn count_properties(v: &Value) -> usize {
    match v {
        Value::Object(m) => {
            let own = m
                .get("properties")
                .and_then(Value::as_object)
                .map_or(0, Map::len);
            own + m.values().map(count_properties).sum::<usize>()
        }
        Value::Array(a) => a.iter().map(count_properties).sum(),
        _ => 0,
    }
}

/// Check one schema node and the schemas under it; `depth` counts objects.
fn walk(v: &Value, dialect: SchemaDialect, at: &str, depth: usize, out: &mut Vec<String>) {
    let Some(m) = v.as_object() else {
        out.push(format!("{at}: a schema must be an object, not {v}"));
        return;
    };
    let allowed = match dialect {
        SchemaDialect::OpenAiStrict => OPENAI_STRICT_KEYWORDS,
        SchemaDialect::Gemini => GEMINI_KEYWORDS,
        SchemaDialect::JsonSchema => return,
    };
    for key in m.keys().filter(|k| !allowed.contains(&k.as_str())) {
        out.push(format!("{at}: keyword {key} is not accepted"));
    }
    let kinds = kinds(m);
    if kinds.is_empty() && !m.contains_key("anyOf") {
        out.push(format!("{at}: no type"));
    }
    if let Some(t) = m.get("type") {
        check_type(t, dialect, at, out);
    }
    if let (SchemaDialect::Gemini, Some(format), [kind]) = (
        dialect,
        m.get("format").and_then(Value::as_str),
        kinds.as_slice(),
    ) && !gemini_format_ok(kind, format)
    {
        out.push(format!("{at}: format {format} is not accepted for {kind}"));
    }
    if let (SchemaDialect::OpenAiStrict, Some(format)) =
        (dialect, m.get("format").and_then(Value::as_str))
        && !OPENAI_STRICT_FORMATS.contains(&format)
    {
        out.push(format!("{at}: format {format} is not accepted"));
    }
    if let Some(e) = m.get("enum") {
        let strings = e
            .as_array()
            .is_some_and(|a| a.iter().all(|v| v.is_string() || v.is_null()));
        if dialect == SchemaDialect::Gemini && !strings {
            out.push(format!("{at}: enum values must be strings"));
        }
    }
    let depth = depth + usize::from(kinds.contains(&"object"));
    if dialect == SchemaDialect::OpenAiStrict && depth > OPENAI_STRICT_MAX_DEPTH {
        out.push(format!(
            "{at}: nested deeper than {OPENAI_STRICT_MAX_DEPTH} objects"
        ));
    }
    if kinds.contains(&"object") {
        check_object(m, dialect, at, out);
    }
    if kinds.contains(&"array") && !m.contains_key("items") {
        out.push(format!("{at}: an array without items"));
    }
    for (key, sub) in children(m) {
        walk(sub, dialect, &format!("{at}/{key}"), depth, out);
    }
}

fn check_type(t: &Value, dialect: SchemaDialect, at: &str, out: &mut Vec<String>) {
    match t {
        Value::String(s) if TYPES.contains(&s.as_str()) => {
            if dialect == SchemaDialect::Gemini && s == "null" {
                out.push(format!("{at}: type null (Gemini says nullable)"));
            }
        }
        Value::Array(a) if dialect == SchemaDialect::OpenAiStrict => {
            if a.is_empty()
                || !a
                    .iter()
                    .all(|x| x.as_str().is_some_and(|s| TYPES.contains(&s)))
            {
                out.push(format!("{at}: type {t} is not a list of types"));
            }
        }
        other => out.push(format!("{at}: type {other} is not one type")),
    }
}

fn check_object(m: &Map<String, Value>, dialect: SchemaDialect, at: &str, out: &mut Vec<String>) {
    let props = m.get("properties").and_then(Value::as_object);
    if dialect != SchemaDialect::OpenAiStrict {
        return;
    }
    if m.get("additionalProperties") != Some(&Value::Bool(false)) {
        out.push(format!(
            "{at}: an object without additionalProperties: false"
        ));
    }
    let required: Vec<&str> = m
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for name in props.into_iter().flat_map(|p| p.keys()) {
        if !required.contains(&name.as_str()) {
            out.push(format!("{at}: property {name} is not required"));
        }
    }
}

/// The types a node says it has (`type` as one name or a list).
pub fn kinds(m: &Map<String, Value>) -> Vec<&str> {
    match m.get("type") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The subschemas of a node, with where they are.
fn children(m: &Map<String, Value>) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    if let Some(Value::Object(p)) = m.get("properties") {
        out.extend(p.iter().map(|(k, v)| (format!("properties/{k}"), v)));
    }
    if let Some(items) = m.get("items") {
        out.push(("items".into(), items));
    }
    if let Some(Value::Array(any)) = m.get("anyOf") {
        out.extend(
            any.iter()
                .enumerate()
                .map(|(i, v)| (format!("anyOf/{i}"), v)),
        );
    }
    out
}

/// What any provider refuses even without strict mode: a `$ref` left to resolve, and an
/// array without `items`. The schema sent to an OpenAI model when strict mode cannot say
/// what the server's schema says is held to this.
pub fn lenient_violations(schema: &Value) -> Vec<String> {
    fn walk(v: &Value, at: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if m.contains_key("$ref") {
                    out.push(format!("{at}: a $ref"));
                }
                if kinds(m).contains(&"array") && !m.contains_key("items") {
                    out.push(format!("{at}: an array without items"));
                }
                for (k, sub) in m {
                    match (k.as_str(), sub) {
                        ("enum" | "const" | "default" | "examples", _) => {}
                        ("properties" | "patternProperties", Value::Object(named)) => {
                            for (name, s) in named {
                                walk(s, &format!("{at}/{k}/{name}"), out);
                            }
                        }
                        _ => walk(sub, &format!("{at}/{k}"), out),
                    }
                }
            }
            Value::Array(a) => {
                for (i, sub) in a.iter().enumerate() {
                    walk(sub, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(schema, "", &mut out);
    out
}
