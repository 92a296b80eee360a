//! How a run's pieces look as text: `[who] text {data}` lines, the progress bar, the usage
//! line and the tool table. Which of them reach the screen is `screen`'s business.

use gatehouse::{
    text::{visible, visible_line},
    trace::{ProgressEvent, Step},
};
use serde_json::Value;

/// JSON with a space after `,` and `:`, as the run's data is shown to people.
pub fn spaced_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), spaced_json(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(spaced_json).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

/// One step as a line.
pub fn step_line(step: &Step) -> String {
    // A result's text is shown below its line (`-v`), and a detail's mark is the screen's.
    let mut data = step.data.clone();
    if let Value::Object(map) = &mut data {
        map.remove(gatehouse::trace::DETAIL_KEY);
        map.remove(gatehouse::result::shape::RESULT_TEXT_KEY);
    }
    let empty = matches!(&data, Value::Object(m) if m.is_empty());
    let line = if empty {
        format!("[{}] {}", step.who.as_str(), step.text)
    } else {
        format!(
            "[{}] {} {}",
            step.who.as_str(),
            step.text,
            spaced_json(&data)
        )
    };
    // The trace made its steps visible already; a line is checked once more where it
    // meets the terminal, whoever recorded the step.
    visible(&line).into_owned()
}

/// A one-line bar: `[server] export_report ██████░░░░░░ 50% 50000 of 100000 rows`.
pub fn progress_bar(event: &ProgressEvent) -> String {
    const WIDTH: usize = 24;
    let (bar, share) = match event.total.filter(|t| *t > 0.0) {
        Some(total) => {
            let frac = (event.progress / total).clamp(0.0, 1.0);
            let full = (frac * WIDTH as f64).round() as usize;
            (
                format!("{}{}", "█".repeat(full), "░".repeat(WIDTH - full)),
                format!("{:>3.0}%", frac * 100.0),
            )
        }
        None => ("·".repeat(WIDTH), format!("{}", event.progress)),
    };
    let message = visible_line(event.message.as_deref().unwrap_or(""));
    format!(
        "[{}] {} {bar} {share} {message}",
        visible_line(&event.server),
        visible_line(&event.tool)
    )
}

/// The run's cost in one line, the last of the human output.
pub fn usage_line(usage: &Value) -> String {
    let n = |k: &str| usage[k].as_u64().unwrap_or(0);
    if n("model_calls") == 0 {
        return "[usage] the model reported no token use".into();
    }
    format!(
        "[usage] {} model call{}, {} tokens ({} prompt, {} completion)",
        n("model_calls"),
        if n("model_calls") == 1 { "" } else { "s" },
        n("total_tokens"),
        n("prompt_tokens"),
        n("completion_tokens")
    )
}

/// The hints a tool's annotations give, in words ("read-only, idempotent").
fn hints(annotations: &Value) -> String {
    let mut words = Vec::new();
    for (key, yes, no) in [
        ("read_only_hint", "read-only", "writes"),
        ("destructive_hint", "destructive", ""),
        ("idempotent_hint", "idempotent", ""),
        ("open_world_hint", "open world", ""),
    ] {
        match annotations[key].as_bool() {
            Some(true) => words.push(yes),
            Some(false) if !no.is_empty() => words.push(no),
            _ => {}
        }
    }
    if words.is_empty() {
        "-".into()
    } else {
        words.join(", ")
    }
}

/// The catalog as an aligned table: name, server, first line of the description, hints.
pub fn tool_table(rows: &[Value]) -> String {
    const DESCRIPTION_CHARS: usize = 70;
    let width = |key: &str, min: usize| {
        rows.iter()
            .map(|r| visible_line(r[key].as_str().unwrap_or("")).chars().count())
            .max()
            .unwrap_or(0)
            .max(min)
    };
    let (wn, ws) = (width("name", 4), width("server", 6));
    let mut out = format!(
        "{:<wn$}  {:<ws$}  {:<DESCRIPTION_CHARS$}  {}",
        "TOOL", "SERVER", "DESCRIPTION", "HINTS"
    );
    for r in rows {
        let shown = |key: &str| visible_line(r[key].as_str().unwrap_or("")).into_owned();
        let d = gatehouse::text::clip(&shown("description"), DESCRIPTION_CHARS).into_owned();
        out.push_str(&format!(
            "\n{:<wn$}  {:<ws$}  {:<DESCRIPTION_CHARS$}  {}",
            shown("name"),
            shown("server"),
            d,
            hints(&r["annotations"])
        ));
    }
    out
}

/// A sequence serialized as its items are made, never held whole (`gatehouse tools
/// --json` over a thousand tools). It is written once; a second write is an error.
pub struct Streamed<I>(std::cell::RefCell<Option<I>>);

impl<I> Streamed<I> {
    pub fn new(items: I) -> Self {
        Streamed(std::cell::RefCell::new(Some(items)))
    }
}

impl<I: Iterator<Item = Value>> serde::Serialize for Streamed<I> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let items = self
            .0
            .borrow_mut()
            .take()
            .ok_or_else(|| serde::ser::Error::custom("the rows were already written"))?;
        serializer.collect_seq(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_sequence_prints_as_the_whole_would() {
        let rows = || (0..3).map(|i| serde_json::json!({"name": format!("t{i}"), "n": i}));
        let whole = serde_json::to_string_pretty(&rows().collect::<Vec<_>>()).unwrap();
        let streamed = Streamed::new(rows());
        assert_eq!(serde_json::to_string_pretty(&streamed).unwrap(), whole);
        assert!(serde_json::to_string(&streamed).is_err(), "written once");
        let none = Streamed::new(std::iter::empty());
        assert_eq!(serde_json::to_string_pretty(&none).unwrap(), "[]");
    }
    use gatehouse::trace::Who;
    use serde_json::json;

    #[test]
    fn progress_bars_show_the_share_done() {
        let e = ProgressEvent {
            server: "orders".into(),
            tool: "orders__export_report".into(),
            progress: 50.0,
            total: Some(100.0),
            message: Some("50 of 100 rows".into()),
        };
        let bar = progress_bar(&e);
        assert!(
            bar.starts_with(
                "[orders] orders__export_report ████████████░░░░░░░░░░░░  50% 50 of 100 rows"
            ),
            "{bar}"
        );
    }

    #[test]
    fn usage_is_one_line() {
        assert_eq!(
            usage_line(&json!({})),
            "[usage] the model reported no token use"
        );
        let u = json!({"model_calls": 3, "total_tokens": 4600, "prompt_tokens": 4000, "completion_tokens": 600});
        assert_eq!(
            usage_line(&u),
            "[usage] 3 model calls, 4600 tokens (4000 prompt, 600 completion)"
        );
    }

    #[test]
    fn steps_print_as_the_seed_shows_them() {
        let step = Step {
            who: Who::Host,
            text: "on the allow-list: run it".into(),
            data: json!({"decision": "auto", "n": [1, 2]}),
        };
        assert_eq!(
            step_line(&step),
            r#"[host] on the allow-list: run it {"decision": "auto", "n": [1, 2]}"#
        );
        let bare = Step {
            who: Who::Model,
            text: "final answer".into(),
            data: json!({}),
        };
        assert_eq!(step_line(&bare), "[model] final answer");
    }
}
