//! One pass over a server's schema, writing the dialect's: `$ref`s inlined (a cycle, or
//! a reference that cannot be resolved locally, cut where it closes), `oneOf` as `anyOf`,
//! `allOf` merged, `const` as a one-value `enum`, types as the dialect writes them, and
//! every keyword the dialect lacks dropped, its constraint said in the description
//! instead. Bounded for any input: [`MAX_DEPTH`] levels, [`MAX_NODES`] schemas visited and
//! about [`MAX_TEXT_BYTES`] of text written; past a bound the schema is cut there.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use super::{
    notes::{HANDLED, SCHEMA_VALUED, clip_list, nullable, told},
    rules::{self, OPENAI_STRICT_FORMATS},
};

/// Deepest a converted schema goes; deeper subschemas are cut.
pub const MAX_DEPTH: usize = 32;
/// Most subschemas one conversion visits, inlined references counted each time.
pub const MAX_NODES: usize = 10_000;
/// About the most bytes of text (descriptions, names, values) one conversion writes.
pub const MAX_TEXT_BYTES: usize = 256 * 1024;
/// Longest a description grows by what it is told of dropped keywords.
pub const MAX_NOTE_CHARS: usize = 300;

/// Which shape to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// OpenAI strict.
    Strict,
    /// Gemini.
    Gemini,
    /// Any provider without strict mode: references inlined, arrays given `items`, the
    /// rest as the server wrote it.
    Lenient,
}

/// A converted schema, and whether it says all the server's does.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// The schema in the dialect.
    pub schema: Map<String, Value>,
    /// Nothing was cut and nothing it cannot say was there (strict mode may be used).
    pub faithful: bool,
}

/// One node as it is written: its keywords in the target's shape, and what was dropped.
#[derive(Default)]
struct Node {
    out: Map<String, Value>,
    notes: Vec<String>,
}

struct Pass<'a> {
    root: &'a Map<String, Value>,
    target: Target,
    nodes: usize,
    text: usize,
    faithful: bool,
    /// The references being inlined, outermost first: one met again is a cycle.
    expanding: Vec<String>,
}

/// Convert `schema` (a tool's `inputSchema`) for `target`.
pub fn convert(schema: &Map<String, Value>, target: Target) -> Converted {
    let mut pass = Pass {
        root: schema,
        target,
        nodes: 0,
        text: 0,
        faithful: true,
        expanding: Vec::new(),
    };
    let mut out = match pass.object_node(schema, 0) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    if target != Target::Lenient {
        out.insert("type".into(), json!("object"));
        out.remove("nullable");
        out.remove("anyOf");
        out.entry("properties").or_insert_with(|| json!({}));
        if target == Target::Strict {
            out.insert("additionalProperties".into(), json!(false));
            out.entry("required").or_insert_with(|| json!([]));
        }
    }
    Converted {
        schema: out,
        faithful: pass.faithful,
    }
}

/// A JSON pointer token, unescaped.
fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

