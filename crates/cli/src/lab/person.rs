//! The person, reached through the browser: approvals with Run/Refuse, servers' forms with
//! Accept/Decline/Cancel, URL requests with consent buttons (the URL is shown, never
//! opened). Nothing goes back to the host until a button is pressed, and a turn waits as
//! long as it must. Every answer is checked here again; the page's own checks are a
//! convenience.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use futures::future::BoxFuture;
use gatehouse::approvals::Scope;
use gatehouse::person::{
    Answered, AnsweredBy, Approval, ApprovalRequest, FormField, Person, Question, decline,
    form_fields,
};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;

use super::events::Hub;

/// What a question expects back.
enum Expect {
    Approval {
        may_remember: bool,
        reply: oneshot::Sender<(bool, Option<Scope>)>,
    },
    Form {
        fields: Vec<FormField>,
        reply: oneshot::Sender<ElicitResult>,
    },
    Url(oneshot::Sender<ElicitResult>),
}

/// Why an answer from the page was not taken.
#[derive(Debug, PartialEq)]
pub enum AnswerError {
    /// No such question is waiting (answered already, or never asked).
    NotWaiting(u64),
    /// The answer does not fit the question: the page should say why and ask again.
    Invalid {
        message: String,
        fields: Map<String, Value>,
    },
}

/// The person at the browser.
pub struct WebPerson {
    hub: Arc<Hub>,
    waiting: Mutex<HashMap<u64, Expect>>,
    next: AtomicU64,
}

impl WebPerson {
    pub fn new(hub: Arc<Hub>) -> Self {
        WebPerson {
            hub,
            waiting: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
        }
    }

    fn ask(&self, expect: Expect, fields: Value) -> u64 {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, expect);
        let mut fields = fields;
        fields["id"] = json!(id);
        self.hub.emit("prompt", fields);
        id
    }

    /// The page's answer to question `id`: `{"run": bool}` for an approval, with
    /// `"remember": "session"|"project"` where the question offered it,
    /// `{"action": "accept"|"decline"|"cancel", "content": {field: text}}` for a form or URL.
    /// Returns what was decided, in words, for the page.
    pub fn answer(&self, id: u64, body: &Value) -> Result<Value, AnswerError> {
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        let Some(expect) = waiting.remove(&id) else {
            return Err(AnswerError::NotWaiting(id));
        };
        let invalid = |message: &str| AnswerError::Invalid {
            message: message.into(),
            fields: Map::new(),
        };
        let parsed = match &expect {
            Expect::Approval { may_remember, .. } => {
                let remember = match body.get("remember").and_then(Value::as_str) {
                    None => Ok(None),
                    Some("session") if *may_remember => Ok(Some(Scope::Session)),
                    Some("project") if *may_remember => Ok(Some(Scope::Project)),
                    Some(_) => Err(invalid("\"remember\" is session or project, where offered")),
                };
                match (body["run"].as_bool(), remember) {
                    (Some(run), Ok(remember)) => Ok(Parsed::Run(run, remember.filter(|_| run))),
                    (None, _) => Err(invalid("an approval needs {\"run\": true|false}")),
                    (_, Err(e)) => Err(e),
                }
            }
            Expect::Form { fields, .. } => parse_action(body).and_then(|action| {
                if action != ElicitationAction::Accept {
                    return Ok(Parsed::Elicit(ElicitResult::new(action)));
                }
                check_form(fields, &body["content"]).map(|content| {
                    Parsed::Elicit(
                        ElicitResult::new(ElicitationAction::Accept).with_content(content),
                    )
                })
            }),
            Expect::Url(_) => parse_action(body).map(|a| Parsed::Elicit(ElicitResult::new(a))),
        };
        let parsed = match parsed {
            Ok(p) => p,
            Err(e) => {
                // Still waiting: the person may answer again.
                waiting.insert(id, expect);
                return Err(e);
            }
        };
        drop(waiting);
        let said = match (expect, parsed) {
            (Expect::Approval { reply, .. }, Parsed::Run(run, remember)) => {
                let _ = reply.send((run, remember));
                json!({"run": run, "remember": remember.map(Scope::as_str)})
            }
            (Expect::Form { reply, .. } | Expect::Url(reply), Parsed::Elicit(result)) => {
                let said = json!({"action": result.action, "content": result.content});
                let _ = reply.send(result);
                said
            }
            _ => return Err(invalid("the answer does not fit the question")),
        };
        self.hub
            .emit("prompt_closed", json!({"id": id, "answer": said.clone()}));
        Ok(said)
    }
}

