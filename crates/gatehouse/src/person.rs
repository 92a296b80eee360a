//! The person at the host: the only one who approves a call or answers a server's question.
//! The model never answers here. Every way of asking defaults to "no".

use std::{
    collections::BTreeMap,
    io::{BufRead, IsTerminal, Write},
    sync::Mutex,
};

use futures::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value, json};

use crate::text::{visible, visible_line};

/// How an answer was given, so the run can say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnsweredBy {
    /// A command-line option (`--yes`, `--no`, `--answer`, `--decline`).
    Option,
    /// The person typed it.
    Terminal,
    /// Nobody could answer (no terminal, end of input): the default, no.
    Nobody,
}

/// The person's answer to "run this call?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Approval {
    pub yes: bool,
    pub by: AnsweredBy,
}

/// What the person is shown before a call that is not on the allow-list.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    pub server: String,
    pub tool: String,
    pub arguments: Value,
    pub annotations: Value,
}

/// The person, however they are reached.
pub trait Person: Send + Sync {
    /// Ask whether to run one call.
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval>;
    /// Answer a server's question (elicitation). `server` names who asks.
    fn elicit<'a>(
        &'a self,
        server: &'a str,
        request: &'a ElicitRequestParams,
    ) -> BoxFuture<'a, (ElicitResult, AnsweredBy)>;
}

fn decline() -> ElicitResult {
    ElicitResult::new(ElicitationAction::Decline)
}

/// Answers fixed in advance by options, for scripts and tests. Anything not given is "no".
#[derive(Debug, Default)]
pub struct FixedAnswers {
    /// `Some(true)` for `--yes`, `Some(false)` for `--no`; `None` falls back to the terminal.
    pub approve: Option<bool>,
    /// `--answer [SERVER:]FIELD=VALUE` for forms.
    pub fields: Vec<FormAnswer>,
    /// `--decline`: decline every form.
    pub decline_forms: bool,
}

/// One `--answer`: a value for a field of a server's form. Without a server it fills that
/// field in any server's form; with one, only in that server's forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormAnswer {
    pub server: Option<String>,
    pub field: String,
    pub value: String,
}

impl FormAnswer {
    /// Read `[SERVER:]FIELD=VALUE`.
    pub fn parse(text: &str) -> Result<FormAnswer, String> {
        let Some((key, value)) = text.split_once('=') else {
            return Err(format!("expected [SERVER:]FIELD=VALUE, got {text:?}"));
        };
        let (server, field) = match key.split_once(':') {
            Some((server, field)) => (Some(server.trim().to_owned()), field.trim()),
            None => (None, key.trim()),
        };
        if field.is_empty() || server.as_deref().is_some_and(str::is_empty) {
            return Err(format!("expected [SERVER:]FIELD=VALUE, got {text:?}"));
        }
        Ok(FormAnswer {
            server,
            field: field.to_owned(),
            value: value.to_owned(),
        })
    }
}

/// The answers of `given` that fill `server`'s form with `fields`, by field name; `None`
/// when none of them names a field of this form, which then is not theirs to answer.
pub fn answers_for(
    given: &[FormAnswer],
    server: &str,
    fields: &[FormField],
) -> Option<BTreeMap<String, String>> {
    let applicable: BTreeMap<String, String> = given
        .iter()
        .filter(|a| a.server.as_deref().is_none_or(|s| s == server))
        .filter(|a| fields.iter().any(|f| f.name == a.field))
        .map(|a| (a.field.clone(), a.value.clone()))
        .collect();
    (!applicable.is_empty()).then_some(applicable)
}

/// The terminal: prompts on stderr, reads stdin. With no terminal and no options, no.
pub struct Terminal {
    pub fixed: FixedAnswers,
    /// Show the call itself with "Run it?": set when the run's steps (which show it) are
    /// not on the person's screen, as with `--json`. The person always sees what they approve.
    show_calls: bool,
    /// Serialises questions, so two never interleave on the screen.
    lock: Mutex<()>,
}

