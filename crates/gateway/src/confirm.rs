//! The person's yes or no through their own client. On revision 2026-07-28 the gateway
//! answers a call the policy asks about with `input_required`: a form showing the exact
//! call and a sealed `requestState`. The state is bound to the caller, the tool, a
//! digest of the arguments and the tool definition's fingerprint, expires, and carries a
//! nonce the shared store lets be used once, so any replica can take the second round
//! and none can take it twice. The same sealing carries a server's own questions across
//! replicas when they are relayed ([`Sealed::Relay`]), and names a call held on one
//! replica while its caller answers a server's question ([`Sealed::Held`]); each of
//! those carries a nonce of its own too, used once with its round's ledger line, so no
//! state the gateway issues can be used twice.
//!
//! A state carries no arguments and grants nothing by itself: every later round is
//! judged again by the gate (catalog, rules, ledger line) with the arguments the round's
//! own request carries, which the state's seal is bound to. What a state may carry is
//! whether the person approved the call in an earlier round ([`Approver`]), so that the
//! server's own questions do not ask them again.

use std::time::Duration;

use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, JsonObject,
    RequestStateCodec, SealOptions,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use gatehouse::{
    approvals::Scope,
    caller::CallerName,
    person::{AnsweredBy, Approval, ApprovalRequest},
    text,
};

/// How long the person has to answer before the confirmation expires.
pub const CONFIRMATION_TTL: Duration = Duration::from_secs(10 * 60);
/// The key of the gateway's own question among a round's `inputRequests`.
pub const APPROVE_KEY: &str = "gatehouse.approve";
/// Most characters of the arguments (and of the annotations) shown in the form's
/// message; the rest is cut, and the form says so.
pub const MAX_SHOWN_ARGUMENT_CHARS: usize = 4_000;

/// Who approved a call in an earlier round, as a later round's state carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Approver {
    /// The caller's client, in the gateway's form.
    Client,
    /// A person signed in on the approval page.
    Person,
}

impl Approver {
    /// Who answered an approval, if it was a yes a later round may carry.
    pub fn of(by: AnsweredBy) -> Option<Approver> {
        match by {
            AnsweredBy::Client => Some(Approver::Client),
            AnsweredBy::Page => Some(Approver::Person),
            AnsweredBy::Option
            | AnsweredBy::Terminal
            | AnsweredBy::Browser
            | AnsweredBy::Nobody => None,
        }
    }

    /// The approval a later round is settled with: the same yes, by the same hand.
    pub fn approval(self) -> Approval {
        let by = match self {
            Approver::Client => AnsweredBy::Client,
            Approver::Person => AnsweredBy::Page,
        };
        Approval::once(true, by)
    }
}

/// What a sealed state carries, inside the seal. A state with any other field (an
/// earlier version's `arguments` among them) does not open.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Sealed {
    /// The gateway asked the person to approve a call; its nonce is used once.
    Approve {
        /// Random, 128 bits, as hex.
        nonce: String,
    },
    /// The gateway asked the person on the approval page: the confirmation the page
    /// decides, and the rounds asked so far; its nonce is used once, as an approval's.
    Page {
        /// Random, 128 bits, as hex.
        nonce: String,
        /// The page's confirmation id.
        confirmation: String,
        /// Rounds asked so far.
        rounds: usize,
    },
    /// A server asked the caller's client: its own state, echoed to it byte for byte,
    /// and the rounds relayed so far. The next round sends the arguments its own request
    /// carries (the seal is bound to their digest), as the gate admits them again.
    Relay {
        /// Random, 128 bits, as hex: used once, with the round's ledger line.
        nonce: String,
        /// The server's `requestState`.
        server_state: Option<String>,
        /// Server rounds sent so far.
        rounds: usize,
        /// Who approved the call in an earlier round, if the policy asked.
        approved: Option<Approver>,
    },
    /// A server asked in the middle of a call that one replica holds (an older server's
    /// `elicitation/create`): the held call, and the question it waits on. Used once: its
    /// nonce with the round's ledger line, and the store takes one answer per question
    /// (`store/held.rs`).
    Held {
        /// Random, 128 bits, as hex: used once, with the round's ledger line.
        nonce: String,
        /// The held call's id (128 random bits, as hex).
        call: String,
        /// The question's number in the call, from 1.
        question: usize,
        /// Who approved the call in an earlier round, if the policy asked.
        approved: Option<Approver>,
    },
}