enum Parsed {
    Run(bool, Option<Scope>),
    Elicit(ElicitResult),
}

fn parse_action(body: &Value) -> Result<ElicitationAction, AnswerError> {
    match body["action"].as_str() {
        Some("accept") => Ok(ElicitationAction::Accept),
        Some("decline") => Ok(ElicitationAction::Decline),
        Some("cancel") => Ok(ElicitationAction::Cancel),
        _ => Err(AnswerError::Invalid {
            message: "\"action\" must be accept, decline or cancel".into(),
            fields: Map::new(),
        }),
    }
}

/// Check a form's answers field by field, with the same parser the terminal uses. Each
/// answer arrives as text (a boolean may arrive as true/false).
pub fn check_form(fields: &[FormField], content: &Value) -> Result<Value, AnswerError> {
    let empty = Map::new();
    let given = match content {
        Value::Object(m) => m,
        Value::Null => &empty,
        _ => {
            return Err(AnswerError::Invalid {
                message: "\"content\" must be an object of field answers".into(),
                fields: Map::new(),
            });
        }
    };
    let mut out = Map::new();
    let mut errors = Map::new();
    for field in fields {
        let raw = match given.get(&field.name) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.trim().to_owned(),
            Some(other) => other.to_string(),
        };
        if raw.is_empty() {
            if field.required {
                errors.insert(
                    field.name.clone(),
                    json!(format!("{} is required", field.name)),
                );
            }
            continue;
        }
        match field.parse(&raw) {
            Ok(v) => {
                out.insert(field.name.clone(), v);
            }
            Err(e) => {
                errors.insert(field.name.clone(), json!(e));
            }
        }
    }
    if errors.is_empty() {
        Ok(Value::Object(out))
    } else {
        Err(AnswerError::Invalid {
            message: "some answers do not fit the form".into(),
            fields: errors,
        })
    }
}

/// A form field as the page draws it.
fn field_view(f: &FormField, schema: &Value) -> Value {
    let prop = &schema["properties"][&f.name];
    json!({
        "name": f.name,
        "kind": f.kind,
        "choices": f.choices,
        "required": f.required,
        "description": f.description,
        "title": prop["title"],
        "default": prop["default"],
        "minimum": prop["minimum"],
        "maximum": prop["maximum"],
        "minLength": prop["minLength"],
        "maxLength": prop["maxLength"],
    })
}