impl Terminal {
    pub fn new(fixed: FixedAnswers) -> Self {
        Terminal {
            fixed,
            show_calls: false,
            lock: Mutex::new(()),
        }
    }

    /// Show each call with its "Run it?" question (the run's steps are not on screen).
    pub fn showing_calls(mut self, show: bool) -> Self {
        self.show_calls = show;
        self
    }
}

/// Read one line from stdin; `None` at end of input or on error.
fn read_line(prompt: &str) -> Option<String> {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{prompt}");
    let _ = err.flush();
    drop(err);
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_owned()),
    }
}

fn said_yes(answer: Option<String>) -> bool {
    answer.is_some_and(|a| matches!(a.to_lowercase().as_str(), "y" | "yes"))
}

/// The call as the person reads it before saying yes: server, tool, arguments, hints.
pub fn describe_call(request: &ApprovalRequest) -> String {
    let hints = match &request.annotations {
        Value::Object(m) if !m.is_empty() => {
            format!(" (hints from the server: {})", request.annotations)
        }
        _ => String::new(),
    };
    visible(&format!(
        "{} on {} wants to run with {}{hints}",
        request.tool, request.server, request.arguments
    ))
    .into_owned()
}

impl Person for Terminal {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            if let Some(yes) = self.fixed.approve {
                return Approval {
                    yes,
                    by: AnsweredBy::Option,
                };
            }
            let answer = tokio::task::block_in_place(|| {
                let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
                if self.show_calls {
                    eprintln!("[host] {}", describe_call(request));
                }
                read_line("[host] Run it? [y/N] ")
            });
            match answer {
                None => Approval {
                    yes: false,
                    by: AnsweredBy::Nobody,
                },
                Some(a) => Approval {
                    yes: said_yes(Some(a)),
                    by: AnsweredBy::Terminal,
                },
            }
        })
    }

    fn elicit<'a>(
        &'a self,
        server: &'a str,
        request: &'a ElicitRequestParams,
    ) -> BoxFuture<'a, (ElicitResult, AnsweredBy)> {
        Box::pin(async move {
            if self.fixed.decline_forms {
                return (decline(), AnsweredBy::Option);
            }
            let at_terminal = std::io::stdin().is_terminal();
            let shown_server = visible_line(server);
            let (message, schema) = match request {
                ElicitRequestParams::FormElicitationParams {
                    message,
                    requested_schema,
                    ..
                } => (
                    message,
                    serde_json::to_value(requested_schema).unwrap_or(Value::Null),
                ),
                ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                    // Never opened automatically; without a person at a terminal, declined.
                    if !at_terminal {
                        return (decline(), AnsweredBy::Nobody);
                    }
                    let yes = tokio::task::block_in_place(|| {
                        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
                        eprintln!(
                            "\n[{shown_server} asks] {}\n  It wants you to open: {}",
                            visible(message),
                            visible_line(url)
                        );
                        said_yes(read_line("  Open it yourself and continue? [y/N] "))
                    });
                    let action = if yes {
                        ElicitationAction::Accept
                    } else {
                        ElicitationAction::Decline
                    };
                    return (ElicitResult::new(action), AnsweredBy::Terminal);
                }
                _ => return (decline(), AnsweredBy::Nobody),
            };
            let fields = form_fields(&schema);
            // Options answer a form only when they name its fields (and its server, if they
            // name one); a form they do not fill is the person's, or declined.
            if let Some(given) = answers_for(&self.fixed.fields, server, &fields) {
                return match fill_from_options(&fields, &given) {
                    Ok(content) => (
                        ElicitResult::new(ElicitationAction::Accept).with_content(content),
                        AnsweredBy::Option,
                    ),
                    Err(_) => (decline(), AnsweredBy::Option),
                };
            }
            if !at_terminal {
                return (decline(), AnsweredBy::Nobody);
            }
            tokio::task::block_in_place(|| {
                let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
                eprintln!("\n[{shown_server} asks] {}", visible(message));
                if !said_yes(read_line("  Accept? [y/N] ")) {
                    return (decline(), AnsweredBy::Terminal);
                }
                let mut content = Map::new();
                for field in &fields {
                    loop {
                        let Some(raw) = read_line(&format!("  {} ", field.prompt())) else {
                            return (
                                ElicitResult::new(ElicitationAction::Cancel),
                                AnsweredBy::Terminal,
                            );
                        };
                        if raw.is_empty() && !field.required {
                            break;
                        }
                        match field.parse(&raw) {
                            Ok(v) => {
                                content.insert(field.name.clone(), v);
                                break;
                            }
                            Err(e) => eprintln!("  {}", visible(&e)),
                        }
                    }
                }
                (
                    ElicitResult::new(ElicitationAction::Accept)
                        .with_content(Value::Object(content)),
                    AnsweredBy::Terminal,
                )
            })
        })
    }
}