impl<'a> Pass<'a> {
    /// The schema a local `$ref` (`#/$defs/X`, `#`) points at, in the root: borrowed, so
    /// inlining a reference copies nothing it does not write. `None` inside: the root.
    fn resolve(&self, reference: &str) -> Option<Option<&'a Value>> {
        let pointer = reference.strip_prefix('#')?;
        let mut tokens = pointer.split('/').skip(1);
        let Some(first) = tokens.next() else {
            return Some(None);
        };
        let mut at: &'a Value = self.root.get(&unescape(first))?;
        for token in tokens {
            at = match at {
                Value::Object(m) => m.get(&unescape(token))?,
                Value::Array(a) => a.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(Some(at))
    }

    /// What stands where a schema is cut: any value, as the dialect can say it.
    fn cut(&mut self, why: &str) -> Value {
        self.faithful = false;
        match self.target {
            Target::Lenient => json!({"description": why}),
            Target::Strict => {
                json!({"type": ["string", "number", "boolean", "null"], "description": why})
            }
            Target::Gemini => json!({"type": "string", "description": why}),
        }
    }

    fn node(&mut self, v: &Value, depth: usize) -> Value {
        self.nodes += 1;
        if self.nodes > MAX_NODES || self.text > MAX_TEXT_BYTES {
            return self.cut("(the schema is too large to show here)");
        }
        if depth > MAX_DEPTH {
            return self.cut("(nested too deep to show here)");
        }
        match v {
            Value::Object(m) => self.object_node(m, depth),
            Value::Bool(true) => self.any(),
            _ => self.cut("(no value fits this schema)"),
        }
    }

    /// A schema that is an object (every schema but `true` and `false`).
    fn object_node(&mut self, m: &Map<String, Value>, depth: usize) -> Value {
        if let Some(Value::String(reference)) = m.get("$ref") {
            return self.reference(m, reference, depth);
        }
        let m = self.merged(m);
        let mut notes = Vec::new();
        let out = self.schema(&m, depth, &mut notes);
        self.described(out, &m, notes)
    }

    /// A `$ref`, inlined, its siblings (a description) kept over the target's own.
    fn reference(&mut self, m: &Map<String, Value>, reference: &str, depth: usize) -> Value {
        if self.expanding.iter().any(|r| r == reference) {
            return self.cut("(a recursive structure, cut here)");
        }
        let Some(target) = self.resolve(reference) else {
            return self.cut("(its schema is elsewhere and is not shown)");
        };
        self.expanding.push(reference.to_owned());
        self.nodes += 1;
        let mut inlined = match target {
            Some(target) => self.node(target, depth),
            None if self.nodes <= MAX_NODES => self.object_node(self.root, depth),
            None => self.cut("(the schema is too large to show here)"),
        };
        self.expanding.pop();
        if let (Some(Value::String(d)), Value::Object(out)) = (m.get("description"), &mut inlined) {
            let d = crate::text::head(d, 4_000).to_owned();
            self.text += d.len();
            out.insert("description".into(), Value::String(d));
        }
        inlined
    }

    /// `allOf` folded into the node: properties and required joined, the first value of
    /// any other keyword kept.
    fn merged<'m>(&mut self, m: &'m Map<String, Value>) -> Cow<'m, Map<String, Value>> {
        let Some(Value::Array(parts)) = m.get("allOf") else {
            return Cow::Borrowed(m);
        };
        let mut out = m.clone();
        out.remove("allOf");
        self.text += out.len();
        for part in parts.iter().take(64) {
            let part = match part.get("$ref").and_then(Value::as_str) {
                Some(r) if !self.expanding.iter().any(|e| e == r) => match self.resolve(r) {
                    Some(Some(p)) => p,
                    _ => {
                        self.faithful = false;
                        continue;
                    }
                },
                Some(_) => {
                    self.faithful = false;
                    continue;
                }
                None => part,
            };
            let Value::Object(part) = part else { continue };
            for (k, v) in part {
                match (k.as_str(), out.get_mut(k), v) {
                    ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                        for (name, s) in theirs {
                            mine.entry(name.clone()).or_insert_with(|| s.clone());
                        }
                    }
                    ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                        let new: Vec<Value> = theirs
                            .iter()
                            .filter(|t| !mine.contains(t))
                            .cloned()
                            .collect();
                        mine.extend(new);
                    }
                    (_, None, v) => {
                        out.insert(k.clone(), v.clone());
                    }
                    _ => {}
                }
            }
        }
        Cow::Owned(out)
    }

    /// Any value: a lenient schema may say so; strict and Gemini must name a type.
    fn any(&mut self) -> Value {
        match self.target {
            Target::Lenient => json!({}),
            _ => self.cut("(any JSON value)"),
        }
    }

    /// The node's own keywords, in the target's shape; what is dropped goes to `notes`.
    fn schema(&mut self, m: &Map<String, Value>, depth: usize, notes: &mut Vec<String>) -> Value {
        let mut node = Node::default();
        let out = &mut node.out;
        if let Some(alternatives) = m.get("anyOf").or(m.get("oneOf")).and_then(Value::as_array) {
            let converted: Vec<Value> = alternatives
                .iter()
                .take(64)
                .map(|a| self.node(a, depth + 1))
                .collect();
            out.insert("anyOf".into(), Value::Array(converted));
        }
        let mut values = m.get("enum").and_then(Value::as_array).cloned();
        if let Some(c) = m.get("const") {
            values = Some(vec![c.clone()]);
        }
        let kinds = self.kinds(m, values.as_deref());
        if kinds.is_empty() && !out.contains_key("anyOf") {
            return self.any();
        }
        self.write_type(&mut node, &kinds);
        if let Some(values) = values {
            self.write_enum(&mut node, values, &kinds);
        }
        if kinds.contains(&"object".to_string()) {
            self.object(m, &mut node, depth);
        }
        if kinds.contains(&"array".to_string()) {
            self.array(m, &mut node, depth);
        }
        self.constraints(m, &mut node, &kinds);
        notes.append(&mut node.notes);
        Value::Object(node.out)
    }

    /// The node's types: `type`, or what its keywords imply.
    fn kinds(&self, m: &Map<String, Value>, values: Option<&[Value]>) -> Vec<String> {
        let named: Vec<String> = rules::kinds(m)
            .into_iter()
            .filter(|k| rules::TYPES.contains(k))
            .map(str::to_owned)
            .collect();
        if !named.is_empty() {
            return named;
        }
        if m.contains_key("properties") || m.contains_key("additionalProperties") {
            return vec!["object".into()];
        }
        if m.contains_key("items") || m.contains_key("prefixItems") {
            return vec!["array".into()];
        }
        let of = |v: &Value| match v {
            Value::String(_) => "string",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::Null => "null",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let mut out: Vec<String> = Vec::new();
        for v in values.unwrap_or(&[]) {
            let k = of(v).to_owned();
            if !out.contains(&k) {
                out.push(k);
            }
        }
        out
    }

    fn write_type(&mut self, node: &mut Node, kinds: &[String]) {
        let Node { out, notes } = node;
        let nullable = kinds.iter().any(|k| k == "null");
        let real: Vec<&String> = kinds.iter().filter(|k| *k != "null").collect();
        match (self.target, real.as_slice()) {
            (Target::Gemini, []) => {
                out.insert("type".into(), json!("string"));
                out.insert("nullable".into(), json!(true));
            }
            (Target::Gemini, [one]) => {
                out.insert("type".into(), json!(one));
                if nullable {
                    out.insert("nullable".into(), json!(true));
                }
            }
            (Target::Gemini, [first, ..]) => {
                out.insert("type".into(), json!(first));
                notes.push(format!(
                    "may also be {}",
                    real[1..]
                        .iter()
                        .map(|k| k.as_str())
                        .collect::<Vec<_>>()
                        .join(" or ")
                ));
                self.faithful = false;
                if nullable {
                    out.insert("nullable".into(), json!(true));
                }
            }
            (_, _) if kinds.len() == 1 => {
                out.insert("type".into(), json!(kinds[0]));
            }
            _ => {
                out.insert("type".into(), json!(kinds));
            }
        }
    }

    fn write_enum(&mut self, node: &mut Node, values: Vec<Value>, kinds: &[String]) {
        let Node { out, notes } = node;
        let values: Vec<Value> = values.into_iter().take(1_000).collect();
        self.text += values.iter().map(|v| v.to_string().len()).sum::<usize>();
        let strings = values.iter().all(|v| v.is_string() || v.is_null());
        if self.target == Target::Gemini && !strings {
            notes.push(format!("one of {}", clip_list(&values)));
            return;
        }
        if self.target == Target::Gemini {
            let values: Vec<Value> = values.into_iter().filter(|v| !v.is_null()).collect();
            if kinds.iter().any(|k| k == "string") {
                out.insert("format".into(), json!("enum"));
            }
            out.insert("enum".into(), Value::Array(values));
            return;
        }
        out.insert("enum".into(), Value::Array(values));
    }

    fn object(&mut self, m: &Map<String, Value>, node: &mut Node, depth: usize) {
        let Node { out, notes } = node;
        let mut props = Map::new();
        for (name, s) in m
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            self.text += name.len();
            props.insert(name.clone(), self.node(s, depth + 1));
        }
        let required: Vec<Value> = m
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|r| r.as_str().is_some_and(|r| props.contains_key(r)))
            .cloned()
            .collect();
        // A map (any names) where it says so, or where a nested object names no property;
        // a root with none is a tool that takes no arguments.
        let free = match m.get("additionalProperties") {
            None => !m.contains_key("properties") && depth > 0,
            Some(Value::Bool(false)) => false,
            Some(_) => true,
        } || m.contains_key("patternProperties");
        if self.target == Target::Lenient {
            if m.contains_key("properties") {
                out.insert("properties".into(), Value::Object(props));
            }
            if !required.is_empty() {
                out.insert("required".into(), Value::Array(required));
            }
            match m.get("additionalProperties") {
                Some(v @ Value::Bool(_)) => {
                    out.insert("additionalProperties".into(), v.clone());
                }
                Some(v @ Value::Object(_)) => {
                    let v = self.node(v, depth + 1);
                    out.insert("additionalProperties".into(), v);
                }
                _ => {}
            }
            if let Some(Value::Object(patterns)) = m.get("patternProperties") {
                let mut converted = Map::new();
                for (pattern, v) in patterns.iter().take(64) {
                    converted.insert(pattern.clone(), self.node(v, depth + 1));
                }
                out.insert("patternProperties".into(), Value::Object(converted));
            }
            return;
        }
        if free {
            notes.push("other properties may be given too".into());
            self.faithful = false;
        }
        if self.target == Target::Strict {
            for (name, schema) in props.iter_mut() {
                if !required.iter().any(|r| r == name) {
                    nullable(schema);
                }
            }
            let all: Vec<Value> = props.keys().map(|k| json!(k)).collect();
            out.insert("required".into(), Value::Array(all));
            out.insert("additionalProperties".into(), json!(false));
        } else if !required.is_empty() {
            out.insert("required".into(), Value::Array(required));
        }
        out.insert("properties".into(), Value::Object(props));
    }

    fn array(&mut self, m: &Map<String, Value>, node: &mut Node, depth: usize) {
        let Node { out, notes } = node;
        let items = match (m.get("items"), m.get("prefixItems")) {
            (Some(Value::Array(tuple)), _) | (None, Some(Value::Array(tuple))) => {
                notes.push(format!("{} items in a fixed order", tuple.len()));
                self.faithful = false;
                tuple.first()
            }
            (Some(items), _) => Some(items),
            (None, _) => None,
        };
        let items = match items {
            Some(items) => self.node(items, depth + 1),
            None => self.any(),
        };
        out.insert("items".into(), items);
    }

    /// The remaining keywords: kept where the target has them, told otherwise.
    fn constraints(&mut self, m: &Map<String, Value>, node: &mut Node, kinds: &[String]) {
        let Node { out, notes } = node;
        for (key, v) in m {
            if out.contains_key(key) || HANDLED.contains(&key.as_str()) {
                continue;
            }
            if self.target == Target::Lenient {
                if SCHEMA_VALUED.contains(&key.as_str()) {
                    notes.extend(told(key, v));
                } else {
                    self.text += v.to_string().len();
                    out.insert(key.clone(), v.clone());
                }
                continue;
            }
            let kept = match self.target {
                Target::Strict => {
                    rules::OPENAI_STRICT_KEYWORDS.contains(&key.as_str())
                        && (key != "format"
                            || v.as_str()
                                .is_some_and(|f| OPENAI_STRICT_FORMATS.contains(&f)))
                }
                _ => {
                    rules::GEMINI_KEYWORDS.contains(&key.as_str())
                        && (key != "format"
                            || (kinds.len() == 1
                                && v.as_str()
                                    .is_some_and(|f| rules::gemini_format_ok(&kinds[0], f))))
                }
            };
            if kept {
                out.insert(key.clone(), v.clone());
            } else if let Some(note) = told(key, v) {
                notes.push(note);
            }
        }
    }

    /// The description, with what was dropped said after it.
    fn described(&mut self, out: Value, m: &Map<String, Value>, mut notes: Vec<String>) -> Value {
        let Value::Object(mut out) = out else {
            return out;
        };
        let mut text = m
            .get("description")
            .and_then(Value::as_str)
            .map(|d| crate::text::head(d, 4_000).to_owned());
        if text.is_none()
            && let Some(title) = m.get("title").and_then(Value::as_str)
            && self.target != Target::Lenient
        {
            text = Some(crate::text::head(title, 200).to_owned());
        }
        notes.dedup();
        if !notes.is_empty() {
            let said = crate::text::head(&notes.join("; "), MAX_NOTE_CHARS).to_owned();
            text = Some(match text {
                Some(d) if !d.is_empty() => format!("{d} ({said})"),
                _ => format!("({said})"),
            });
        }
        if let Some(text) = text {
            self.text += text.len();
            out.insert("description".into(), json!(text));
        }
        Value::Object(out)
    }
}
