//! Where a proposal is refused, run at once, or put to the person.
//!
//! The checks run in this order, and the first three send nothing anywhere: is the tool in
//! this host's catalog; are its arguments a JSON object of bounded size; is it on the
//! host's allow-list. Annotations from a server are shown to the person, never trusted:
//! a `readOnlyHint` is a hint for a user interface, not a permission.

use rmcp::model::JsonObject;
use serde_json::{Value, json};

use crate::{
    catalog::{Catalog, CatalogTool, host_tools::runs_unasked},
    config::Settings,
    model::ToolCall,
    schema,
};

/// The host's decision on one proposed call.
#[derive(Debug)]
pub enum Verdict<'c> {
    /// On the allow-list: run it without asking.
    Run {
        /// The tool in the catalog.
        tool: &'c CatalogTool,
        /// Its arguments, checked.
        arguments: JsonObject,
    },
    /// Not on the allow-list: show the person the exact call and ask.
    Ask {
        /// The tool in the catalog.
        tool: &'c CatalogTool,
        /// Its arguments, checked.
        arguments: JsonObject,
    },
    /// Refused: nothing is sent, and the model is told why.
    Refuse(Refusal),
}

/// Why a proposal was refused before anything was sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The name is not in the catalog (invented, mistyped, or filtered out).
    UnknownTool {
        /// The name the model gave.
        name: String,
    },
    /// The arguments are longer than the bound.
    TooLarge {
        /// How long they are.
        chars: usize,
        /// The bound.
        max: usize,
    },
    /// The arguments are not JSON.
    NotJson {
        /// The parser's words.
        error: String,
    },
    /// The arguments are JSON, but not an object.
    NotAnObject {
        /// What they are instead.
        found: &'static str,
    },
    /// The arguments do not fit the tool's input schema.
    InvalidArguments {
        /// Every problem, in plain words.
        problems: Vec<String>,
    },
}