/// Put a server's question to the person, and record both the question and the answer.
/// Used for `input_required` rounds and for the `elicitation/create` of older revisions
/// alike, so both look the same in the run.
pub async fn ask_person(
    server: &str,
    key: &str,
    params: &rmcp::model::ElicitRequestParams,
    person: &dyn Person,
    trace: &crate::trace::Trace,
) -> rmcp::model::ElicitResult {
    // A URL is shown whole, so the person sees where it would take them; the host never
    // opens it.
    let (message, data) = match params {
        rmcp::model::ElicitRequestParams::FormElicitationParams { message, .. } => (
            message.clone(),
            json!({"server": server, "key": key, "mode": "form"}),
        ),
        rmcp::model::ElicitRequestParams::UrlElicitationParams { message, url, .. } => (
            message.clone(),
            json!({"server": server, "key": key, "mode": "url", "url": url}),
        ),
        _ => (
            String::new(),
            json!({"server": server, "key": key, "mode": "unknown"}),
        ),
    };
    trace.add(
        crate::trace::Who::Server,
        format!("{server} asks: {message}"),
        data,
    );
    let (answer, by) = person.elicit(server, params).await;
    let action = serde_json::to_value(&answer.action).unwrap_or_default();
    let how = match by {
        AnsweredBy::Option => "by option",
        AnsweredBy::Terminal => "at the terminal",
        AnsweredBy::Nobody => "by default: nobody could answer",
    };
    let mut data = json!({"action": action, "answered": how});
    if let Some(content) = &answer.content {
        data["content"] = content.clone();
    }
    trace.add(
        crate::trace::Who::Person,
        format!("answered {}", action.as_str().unwrap_or("?")),
        data,
    );
    answer
}

/// One field of a flat elicitation form.
#[derive(Debug, Clone)]
pub struct FormField {
    pub name: String,
    pub kind: String,
    pub choices: Vec<String>,
    pub required: bool,
    pub description: Option<String>,
    /// The field's own schema: every answer is checked against all of it (bounds,
    /// formats, titled choices), not only its type.
    pub schema: Value,
}

impl FormField {
    /// How the field is asked for at the terminal, on one line, nothing in it acted on.
    fn prompt(&self) -> String {
        let mut p = format!("{} ({})", self.name, self.kind);
        if !self.choices.is_empty() {
            p.push_str(&format!(" [{}]", self.choices.join("/")));
        }
        if let Some(d) = &self.description {
            p.push_str(&format!(" {d}"));
        }
        if !self.required {
            p.push_str(" (optional)");
        }
        p.push(':');
        visible_line(&p).into_owned()
    }

    /// Parse one typed answer by the field's type and choices, then check it against the
    /// field's whole schema.
    pub fn parse(&self, raw: &str) -> Result<Value, String> {
        let value = self.parse_type(raw)?;
        let problems = match self
            .schema
            .as_object()
            .map(crate::schema::compile_form_field)
        {
            Some(Ok(schema)) => crate::schema::problems(&schema, &value),
            _ => Vec::new(),
        };
        if problems.is_empty() {
            Ok(value)
        } else {
            Err(format!(
                "{}: {}",
                self.name,
                problems.join("; ").replace("the value ", "the answer ")
            ))
        }
    }

