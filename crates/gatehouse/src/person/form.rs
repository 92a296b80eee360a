//! A server's form: flat fields (strings, numbers, booleans, choices), each answer checked
//! against the field's whole schema, and answers given in advance by `--answer`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::text::visible_line;

/// One `--answer`: a value for a field of a server's form. Without a server it fills that
/// field in any server's form; with one, only in that server's forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormAnswer {
    /// The server whose forms it fills, or any.
    pub server: Option<String>,
    /// The field it fills.
    pub field: String,
    /// The value, as typed (checked against the field's schema).
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

/// One field of a flat elicitation form.
#[derive(Debug, Clone)]
pub struct FormField {
    /// The property's name.
    pub name: String,
    /// Its type: string, number, integer, boolean or array (a multi-select).
    pub kind: String,
    /// The values it allows, when it is a choice.
    pub choices: Vec<String>,
    /// Must it be answered?
    pub required: bool,
    /// What the server says about it.
    pub description: Option<String>,
    /// The field's own schema: every answer is checked against all of it (bounds,
    /// formats, titled choices), not only its type.
    pub schema: Value,
}

impl FormField {
    /// How the field is asked for at the terminal, on one line, nothing in it acted on.
    pub(crate) fn prompt(&self) -> String {
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
