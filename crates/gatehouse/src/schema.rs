//! Checking JSON against a tool's schemas: arguments before anything is sent, and
//! structured results when they come back. Problems are said in plain words, so a model
//! (or a person) can fix the call: `missing required property "priority"`,
//! `"rows" must be at least 1`.
//!
//! Work is bounded: schemas over [`MAX_SCHEMA_BYTES`] are refused, network `$ref`s cannot
//! be fetched (the validator is built without any resolver), and at most
//! [`MAX_PROBLEMS`] problems are listed.
//!
//! A catalog's schemas are compiled once each, when first needed ([`Lazy`]): a host with
//! 1,000 tools uses a few per turn, and their compiled forms are most of its memory. That a
//! schema compiles is still known at discovery: it is compiled then, and dropped.

use std::sync::{Arc, OnceLock};

use jsonschema::{Validator, error::ValidationErrorKind};
use serde_json::{Map, Value};

/// Largest schema the host compiles, as JSON text.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// Most problems listed for one value.
pub const MAX_PROBLEMS: usize = 10;

/// A compiled schema, shared by every check against it.
pub type Compiled = Arc<Validator>;

/// Which of a tool's schemas a [`Lazy`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `inputSchema` ([`compile_input`]).
    Input,
    /// `outputSchema` ([`compile_output`]).
    Output,
}

/// A schema known to compile, compiled on first use and then kept. Clones share the
/// compiled form. Derefs to the validator, so it is checked like a [`Compiled`].
#[derive(Clone)]
pub struct Lazy {
    schema: Arc<Map<String, Value>>,
    kind: Kind,
    compiled: Arc<OnceLock<Compiled>>,
}

impl std::fmt::Debug for Lazy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lazy")
            .field("kind", &self.kind)
            .field("compiled", &self.is_compiled())
            .finish()
    }
}

impl Lazy {
    /// Check that `schema` compiles (compiling it, then dropping the result), or say why
    /// not. The schema is shared, not copied.
    pub fn check(schema: &Arc<Map<String, Value>>, kind: Kind) -> Result<Lazy, String> {
        Self::compile(schema, kind)?;
        Ok(Lazy {
            schema: schema.clone(),
            kind,
            compiled: Arc::new(OnceLock::new()),
        })
    }

    fn compile(schema: &Map<String, Value>, kind: Kind) -> Result<Compiled, String> {
        match kind {
            Kind::Input => compile_input(schema),
            Kind::Output => compile_output(schema),
        }
    }

    /// Has it been compiled yet?
    pub fn is_compiled(&self) -> bool {
        self.compiled.get().is_some()
    }

    /// The compiled schema, compiled now if it was not yet. It compiled when it was
    /// checked, so it compiles again; were it ever not to, the schema that refuses every
    /// value stands in, so nothing unchecked gets through.
    pub fn validator(&self) -> &Validator {
        self.compiled
            .get_or_init(|| Self::compile(&self.schema, self.kind).unwrap_or_else(|_| refuse_all()))
    }
}

impl std::ops::Deref for Lazy {
    type Target = Validator;

    fn deref(&self) -> &Validator {
        self.validator()
    }
}

/// Checks schemas for a catalog, compiling each distinct one once: a catalog often holds
/// the same schema many times (one server configured twice, tools that share their
/// parameters), and a schema already shown to compile need not be compiled again. The
/// map lives as long as one catalog's build.
///
/// A checker made [`Checker::keeping`] its validators hands them to the tools, so a
/// tool's first call does not compile its schemas a second time (a small catalog: the
/// validators cost some tens of kilobytes). Otherwise they are dropped once checked and
/// compiled on first use: a thousand tools' kept validators take 10 MB (row 6 of
/// `docs/benchmarks.md`).
#[derive(Debug, Default)]
pub struct Checker {
    compiled: std::collections::HashMap<(bool, String), Option<Compiled>>,
    keep: bool,
}