    fn parse_type(&self, raw: &str) -> Result<Value, String> {
        if self.kind == "array" {
            // A multi-select: comma-separated choices.
            let items: Vec<&str> = raw
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            if let Some(bad) = items
                .iter()
                .find(|i| !self.choices.is_empty() && !self.choices.iter().any(|c| c == *i))
            {
                return Err(format!(
                    "{} takes choices from {}, not {bad:?}",
                    self.name,
                    self.choices.join(", ")
                ));
            }
            return Ok(Value::Array(
                items
                    .into_iter()
                    .map(|i| Value::String(i.to_owned()))
                    .collect(),
            ));
        }
        if !self.choices.is_empty() && !self.choices.iter().any(|c| c == raw) {
            return Err(format!(
                "{} must be one of {}, not {raw:?}",
                self.name,
                self.choices.join(", ")
            ));
        }
        match self.kind.as_str() {
            "integer" => raw
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("{} must be a whole number, not {raw:?}", self.name)),
            "number" => raw
                .parse::<f64>()
                .ok()
                .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
                .ok_or_else(|| format!("{} must be a number, not {raw:?}", self.name)),
            "boolean" => match raw.to_lowercase().as_str() {
                "true" | "yes" | "y" => Ok(Value::Bool(true)),
                "false" | "no" | "n" => Ok(Value::Bool(false)),
                _ => Err(format!("{} must be yes or no, not {raw:?}", self.name)),
            },
            _ => Ok(Value::String(raw.to_owned())),
        }
    }
}

/// The values a field allows: `enum`, titled `oneOf`/`anyOf` consts, or for a
/// multi-select the same on its `items`.
fn choices_of(p: &Value) -> Vec<String> {
    let from = |p: &Value| -> Vec<String> {
        if let Some(e) = p["enum"].as_array() {
            return e
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(options) = p[key].as_array() {
                return options
                    .iter()
                    .filter_map(|o| o["const"].as_str().map(str::to_owned))
                    .collect();
            }
        }
        Vec::new()
    };
    if p["type"] == "array" {
        from(&p["items"])
    } else {
        from(p)
    }
}

/// The fields of a form schema, in the schema's order.
pub fn form_fields(schema: &Value) -> Vec<FormField> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema["properties"].as_object() else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, p)| FormField {
            name: name.clone(),
            kind: p["type"].as_str().unwrap_or("string").to_owned(),
            choices: choices_of(p),
            required: required.contains(&name.as_str()),
            description: p["description"].as_str().map(str::to_owned),
            schema: p.clone(),
        })
        .collect()
}

/// Fill a form from `--answer` options; every required field must be given and valid.
pub fn fill_from_options(
    fields: &[FormField],
    given: &BTreeMap<String, String>,
) -> Result<Value, String> {
    let mut content = Map::new();
    for field in fields {
        match given.get(&field.name) {
            Some(raw) => {
                content.insert(field.name.clone(), field.parse(raw)?);
            }
            None if field.required => {
                return Err(format!("no --answer for the required field {}", field.name));
            }
            None => {}
        }
    }
    Ok(Value::Object(content))
}

