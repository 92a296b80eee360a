//! How a run looks on a terminal: `[who] text {data}` lines as they happen, the servers'
//! own stderr lines marked as theirs, then the answer.

use std::io::Write;

use gatehouse::trace::{Observer, Step};
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
    let empty = matches!(&step.data, Value::Object(m) if m.is_empty());
    if empty {
        format!("[{}] {}", step.who.as_str(), step.text)
    } else {
        format!(
            "[{}] {} {}",
            step.who.as_str(),
            step.text,
            spaced_json(&step.data)
        )
    }
}

/// Prints steps on stdout as they happen (human mode), or nothing (JSON mode). Server
/// stderr always goes to stderr, so `--json` keeps stdout for the one object.
pub struct Printer {
    pub steps_on_stdout: bool,
}

impl Observer for Printer {
    fn step(&self, step: &Step) {
        if self.steps_on_stdout {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", step_line(step));
            let _ = out.flush();
        }
    }

    fn server_stderr(&self, server: &str, line: &str) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "[{server} stderr] {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse::trace::Who;
    use serde_json::json;

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