/// What a state is bound to.
pub struct Bound<'a> {
    /// Who calls (`user@tenant`).
    pub caller: &'a CallerName,
    /// The namespaced tool.
    pub tool: &'a str,
    /// The call's arguments.
    pub arguments: &'a JsonObject,
    /// The tool definition's digest.
    pub fingerprint: &'a str,
}

impl Bound<'_> {
    /// Canonical bytes: each part JSON-quoted (no name can imitate another), the
    /// arguments with their keys sorted, so key order does not matter.
    fn bytes(&self) -> Vec<u8> {
        let args = canonical(&Value::Object(self.arguments.clone())).to_string();
        json!([
            "tools/call",
            self.caller.as_str(),
            self.tool,
            gatehouse::digest::sha256_hex(args.as_bytes()),
            self.fingerprint
        ])
        .to_string()
        .into_bytes()
    }
}

/// The same JSON with every object's keys in order.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// Seals and opens states with the key the replicas share.
pub struct Confirmations {
    codec: RequestStateCodec,
    ttl: Duration,
}

impl Confirmations {
    /// With the shared key (at least 32 bytes) and how long a state lives.
    pub fn new(key: Vec<u8>, ttl: Duration) -> Result<Confirmations, String> {
        let codec = RequestStateCodec::try_new(key).map_err(|e| e.to_string())?;
        Ok(Confirmations { codec, ttl })
    }

    /// A new approval's state, with a fresh nonce.
    pub fn approve(&self, bound: &Bound<'_>) -> String {
        self.seal(&Sealed::Approve { nonce: nonce() }, bound)
    }

    /// Seal `what` to `bound`.
    pub fn seal(&self, what: &Sealed, bound: &Bound<'_>) -> String {
        let payload = serde_json::to_vec(what).unwrap_or_default();
        let ad = bound.bytes();
        let options = SealOptions::new().associated_data(&ad).ttl(self.ttl);
        self.codec.seal_with(&payload, &options)
    }

    /// Open a state for `bound`: one error for every way it can fail (minted, edited,
    /// expired, another caller's, other arguments, a changed definition), as the
    /// protocol asks; the detail is for the gateway's own log.
    pub fn open(&self, state: &str, bound: &Bound<'_>) -> Result<Sealed, String> {
        let payload = self
            .codec
            .open_with(state, &bound.bytes())
            .map_err(|e| e.to_string())?;
        serde_json::from_slice(&payload).map_err(|e| e.to_string())
    }
}

/// A fresh nonce: 128 random bits, as hex.
pub fn nonce() -> String {
    let mut nonce = [0u8; 16];
    rand::fill(&mut nonce);
    gatehouse::digest::hex(&nonce)
}