impl Checker {
    /// A checker that keeps the validators it compiles when `keep`.
    pub fn keeping(keep: bool) -> Checker {
        Checker {
            keep,
            ..Checker::default()
        }
    }

    /// [`Lazy::check`], skipping the compile of a schema this checker saw compile.
    pub fn check(&mut self, schema: &Arc<Map<String, Value>>, kind: Kind) -> Result<Lazy, String> {
        let key = (
            kind == Kind::Input,
            serde_json::to_string(schema.as_ref()).unwrap_or_default(),
        );
        let kept = match self.compiled.get(&key) {
            Some(kept) => kept.clone(),
            None => {
                let compiled = Lazy::compile(schema, kind)?;
                let kept = self.keep.then_some(compiled);
                self.compiled.insert(key, kept.clone());
                kept
            }
        };
        let cell = OnceLock::new();
        if let Some(compiled) = kept {
            let _ = cell.set(compiled);
        }
        Ok(Lazy {
            schema: schema.clone(),
            kind,
            compiled: Arc::new(cell),
        })
    }
}

/// The schema `false`, which no value fits.
fn refuse_all() -> Compiled {
    static FALSE: OnceLock<Compiled> = OnceLock::new();
    FALSE
        .get_or_init(|| {
            Arc::new(jsonschema::validator_for(&Value::Bool(false)).expect("false is a schema"))
        })
        .clone()
}

/// Build the meta-schema's validator now, on a thread of its own. Every schema is checked
/// against the meta-schema when it compiles, and the first check builds that validator:
/// 3.5 million instructions, about half of a cold `ask`'s host work, which the first tool
/// list would otherwise wait for while the servers start and the other core sits idle.
/// Once per process: a process that starts several hosts starts one such thread.
pub fn prepare() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        // Should the thread not start, the first check builds the validator as before.
        let _ = std::thread::Builder::new()
            .name("schema-meta".into())
            .spawn(|| jsonschema::meta::is_valid(&serde_json::json!({"type": "object"})));
    });
}

/// Compile a tool's `inputSchema`. Its root must be an object schema (the spec says so,
/// and model APIs take nothing else).
pub fn compile_input(schema: &Map<String, Value>) -> Result<Compiled, String> {
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(format!(
                "its input schema's root type is {other}, not \"object\""
            ));
        }
        None => return Err("its input schema does not say its root is an object".into()),
    }
    compile(schema).map_err(|e| format!("its input schema does not compile: {e}"))
}

/// Compile a tool's `outputSchema` (any JSON Schema).
pub fn compile_output(schema: &Map<String, Value>) -> Result<Compiled, String> {
    compile(schema).map_err(|e| format!("its output schema does not compile: {e}"))
}

/// Compile the schema of one field of a person's form. Formats (email, uri, date) are
/// checked here, where a person can fix the answer; for tools they stay annotations.
pub fn compile_form_field(schema: &Map<String, Value>) -> Result<Compiled, String> {
    let value = Value::Object(schema.clone());
    jsonschema::options()
        .should_validate_formats(true)
        .build(&value)
        .map(Arc::new)
        .map_err(|e| e.to_string())
}

fn compile(schema: &Map<String, Value>) -> Result<Compiled, String> {
    let value = Value::Object(schema.clone());
    let size = value.to_string().len();
    if size > MAX_SCHEMA_BYTES {
        return Err(format!(
            "it is {size} bytes, more than the {MAX_SCHEMA_BYTES} the host accepts"
        ));
    }
    jsonschema::validator_for(&value)
        .map(Arc::new)
        .map_err(|e| e.to_string())
}