impl Person for WebPerson {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let (tx, rx) = oneshot::channel();
            self.ask(
                Expect::Approval {
                    may_remember: request.may_remember,
                    reply: tx,
                },
                json!({
                    "kind": "approval",
                    "server": request.server,
                    "tool": request.tool,
                    "arguments": request.arguments,
                    "annotations": request.annotations,
                    "why": request.why,
                    "may_remember": request.may_remember,
                    "proposed": request.proposed,
                    "by_person": request.by == gatehouse::person::ProposedBy::Person,
                    "flows": request.flows,
                }),
            );
            // If the lab goes away before anyone answers, the answer is no.
            let (yes, remember) = rx.await.unwrap_or((false, None));
            Approval {
                remember,
                ..Approval::once(yes, AnsweredBy::Browser)
            }
        })
    }

    fn elicit<'a>(&'a self, server: &'a str, request: &'a ElicitRequestParams) -> Answered<'a> {
        Box::pin(async move {
            let (tx, rx) = oneshot::channel();
            match Question::of(request) {
                Some(Question::Form { message, schema }) => {
                    let fields = form_fields(&schema);
                    let views: Vec<Value> = fields.iter().map(|f| field_view(f, &schema)).collect();
                    self.ask(
                        Expect::Form { fields, reply: tx },
                        json!({"kind": "form", "server": server, "message": message, "fields": views}),
                    );
                }
                Some(Question::Url { message, url }) => {
                    self.ask(
                        Expect::Url(tx),
                        json!({"kind": "url", "server": server, "message": message, "url": url}),
                    );
                }
                None => return (decline(), AnsweredBy::Nobody),
            }
            match rx.await {
                Ok(result) => (result, AnsweredBy::Browser),
                Err(_) => (
                    ElicitResult::new(ElicitationAction::Cancel),
                    AnsweredBy::Nobody,
                ),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> Vec<FormField> {
        form_fields(&json!({"type": "object",
            "properties": {"priority": {"type": "string", "enum": ["P1", "P2"]},
                           "count": {"type": "integer"},
                           "urgent": {"type": "boolean"}},
            "required": ["priority"]}))
    }

    #[test]
    fn forms_are_checked_on_the_server_too() {
        let ok = check_form(
            &fields(),
            &json!({"priority": "P1", "count": "3", "urgent": true}),
        );
        assert_eq!(
            ok.unwrap(),
            json!({"priority": "P1", "count": 3, "urgent": true})
        );
        let Err(AnswerError::Invalid { fields: errs, .. }) =
            check_form(&fields(), &json!({"priority": "P9", "count": "x"}))
        else {
            panic!("bad answers must be refused");
        };
        assert!(errs["priority"].as_str().unwrap().contains("one of P1, P2"));
        assert!(errs["count"].as_str().unwrap().contains("whole number"));
        let Err(AnswerError::Invalid { fields: errs, .. }) = check_form(&fields(), &json!({}))
        else {
            panic!("a missing required field must be refused");
        };
        assert!(errs.contains_key("priority"));
    }

    /// The question whether to open a ticket, asked for `why`.
    fn ticket(why: &str) -> ApprovalRequest {
        ApprovalRequest::new(
            "tickets",
            "tickets__open_ticket",
            json!({"summary": "x"}),
            why,
        )
    }

    #[tokio::test]
    async fn an_approval_waits_for_the_click_and_a_bad_answer_keeps_it_waiting() {
        let hub = Arc::new(Hub::default());
        let person = Arc::new(WebPerson::new(hub.clone()));
        let came = "/summary x appears nowhere in the context: the model made it";
        let request = ApprovalRequest {
            may_remember: true,
            flows: vec![came.into()],
            ..ticket("not on the allow-list: ask the person")
        };
        let p = person.clone();
        let waiting = tokio::spawn(async move { p.approve(&request).await });
        tokio::task::yield_now().await;
        while hub.subscribe().0.is_empty() {
            tokio::task::yield_now().await;
        }
        // The page shows where each argument came from, as the terminal does.
        let shown = hub.subscribe().0;
        assert_eq!(shown.last().unwrap()["flows"], json!([came]));
        assert!(matches!(
            person.answer(1, &json!({"run": "maybe"})),
            Err(AnswerError::Invalid { .. })
        ));
        assert_eq!(
            person.answer(1, &json!({"run": true})).unwrap()["run"],
            true
        );
        let approval = waiting.await.unwrap();
        assert!(approval.yes);
        // Said in the lab's page, not at the terminal.
        assert_eq!(approval.by, AnsweredBy::Browser);
        assert_eq!(
            person.answer(1, &json!({"run": true})),
            Err(AnswerError::NotWaiting(1))
        );
    }

    #[tokio::test]
    async fn the_lab_offers_the_same_remembered_choices_as_the_terminal() {
        let hub = Arc::new(Hub::default());
        let person = Arc::new(WebPerson::new(hub.clone()));
        let ask = |may_remember| ApprovalRequest {
            may_remember,
            ..ticket("rules[0] says ask the person")
        };
        let p = person.clone();
        let waiting = tokio::spawn(async move { p.approve(&ask(true)).await });
        while hub.subscribe().0.is_empty() {
            tokio::task::yield_now().await;
        }
        assert!(matches!(
            person.answer(1, &json!({"run": true, "remember": "forever"})),
            Err(AnswerError::Invalid { .. })
        ));
        let said = person.answer(1, &json!({"run": true, "remember": "project"}));
        assert_eq!(said.unwrap()["remember"], "project");
        let approval = waiting.await.unwrap();
        assert!(approval.yes);
        assert_eq!(approval.remember, Some(Scope::Project));
        // Where a rule asks, nothing can be remembered.
        let p = person.clone();
        let waiting = tokio::spawn(async move { p.approve(&ask(false)).await });
        while hub.subscribe().0.len() < 3 {
            tokio::task::yield_now().await;
        }
        assert!(matches!(
            person.answer(2, &json!({"run": true, "remember": "session"})),
            Err(AnswerError::Invalid { .. })
        ));
        assert!(person.answer(2, &json!({"run": true})).is_ok());
        assert_eq!(waiting.await.unwrap().remember, None);
    }
}