/// The form that asks the person about a call: the exact call in the message, and a
/// yes/no (and, where the policy lets the answer be remembered, whether to).
pub fn approval_form(request: &ApprovalRequest) -> ElicitRequestParams {
    let shown = |v: &Value| {
        let raw = v.to_string();
        text::clip(&text::visible(&raw), MAX_SHOWN_ARGUMENT_CHARS).into_owned()
    };
    let mut message = format!(
        "Run {tool} on {server}?\n\nWhy you are asked: {why}\n\nArguments: {args}",
        tool = text::visible_line(&request.tool),
        server = text::visible_line(&request.server),
        why = text::visible(&request.why),
        args = shown(&request.arguments),
    );
    if let Some(proposed) = &request.proposed {
        message.push_str(&format!(
            "\n\n(rewritten by the beforeCall hook; proposed: {})",
            shown(proposed)
        ));
    }
    if request
        .annotations
        .as_object()
        .is_some_and(|a| !a.is_empty())
    {
        message.push_str(&format!(
            "\n\nThe server describes the tool as (hints, not checked): {}",
            shown(&request.annotations)
        ));
    }
    let mut properties = json!({
        "approve": {"type": "boolean", "title": "Run this call", "default": false},
    });
    if request.may_remember {
        properties["remember"] = json!({
            "type": "boolean", "default": false,
            "title": "Also run this tool, as it is defined now, without asking me again",
        });
    }
    let schema: ElicitationSchema = serde_json::from_value(json!({
        "type": "object", "properties": properties, "required": ["approve"],
    }))
    .expect("the approval form's schema is valid");
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: schema,
    }
}