/// The annotations of a tool in the host's own words, for showing (never for trusting).
pub fn annotations_for_display(annotations: Option<&rmcp::model::ToolAnnotations>) -> Value {
    match annotations {
        None => json!({}),
        Some(a) => {
            let mut m = Map::new();
            for (k, v) in [
                ("read_only_hint", a.read_only_hint),
                ("destructive_hint", a.destructive_hint),
                ("idempotent_hint", a.idempotent_hint),
                ("open_world_hint", a.open_world_hint),
            ] {
                if let Some(v) = v {
                    m.insert(k.into(), Value::Bool(v));
                }
            }
            Value::Object(m)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_checked_against_the_whole_field_schema() {
        let schema = json!({"type": "object", "properties": {
            "count": {"type": "integer", "minimum": 1, "maximum": 100},
            "email": {"type": "string", "format": "email"},
            "hero": {"type": "string", "oneOf": [{"const": "sup", "title": "Superman"}, {"const": "bat", "title": "Batman"}]},
            "instruments": {"type": "array", "items": {"type": "string", "enum": ["Piano", "Guitar"]}}
        }});
        let fields = form_fields(&schema);
        let field = |n: &str| fields.iter().find(|f| f.name == n).unwrap();
        assert!(
            field("count")
                .parse("500")
                .unwrap_err()
                .contains("at most 100")
        );
        assert!(
            field("email")
                .parse("not-an-email")
                .unwrap_err()
                .contains("email")
        );
        assert_eq!(
            field("email").parse("sam@example.com").unwrap(),
            json!("sam@example.com")
        );
        assert!(
            field("hero").parse("Batman").is_err(),
            "titles are not values"
        );
        assert_eq!(field("hero").parse("bat").unwrap(), json!("bat"));
        assert_eq!(
            field("instruments").parse("Piano, Guitar").unwrap(),
            json!(["Piano", "Guitar"])
        );
        assert!(field("instruments").parse("Drums").is_err());
    }

    #[test]
    fn forms_are_filled_from_options_and_checked() {
        let schema = json!({"type": "object",
            "properties": {"priority": {"type": "string", "enum": ["P1", "P2", "P3"]},
                           "count": {"type": "integer"}},
            "required": ["priority"]});
        let fields = form_fields(&schema);
        let mut given = BTreeMap::new();
        given.insert("priority".to_string(), "P1".to_string());
        assert_eq!(
            fill_from_options(&fields, &given).unwrap(),
            json!({"priority": "P1"})
        );
        given.insert("priority".to_string(), "P9".to_string());
        assert!(
            fill_from_options(&fields, &given)
                .unwrap_err()
                .contains("one of P1, P2, P3")
        );
        given.clear();
        assert!(
            fill_from_options(&fields, &given)
                .unwrap_err()
                .contains("priority")
        );
        given.insert("priority".into(), "P2".into());
        given.insert("count".into(), "x".into());
        assert!(
            fill_from_options(&fields, &given)
                .unwrap_err()
                .contains("whole number")
        );
    }

    #[test]
    fn answers_fill_only_the_forms_they_name() {
        let fields = form_fields(&json!({"type": "object",
            "properties": {"priority": {"type": "string"}, "note": {"type": "string"}}}));
        let given = vec![
            FormAnswer::parse("priority=P1").unwrap(),
            FormAnswer::parse("tickets:note=urgent").unwrap(),
        ];
        let tickets = answers_for(&given, "tickets", &fields).unwrap();
        assert_eq!(tickets["priority"], "P1");
        assert_eq!(tickets["note"], "urgent");
        let other = answers_for(&given, "other", &fields).unwrap();
        assert!(
            !other.contains_key("note"),
            "a server-qualified answer is that server's"
        );
        let unrelated =
            form_fields(&json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}}));
        assert_eq!(answers_for(&given, "tickets", &unrelated), None);
        assert_eq!(answers_for(&[], "tickets", &fields), None);
        assert!(FormAnswer::parse("=x").is_err());
        assert!(FormAnswer::parse(":a=x").is_err());
        assert!(FormAnswer::parse("novalue").is_err());
    }

    #[test]
    fn a_described_call_shows_everything_and_nothing_acts_on_the_terminal() {
        let text = describe_call(&ApprovalRequest {
            server: "tickets".into(),
            tool: "tickets__open_ticket".into(),
            arguments: json!({"host": "db-01", "summary": "\u{1b}[2Jall clear"}),
            annotations: json!({"read_only_hint": false}),
        });
        assert!(text.contains("tickets__open_ticket on tickets"), "{text}");
        assert!(
            text.contains("db-01") && text.contains("read_only_hint"),
            "{text}"
        );
        assert!(!text.contains('\u{1b}'), "{text}");
    }
}
