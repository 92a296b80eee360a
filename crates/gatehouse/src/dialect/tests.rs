//! Each dialect on the foreign servers' real schemas, on the hard cases one by one, and on
//! any input at all: the conversion ends, stays bounded, and writes what the API accepts.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::*;
use crate::config::SchemaDialect::{Gemini, JsonSchema, OpenAiStrict};

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// What would reach the model for `schema` in `dialect`, and whether it is strict.
fn sent(schema: &Map<String, Value>, dialect: SchemaDialect) -> (Value, bool) {
    let (p, strict) = parameters(&Arc::new(schema.clone()), dialect);
    (Value::Object((*p).clone()), strict)
}

/// The schema breaks nothing the dialect's API refuses.
fn accepted(schema: &Map<String, Value>, dialect: SchemaDialect) -> Vec<String> {
    let (out, strict) = sent(schema, dialect);
    match (dialect, strict) {
        (OpenAiStrict, true) => violations(&out, OpenAiStrict),
        (OpenAiStrict, false) => lenient_violations(&out),
        (d, _) => violations(&out, d),
    }
}

/// Every tool of every real server pinned in bench/catalog, and the reference servers'.
fn real_schemas() -> Vec<(String, Map<String, Value>)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    for dir in ["bench/catalog/servers", "crates/servers/tools"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let doc: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let tools = match doc.get("tools") {
                Some(Value::Array(tools)) => tools.clone(),
                _ => vec![doc],
            };
            for t in tools {
                let name = format!("{}: {}", path.display(), t["name"]);
                out.push((name, t["inputSchema"].as_object().unwrap().clone()));
            }
        }
    }
    out
}

#[test]
fn every_real_servers_schema_is_accepted_in_every_dialect() {
    let schemas = real_schemas();
    assert!(schemas.len() >= 235, "{}", schemas.len());
    let mut strict = 0;
    for (name, schema) in &schemas {
        for dialect in [OpenAiStrict, Gemini] {
            let problems = accepted(schema, dialect);
            assert!(problems.is_empty(), "{name} in {dialect:?}: {problems:?}");
        }
        strict += usize::from(sent(schema, OpenAiStrict).1);
        assert_eq!(
            sent(schema, JsonSchema).0,
            Value::Object(schema.clone()),
            "{name}"
        );
    }
    // Most real schemas say all they say in strict mode too.
    assert!(
        strict * 10 > schemas.len() * 7,
        "{strict} of {}",
        schemas.len()
    );
}