/// The person's answer to the form: yes only for an accepted form with `approve: true`;
/// anything else (declined, closed, missing, not a boolean) is no, and a `cancel` a no
/// said as the question dismissed ([`not_accepted`]).
pub fn read_answer(answer: &ElicitResult, may_remember: bool) -> Approval {
    let field = |name: &str| {
        answer
            .content
            .as_ref()
            .and_then(|c| c.get(name))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    let yes = answer.action == ElicitationAction::Accept && field("approve");
    if !yes {
        return not_accepted(&answer.action);
    }
    Approval {
        remember: (may_remember && field("remember")).then_some(Scope::Project),
        ..Approval::once(true, AnsweredBy::Client)
    }
}

/// The client's no to the gateway's question (its form, or the approval page's URL):
/// `cancel` is the question dismissed without an answer, anything else a no.
pub fn not_accepted(action: &ElicitationAction) -> Approval {
    match action {
        ElicitationAction::Cancel => Approval::dismissed(AnsweredBy::Client),
        _ => Approval::once(false, AnsweredBy::Client),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(name: &str) -> CallerName {
        CallerName::kept(name.into())
    }

    fn bound<'a>(caller: &'a CallerName, args: &'a JsonObject, fp: &'a str) -> Bound<'a> {
        Bound {
            caller,
            tool: "tickets__open_ticket",
            arguments: args,
            fingerprint: fp,
        }
    }

    #[test]
    fn a_state_opens_only_for_what_it_was_bound_to() {
        let c = Confirmations::new(vec![7; 32], CONFIRMATION_TTL).unwrap();
        let args: JsonObject =
            serde_json::from_value(json!({"a": 1, "b": {"y": 2, "x": 1}})).unwrap();
        let reordered: JsonObject =
            serde_json::from_value(json!({"b": {"x": 1, "y": 2}, "a": 1})).unwrap();
        let other: JsonObject = serde_json::from_value(json!({"a": 2, "b": {}})).unwrap();
        let state = c.approve(&bound(&who("sam@larkfield"), &args, "fp"));
        assert!(matches!(
            c.open(&state, &bound(&who("sam@larkfield"), &reordered, "fp")),
            Ok(Sealed::Approve { .. })
        ));
        assert!(
            c.open(&state, &bound(&who("kim@larkfield"), &args, "fp"))
                .is_err()
        );
        assert!(
            c.open(&state, &bound(&who("sam@larkfield"), &other, "fp"))
                .is_err()
        );
        assert!(
            c.open(&state, &bound(&who("sam@larkfield"), &args, "fp2"))
                .is_err()
        );
        let mut edited = state.clone();
        edited.pop();
        assert!(
            c.open(&edited, &bound(&who("sam@larkfield"), &args, "fp"))
                .is_err()
        );
        let other_key = Confirmations::new(vec![8; 32], CONFIRMATION_TTL).unwrap();
        assert!(
            other_key
                .open(&state, &bound(&who("sam@larkfield"), &args, "fp"))
                .is_err()
        );
    }

    #[test]
    fn a_held_calls_state_names_its_call_and_question_for_its_caller_only() {
        let c = Confirmations::new(vec![7; 32], CONFIRMATION_TTL).unwrap();
        let args: JsonObject = serde_json::from_value(json!({"a": 1})).unwrap();
        let held = Sealed::Held {
            nonce: nonce(),
            call: nonce(),
            question: 2,
            approved: Some(Approver::Client),
        };
        let state = c.seal(&held, &bound(&who("sam@larkfield"), &args, "fp"));
        assert_eq!(
            c.open(&state, &bound(&who("sam@larkfield"), &args, "fp")),
            Ok(held)
        );
        for (caller, fingerprint) in [("omar@larkfield", "fp"), ("sam@larkfield", "fp2")] {
            let caller = who(caller);
            let other = bound(&caller, &args, fingerprint);
            assert!(c.open(&state, &other).is_err(), "{caller} {fingerprint}");
        }
        let expired = Confirmations::new(vec![7; 32], Duration::ZERO).unwrap();
        let state = expired.seal(
            &Sealed::Held {
                nonce: nonce(),
                call: nonce(),
                question: 1,
                approved: None,
            },
            &bound(&who("sam@larkfield"), &args, "fp"),
        );
        std::thread::sleep(Duration::from_millis(5));
        assert!(
            expired
                .open(&state, &bound(&who("sam@larkfield"), &args, "fp"))
                .is_err(),
            "expired"
        );
    }

    #[test]
    fn a_state_carrying_arguments_does_not_open() {
        let key = vec![7; 32];
        let c = Confirmations::new(key.clone(), CONFIRMATION_TTL).unwrap();
        let args: JsonObject = serde_json::from_value(json!({"path": "/"})).unwrap();
        let forged = json!({"kind": "relay", "nonce": nonce(), "server_state": null, "rounds": 1,
                            "approved": null, "arguments": {"path": "/everything"}});
        let sam = who("sam@larkfield");
        let b = bound(&sam, &args, "fp");
        let codec = RequestStateCodec::try_new(key).unwrap();
        let ad = b.bytes();
        let options = SealOptions::new()
            .associated_data(&ad)
            .ttl(CONFIRMATION_TTL);
        let state = codec.seal_with(forged.to_string().as_bytes(), &options);
        let e = c.open(&state, &b).unwrap_err();
        assert!(e.contains("arguments"), "{e}");
        let relay = Sealed::Relay {
            nonce: nonce(),
            server_state: Some("S".into()),
            rounds: 1,
            approved: None,
        };
        let state = c.seal(&relay, &b);
        assert_eq!(c.open(&state, &b), Ok(relay));
    }

    #[test]
    fn only_an_accepted_true_is_yes() {
        let accept = |content: Value| {
            let mut r = ElicitResult::new(ElicitationAction::Accept);
            r.content = Some(content);
            r
        };
        assert!(read_answer(&accept(json!({"approve": true})), false).yes);
        assert!(!read_answer(&accept(json!({"approve": "true"})), false).yes);
        assert!(!read_answer(&accept(json!({})), false).yes);
        let declined = read_answer(&ElicitResult::new(ElicitationAction::Decline), false);
        assert!(!declined.yes && !declined.dismissed);
        let cancelled = read_answer(&ElicitResult::new(ElicitationAction::Cancel), false);
        assert!(!cancelled.yes && cancelled.dismissed, "{cancelled:?}");
        assert!(!read_answer(&accept(json!({"approve": false})), false).dismissed);
        let remembered = read_answer(&accept(json!({"approve": true, "remember": true})), true);
        assert_eq!(remembered.remember, Some(Scope::Project));
        let not_offered = read_answer(&accept(json!({"approve": true, "remember": true})), false);
        assert_eq!(not_offered.remember, None);
    }
}