/// Where in the value a problem is, as a person would write it: `"rows"`, `"items[0].sku"`.
fn place(pointer: &str) -> Option<String> {
    if pointer.is_empty() {
        return None;
    }
    let mut out = String::new();
    for part in pointer.trim_start_matches('/').split('/') {
        let part = part.replace("~1", "/").replace("~0", "~");
        if part.chars().all(|c| c.is_ascii_digit()) && !out.is_empty() {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&part);
        }
    }
    Some(format!("\"{out}\""))
}

fn list(values: &Value) -> String {
    match values {
        Value::Array(items) => items
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

/// A size or range bound in words ("be at least 3 characters long"); `None` for any other
/// kind of problem.
fn bound(kind: &ValidationErrorKind) -> Option<String> {
    use ValidationErrorKind as K;
    let (relation, limit, unit): (&str, &dyn std::fmt::Display, &str) = match kind {
        K::Minimum { limit } => ("be at least", limit, ""),
        K::Maximum { limit } => ("be at most", limit, ""),
        K::ExclusiveMinimum { limit } => ("be greater than", limit, ""),
        K::ExclusiveMaximum { limit } => ("be less than", limit, ""),
        K::MinLength { limit } => ("be at least", limit, " characters long"),
        K::MaxLength { limit } => ("be at most", limit, " characters long"),
        K::MinItems { limit } => ("have at least", limit, " items"),
        K::MaxItems { limit } => ("have at most", limit, " items"),
        _ => return None,
    };
    Some(format!("{relation} {limit}{unit}"))
}

/// Every problem of `instance` under `schema`, in plain words (at most [`MAX_PROBLEMS`]).
pub fn problems(schema: &Validator, instance: &Value) -> Vec<String> {
    // Nearly every instance is valid: `is_valid` stops early and builds no errors, where
    // `iter_errors` makes each error's paths and messages as it goes.
    if schema.is_valid(instance) {
        return Vec::new();
    }
    schema
        .iter_errors(instance)
        .take(MAX_PROBLEMS)
        .map(|error| in_words(&error))
        .collect()
}

/// One problem in plain words, naming where it is.
fn in_words(error: &jsonschema::ValidationError<'_>) -> String {
    let at = place(error.instance_path().as_str());
    let subject = at.clone().unwrap_or_else(|| "the value".into());
    if let Some(words) = bound(error.kind()) {
        return format!("{subject} must {words}");
    }
    match error.kind() {
        ValidationErrorKind::Required { property } => match &at {
            Some(at) => format!("{at} is missing the required property {property}"),
            None => format!("missing required property {property}"),
        },
        ValidationErrorKind::Enum { options } => {
            format!("{subject} must be one of {}", list(options))
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!("{subject} must be {expected_value}")
        }
        ValidationErrorKind::Pattern { pattern } => {
            format!("{subject} must match the pattern {pattern}")
        }
        ValidationErrorKind::Format { format } => format!("{subject} must be a valid {format}"),
        ValidationErrorKind::Type { kind } => {
            let kind = match kind {
                jsonschema::error::TypeKind::Single(t) => t.to_string(),
                jsonschema::error::TypeKind::Multiple(set) => format!("{set:?}"),
            };
            format!("{subject} must be of type {kind}")
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let names = unexpected
                .iter()
                .map(|u| format!("\"{u}\""))
                .collect::<Vec<_>>()
                .join(", ");
            match &at {
                Some(at) => format!("{at} has properties the schema does not allow: {names}"),
                None => format!("properties the schema does not allow: {names}"),
            }
        }
        ValidationErrorKind::UniqueItems => format!("{subject} must not repeat items"),
        _ => match &at {
            Some(at) => format!("{at}: {error}"),
            None => error.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn problems_are_said_in_plain_words() {
        let schema = compile_input(&obj(json!({
            "type": "object",
            "properties": {
                "summary": {"type": "string"},
                "priority": {"type": "string", "enum": ["P1", "P2", "P3"]},
                "rows": {"type": "integer", "minimum": 1},
                "ticket_id": {"type": "string", "pattern": "^T-\\d{5}$"}
            },
            "required": ["summary", "priority"],
            "additionalProperties": false
        })))
        .unwrap();
        let found = problems(
            &schema,
            &json!({"summary": "x", "rows": 0, "ticket_id": "T-1", "colour": "red"}),
        );
        for want in [
            "missing required property \"priority\"",
            "\"rows\" must be at least 1",
            "\"ticket_id\" must match the pattern ^T-\\d{5}$",
            "properties the schema does not allow: \"colour\"",
        ] {
            assert!(found.iter().any(|f| f == want), "{want}: {found:?}");
        }
        let found = problems(&schema, &json!({"summary": 3, "priority": "P9"}));
        assert!(
            found.contains(&"\"summary\" must be of type string".to_string()),
            "{found:?}"
        );
        assert!(
            found.contains(&"\"priority\" must be one of \"P1\", \"P2\", \"P3\"".to_string()),
            "{found:?}"
        );
        assert!(problems(&schema, &json!({"summary": "x", "priority": "P1"})).is_empty());
    }

    #[test]
    fn broken_or_unbounded_schemas_are_refused() {
        assert!(
            compile_input(&obj(json!({"type": "array"})))
                .unwrap_err()
                .contains("not \"object\"")
        );
        assert!(compile_input(&obj(json!({"properties": {}}))).is_err());
        assert!(
            compile_input(&obj(
                json!({"type": "object", "properties": {"a": {"type": "nonsense"}}})
            ))
            .is_err()
        );
        let remote = compile_input(&obj(
            json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}),
        ));
        assert!(remote.is_err(), "a network $ref is never fetched");
        let huge: Map<String, Value> = (0..5_000)
            .map(|i| {
                (
                    format!("p{i}"),
                    json!({"type": "string", "description": "x".repeat(20)}),
                )
            })
            .collect();
        let err = compile_input(&obj(json!({"type": "object", "properties": huge}))).unwrap_err();
        assert!(err.contains("more than"), "{err}");
    }

    #[test]
    fn a_lazy_schema_is_checked_at_once_and_compiled_on_first_use() {
        let good = Arc::new(obj(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        ));
        let lazy = Lazy::check(&good, Kind::Input).unwrap();
        assert!(!lazy.is_compiled(), "checking compiles and drops");
        let twin = lazy.clone();
        assert_eq!(
            problems(&lazy, &json!({})),
            ["missing required property \"n\""]
        );
        assert!(
            lazy.is_compiled() && twin.is_compiled(),
            "clones share the compiled form"
        );
        assert!(problems(&twin, &json!({"n": 1})).is_empty());
        let mut checker = Checker::default();
        assert!(
            checker.check(&good, Kind::Input).is_ok() && checker.check(&good, Kind::Input).is_ok()
        );
        assert_eq!(
            checker.compiled.len(),
            1,
            "the same schema is compiled once"
        );
        assert!(checker.check(&good, Kind::Output).is_ok());
        assert_eq!(checker.compiled.len(), 2);
        let broken = Arc::new(obj(
            json!({"type": "object", "properties": {"x": {"type": 12}}}),
        ));
        let err = Lazy::check(&broken, Kind::Input).unwrap_err();
        assert!(err.contains("does not compile"), "{err}");
        for _ in 0..2 {
            let err = checker.check(&broken, Kind::Input).unwrap_err();
            assert!(
                err.contains("does not compile"),
                "never remembered as good: {err}"
            );
        }
        let output = Arc::new(obj(json!({"type": "array"})));
        assert!(Lazy::check(&output, Kind::Input).is_err());
        assert!(Lazy::check(&output, Kind::Output).is_ok());
        assert!(!refuse_all().is_valid(&json!({})));
    }

    #[test]
    fn nested_places_read_naturally() {
        assert_eq!(place("/items/0/sku").unwrap(), "\"items[0].sku\"");
        assert_eq!(place(""), None);
    }
}