#[test]
fn refs_are_inlined_and_a_cycle_is_cut_where_it_closes() {
    let schema = obj(json!({"type": "object", "$defs": {
            "Node": {"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}, "required": ["name"]},
            "Tag": {"type": "string", "enum": ["a", "b"]}},
        "properties": {"root": {"$ref": "#/$defs/Node", "description": "The tree."}, "tag": {"$ref": "#/$defs/Tag"}},
        "required": ["root"]}));
    for dialect in [OpenAiStrict, Gemini] {
        let out = convert::convert(
            &schema,
            if dialect == Gemini {
                Target::Gemini
            } else {
                Target::Strict
            },
        );
        let text = Value::Object(out.schema.clone()).to_string();
        assert!(!text.contains("$ref") && !text.contains("$defs"), "{text}");
        assert!(!out.faithful, "the cycle was cut");
        assert!(text.contains("recursive structure, cut here"), "{text}");
        assert_eq!(out.schema["properties"]["root"]["description"], "The tree.");
        assert!(
            accepted(&schema, dialect).is_empty(),
            "{:?}",
            accepted(&schema, dialect)
        );
    }
    // Strict mode cannot say it, so the tool goes without strict, still inlined.
    let (out, strict) = sent(&schema, OpenAiStrict);
    assert!(!strict);
    assert!(lenient_violations(&out).is_empty(), "{out}");
}

#[test]
fn strict_schemas_require_every_property_and_let_optional_ones_be_null() {
    let schema = obj(json!({"type": "object", "properties": {
        "query": {"type": "string", "minLength": 3, "maxLength": 200, "description": "Words."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 5, "default": 3},
        "kind": {"oneOf": [{"const": "a"}, {"const": "b"}]},
        "tags": {"type": "array"},
        "at": {"type": "string", "format": "uri"}},
        "required": ["query"]}));
    let (out, strict) = sent(&schema, OpenAiStrict);
    assert!(!strict, "tags' items may be anything: no strict");
    let strict_only = obj(json!({"type": "object", "properties": {
        "query": {"type": "string", "minLength": 3, "maxLength": 200, "description": "Words."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 5, "default": 3},
        "kind": {"oneOf": [{"const": "a"}, {"const": "b"}]},
        "at": {"type": "string", "format": "uri"}},
        "required": ["query"]}));
    let (out2, strict) = sent(&strict_only, OpenAiStrict);
    assert!(strict, "{out2}");
    assert_eq!(out2["required"], json!(["query", "limit", "kind", "at"]));
    assert_eq!(out2["additionalProperties"], json!(false));
    assert_eq!(out2["properties"]["query"]["type"], json!("string"));
    assert_eq!(
        out2["properties"]["limit"]["type"],
        json!(["integer", "null"])
    );
    assert_eq!(out2["properties"]["limit"]["minimum"], json!(1));
    let q = out2["properties"]["query"]["description"].as_str().unwrap();
    assert!(
        q.contains("at least 3 characters") && q.contains("at most 200 characters"),
        "{q}"
    );
    assert!(
        out2["properties"]["limit"]["description"]
            .as_str()
            .unwrap()
            .contains("default 3")
    );
    assert!(
        out2["properties"]["kind"]["anyOf"].is_array(),
        "oneOf is anyOf"
    );
    assert_eq!(out2["properties"]["kind"]["anyOf"][0]["enum"], json!(["a"]));
    assert!(
        out2["properties"]["at"].get("format").is_none(),
        "uri is not a strict format"
    );
    assert!(
        violations(&out2, OpenAiStrict).is_empty(),
        "{:?}",
        violations(&out2, OpenAiStrict)
    );
    // The lenient form gives the array its items.
    assert_eq!(out["properties"]["tags"]["items"], json!({}));
}

#[test]
fn gemini_schemas_name_one_type_and_only_the_keywords_gemini_has() {
    let schema = obj(
        json!({"type": "object", "additionalProperties": false, "properties": {
        "n": {"type": ["integer", "null"], "exclusiveMinimum": 0},
        "level": {"enum": [1, 2, 3]},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "when": {"type": "string", "format": "date-time"},
        "site": {"type": "string", "format": "uri"},
        "both": {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                           {"properties": {"b": {"type": "number"}}}]}}}),
    );
    let (out, _) = sent(&schema, Gemini);
    assert!(
        violations(&out, Gemini).is_empty(),
        "{:?}",
        violations(&out, Gemini)
    );
    let p = &out["properties"];
    assert_eq!(p["n"]["type"], "integer");
    assert_eq!(p["n"]["nullable"], true);
    assert!(
        p["n"]["description"]
            .as_str()
            .unwrap()
            .contains("more than 0")
    );
    assert_eq!(p["level"]["type"], "integer");
    assert!(p["level"].get("enum").is_none());
    assert!(
        p["level"]["description"]
            .as_str()
            .unwrap()
            .contains("one of 1, 2, 3")
    );
    assert_eq!(p["mode"]["enum"], json!(["fast", "slow"]));
    assert_eq!(p["when"]["format"], "date-time");
    assert!(p["site"].get("format").is_none());
    assert_eq!(p["both"]["required"], json!(["a"]));
    assert_eq!(p["both"]["properties"]["b"]["type"], "number");
    assert!(out.get("additionalProperties").is_none());
}

#[test]
fn a_strict_null_for_an_optional_property_is_taken_out_again() {
    let schema = obj(
        json!({"type": "object", "$defs": {"Opts": {"type": "object", "properties": {"depth": {"type": "integer"}}}},
        "properties": {
        "q": {"type": "string"}, "limit": {"type": "integer"}, "note": {"type": ["string", "null"]},
        "opts": {"$ref": "#/$defs/Opts"}, "rows": {"type": "array", "items": {"$ref": "#/$defs/Opts"}}},
        "required": ["q"]}),
    );
    let mut args = json!({"q": null, "limit": null, "note": null, "opts": {"depth": null}, "rows": [{"depth": null}, {"depth": 2}], "extra": null});
    restore_arguments(&mut args, &schema);
    assert_eq!(
        args,
        json!({"q": null, "note": null, "opts": {}, "rows": [{}, {"depth": 2}], "extra": null}),
        "only nulls for optional properties that cannot be null go"
    );
}

/// A schema with a chain of definitions, each naming the next twice: inlined naively it
/// doubles at every step.
fn doubling(steps: usize) -> Map<String, Value> {
    let mut defs = Map::new();
    for i in 0..steps {
        let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
        defs.insert(
            format!("d{i}"),
            json!({"type": "object", "properties": {"a": next, "b": next}}),
        );
    }
    defs.insert(
        format!("d{steps}"),
        json!({"type": "string", "description": "x".repeat(100)}),
    );
    obj(json!({"type": "object", "$defs": defs, "properties": {"top": {"$ref": "#/$defs/d0"}}}))
}