impl Refusal {
    /// The short name of the decision, as the run records it.
    pub fn decision(&self) -> &'static str {
        match self {
            Refusal::UnknownTool { .. } => "unknown_tool",
            Refusal::TooLarge { .. } => "too_large",
            Refusal::NotJson { .. } => "invalid_arguments",
            Refusal::NotAnObject { .. } => "invalid_arguments",
            Refusal::InvalidArguments { .. } => "invalid_arguments",
        }
    }

    /// What the model reads instead of a result.
    pub fn for_model(&self) -> String {
        match self {
            Refusal::UnknownTool { name } => {
                format!("unknown tool {name}: it is not among the tools offered to you")
            }
            Refusal::TooLarge { chars, max } => {
                format!("arguments too large: {chars} characters, at most {max}; send less")
            }
            Refusal::NotJson { error } => {
                format!("the arguments were not valid JSON ({error}); send a JSON object")
            }
            Refusal::NotAnObject { found } => {
                format!("the arguments must be a JSON object, not {found}")
            }
            Refusal::InvalidArguments { problems } => format!(
                "the arguments do not fit the tool's input schema: {}",
                problems.join("; ")
            ),
        }
    }

    /// What the person reads in the run.
    pub fn for_person(&self) -> String {
        match self {
            Refusal::UnknownTool { name } => format!("refused: {name} is not a tool of this host"),
            Refusal::TooLarge { chars, max } => {
                format!("refused: arguments too large ({chars} characters, at most {max})")
            }
            Refusal::NotJson { .. } => "refused: the arguments are not valid JSON".into(),
            Refusal::NotAnObject { found } => {
                format!("refused: the arguments are {found}, not a JSON object")
            }
            Refusal::InvalidArguments { problems } => format!(
                "refused: the arguments do not fit the schema ({})",
                problems.join("; ")
            ),
        }
    }

    /// The data of the refusal's step.
    pub fn data(&self) -> Value {
        match self {
            Refusal::TooLarge { chars, max } => {
                json!({"decision": self.decision(), "chars": chars, "max": max})
            }
            Refusal::NotJson { error } => json!({"decision": self.decision(), "error": error}),
            Refusal::InvalidArguments { problems } => {
                json!({"decision": self.decision(), "problems": problems})
            }
            _ => json!({"decision": self.decision()}),
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Decide on one proposed call. Pure: no I/O, so it is cheap and easy to test.
pub fn decide<'c>(call: &ToolCall, catalog: &'c Catalog, settings: &Settings) -> Verdict<'c> {
    let Some(tool) = catalog.get(&call.name) else {
        return Verdict::Refuse(Refusal::UnknownTool {
            name: call.name.clone(),
        });
    };
    let raw = if call.arguments.trim().is_empty() {
        "{}"
    } else {
        call.arguments.as_str()
    };
    let chars = raw.chars().count();
    if chars > settings.max_argument_chars {
        return Verdict::Refuse(Refusal::TooLarge {
            chars,
            max: settings.max_argument_chars,
        });
    }
    let arguments = match serde_json::from_str::<Value>(raw) {
        Err(e) => {
            return Verdict::Refuse(Refusal::NotJson {
                error: e.to_string(),
            });
        }
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            return Verdict::Refuse(Refusal::NotAnObject {
                found: kind(&other),
            });
        }
    };
    let problems = schema::problems(&tool.input, &Value::Object(arguments.clone()));
    if !problems.is_empty() {
        return Verdict::Refuse(Refusal::InvalidArguments { problems });
    }
    let allowed = settings.allow.iter().any(|a| a == &tool.name) || runs_unasked(tool);
    if allowed && !tool.changed {
        Verdict::Run { tool, arguments }
    } else {
        Verdict::Ask { tool, arguments }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::Tool;

    fn catalog() -> Catalog {
        let tool: Tool = serde_json::from_value(
            json!({"name": "get_ticket", "inputSchema": {"type": "object"}}),
        )
        .unwrap();
        let other: Tool = serde_json::from_value(
            json!({"name": "open_ticket", "inputSchema": {"type": "object"}}),
        )
        .unwrap();
        Catalog::build(vec![("support".into(), vec![tool, other])])
    }

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    fn settings() -> Settings {
        Settings {
            allow: vec!["support__get_ticket".into()],
            ..Settings::default()
        }
    }

    #[test]
    fn each_check_in_order() {
        let (c, s) = (catalog(), settings());
        assert!(matches!(
            decide(&call("nope", "{}"), &c, &s),
            Verdict::Refuse(Refusal::UnknownTool { .. })
        ));
        let big = format!("{{\"q\": \"{}\"}}", "x".repeat(50_000));
        assert!(matches!(
            decide(&call("support__get_ticket", &big), &c, &s),
            Verdict::Refuse(Refusal::TooLarge { max: 2000, .. })
        ));
        assert!(matches!(
            decide(&call("support__get_ticket", "{oops"), &c, &s),
            Verdict::Refuse(Refusal::NotJson { .. })
        ));
        assert!(matches!(
            decide(&call("support__get_ticket", "[1]"), &c, &s),
            Verdict::Refuse(Refusal::NotAnObject { found: "an array" })
        ));
        assert!(matches!(
            decide(&call("support__get_ticket", ""), &c, &s),
            Verdict::Run { .. }
        ));
        assert!(matches!(
            decide(&call("support__open_ticket", "{}"), &c, &s),
            Verdict::Ask { .. }
        ));
    }

    #[test]
    fn the_size_bound_counts_characters_not_bytes() {
        let (c, s) = (catalog(), settings());
        let args = format!("{{\"q\": \"{}\"}}", "é".repeat(1_990));
        assert!(matches!(
            decide(&call("support__get_ticket", &args), &c, &s),
            Verdict::Run { .. }
        ));
    }

    use proptest::prelude::*;

    proptest! {
        /// Any proposal (any name, any argument text) gets a verdict: an unknown name or
        /// oversized arguments are refused before anything else, and a call runs without
        /// asking only when the tool is on the allow-list and its arguments are an object.
        #[test]
        fn every_proposal_gets_the_right_verdict(
            name in prop_oneof![
                Just("support__get_ticket".to_string()),
                Just("support__open_ticket".to_string()),
                any::<String>(),
            ],
            arguments in prop_oneof![
                Just("{}".to_string()),
                Just(String::new()),
                any::<String>(),
                ".{0,3000}".prop_map(|s| serde_json::json!({"q": s}).to_string()),
            ],
        ) {
            let (c, s) = (catalog(), settings());
            let verdict = decide(&call(&name, &arguments), &c, &s);
            let known = c.get(&name).is_some();
            let size = if arguments.trim().is_empty() { 2 } else { arguments.chars().count() };
            match verdict {
                Verdict::Refuse(Refusal::UnknownTool { .. }) => prop_assert!(!known),
                Verdict::Refuse(Refusal::TooLarge { chars, .. }) => {
                    prop_assert!(known && chars > s.max_argument_chars);
                }
                Verdict::Refuse(_) => prop_assert!(known && size <= s.max_argument_chars),
                Verdict::Run { tool, .. } => prop_assert!(s.allow.contains(&tool.name)),
                Verdict::Ask { tool, .. } => prop_assert!(!s.allow.contains(&tool.name)),
            }
        }
    }
}