#[test]
fn hostile_schemas_are_cut_and_the_conversion_stays_bounded() {
    let start = std::time::Instant::now();
    for target in [Target::Strict, Target::Gemini, Target::Lenient] {
        let out = convert::convert(&doubling(40), target);
        assert!(!out.faithful);
        let bytes = Value::Object(out.schema).to_string().len();
        assert!(
            bytes < 4 * convert::MAX_TEXT_BYTES,
            "{target:?}: {bytes} bytes"
        );
    }
    // Nesting far deeper than any parser lets through, built by hand (and never cloned or
    // dropped here, which would recurse as deep).
    let mut deep = json!({"type": "string"});
    for _ in 0..100_000 {
        let mut properties = Map::new();
        properties.insert("x".into(), deep);
        let mut level = Map::new();
        level.insert("type".into(), json!("object"));
        level.insert("properties".into(), Value::Object(properties));
        deep = Value::Object(level);
    }
    let Value::Object(deep) = deep else {
        unreachable!()
    };
    let deep = Arc::new(deep);
    for dialect in [OpenAiStrict, Gemini] {
        let (p, strict) = parameters(&deep, dialect);
        let problems = match strict {
            true => violations(&Value::Object((*p).clone()), dialect),
            false if dialect == OpenAiStrict => lenient_violations(&Value::Object((*p).clone())),
            false => violations(&Value::Object((*p).clone()), dialect),
        };
        assert!(problems.is_empty(), "{dialect:?}: {problems:?}");
    }
    let self_ref = obj(
        json!({"type": "object", "properties": {"me": {"$ref": "#"}, "far": {"$ref": "https://example.com/s"}, "bad": {"$ref": "#/nope/1"}},
               "additionalProperties": [{"$ref": "#"}], "patternProperties": {"^x": {"$ref": "#"}}}),
    );
    for dialect in [OpenAiStrict, Gemini] {
        assert!(accepted(&self_ref, dialect).is_empty(), "{dialect:?}");
    }
    assert!(
        start.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    // Dropping the hand-built nesting must not overflow the stack either.
    std::mem::forget(deep);
}

/// Any JSON value, schema-like or not, with references that may point anywhere, at
/// themselves included.
fn any_schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!({})),
        Just(json!(true)),
        Just(json!(false)),
        Just(json!(null)),
        Just(json!({"type": "string", "pattern": "^a", "minLength": 2})),
        Just(json!({"type": ["integer", "null"], "minimum": 0, "multipleOf": 2})),
        Just(json!({"$ref": "#"})),
        Just(json!({"$ref": "#/$defs/a"})),
        Just(json!({"$ref": "#/properties/p0"})),
        Just(json!({"const": 3})),
        Just(json!({"enum": [1, "x", null, [1], {"a": 1}]})),
        Just(json!({"type": "array"})),
        Just(json!({"type": "bogus"})),
        ".{0,20}".prop_map(|s| json!({"description": s, "format": s})),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::btree_map("[a-z$]{1,6}", inner.clone(), 0..5)
                .prop_map(|m| json!({"type": "object", "properties": m, "required": ["p0", "x"]})),
            inner
                .clone()
                .prop_map(|i| json!({"type": "array", "items": i})),
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({"anyOf": v})),
            prop::collection::vec(inner.clone(), 0..4)
                .prop_map(|v| json!({"oneOf": v, "allOf": v})),
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({"items": v, "not": {}})),
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| json!({"$defs": {"a": a}, "additionalProperties": b})),
            prop::collection::vec(inner, 0..3).prop_map(Value::Array),
        ]
    })
}

proptest! {
    /// Whatever a server sends as a schema, every dialect's conversion ends, stays within
    /// its bounds, and writes a schema the dialect's API accepts.
    #[test]
    fn any_schema_converts_to_what_each_dialect_accepts(body in any_schema(), defs in any_schema()) {
        let mut schema = match body {
            Value::Object(m) => m,
            other => obj(json!({"properties": {"p0": other}})),
        };
        schema.insert("type".into(), json!("object"));
        schema.insert("$defs".into(), json!({"a": defs}));
        for dialect in [OpenAiStrict, Gemini] {
            let problems = accepted(&schema, dialect);
            prop_assert!(problems.is_empty(), "{:?}: {:?}\n{}", dialect, problems, Value::Object(schema.clone()));
        }
        let lenient = convert::convert(&schema, Target::Lenient);
        prop_assert!(lenient_violations(&Value::Object(lenient.schema)).is_empty());
    }
}
