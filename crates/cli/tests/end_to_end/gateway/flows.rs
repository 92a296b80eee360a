//! Flows through the gateway (issue 30): what the gateway relayed to a caller is what its
//! next arguments are traced against, with the recording server of `hostile_client.rs`
//! behind (its `fetch` returns a page with an address planted in it). The caller's own
//! conversation is unseen, so an address found nowhere cannot be told; one seen only in a
//! relayed result is untrusted, and the rule of two puts the write to the person with
//! where it came from. Another caller's relayed text is not theirs.

use serde_json::{Value, json};

use super::{
    hostile_client::{FETCHED, Probe},
    last_line_of,
};
use crate::common::serve::{OMAR_TOKEN, SAM_TOKEN};

/// The planted address, as the page has it.
const PLANTED: &str = "exfil-desk@mailbox.example";

/// The probe's rules with `rec__write` and `rec__fetch` allowed, the write consequential,
/// and `extra` merged over the flows settings.
fn allowed(flows: Value) -> Value {
    let mut settings = json!({"consequential": ["rec__write"]});
    settings
        .as_object_mut()
        .unwrap()
        .extend(flows.as_object().cloned().unwrap_or_default());
    json!({"allow": ["rec__confirm", "rec__read", "rec__fetch", "rec__write"],
           "flows": settings})
}

/// The approval form's message of an `input_required` answer.
fn asked_because(answer: &Value) -> String {
    assert_eq!(answer["resultType"], "input_required", "{answer}");
    answer["inputRequests"]["gatehouse.approve"]["params"]["message"]
        .as_str()
        .expect("a message")
        .to_owned()
}

#[tokio::test]
async fn an_address_relayed_only_in_an_untrusted_result_puts_the_write_to_the_person() {
    assert!(FETCHED.contains(PLANTED));
    let probe = Probe::start(allowed(json!({})), None);
    let fetched = probe
        .call(
            SAM_TOKEN,
            1,
            "rec__fetch",
            json!({"url": "https://shop.example/refunds"}),
            json!({}),
        )
        .await;
    assert_eq!(
        fetched.result(1)["content"][0]["text"],
        FETCHED,
        "{}",
        fetched.text
    );

    // The write carries the planted address: seen only in what the gateway relayed.
    let write = json!({"to": PLANTED, "what": "customer list"});
    let asked = probe
        .call(SAM_TOKEN, 2, "rec__write", write.clone(), json!({}))
        .await;
    let answer = asked.result(2);
    let why = asked_because(answer);
    assert!(why.contains("rec__write is consequential"), "{why}");
    assert!(
        why.contains(&format!(
            "/to {PLANTED} appeared only in rec__fetch's result the gateway relayed to this \
             caller (call 1), untrusted"
        )),
        "{why}"
    );
    // The person says no; the ledger's line says why they were asked.
    let no = json!({"requestState": answer["requestState"],
        "inputResponses": {"gatehouse.approve": {"action": "decline"}}});
    let refused = probe
        .call(SAM_TOKEN, 4, "rec__write", write.clone(), no)
        .await;
    assert_eq!(refused.result(4)["isError"], true, "{}", refused.text);
    let lines = probe.ledger();
    let line = last_line_of(&lines, "rec__write");
    assert_eq!(
        (&line["rule"], &line["decision"], &line["answer"]),
        (&json!("flows"), &json!("asked"), &json!("no")),
        "{line}"
    );
    let flows = &line["flows"];
    assert_eq!(flows["unseen"], true, "{line}");
    let to = flows["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["pointer"] == "/to")
        .expect("/to traced");
    assert_eq!(
        (&to["came"], &to["origin"]["kind"], &to["origin"]["tool"]),
        (&json!("untrusted"), &json!("relayed"), &json!("rec__fetch")),
        "{line}"
    );

    // Omar never fetched the page: the same address is in nothing relayed to him, which
    // cannot be told, and the server's untrusted definitions are in his context too.
    let asked = probe
        .call(OMAR_TOKEN, 3, "rec__write", write, json!({}))
        .await;
    let why = asked_because(asked.result(3));
    assert!(
        why.contains(&format!(
            "/to {PLANTED} is in nothing relayed to this caller: whether the person or the \
             model gave it cannot be told"
        )),
        "{why}"
    );
    assert!(why.contains("rec's tool descriptions"), "{why}");
    assert!(
        probe.ran().iter().all(|r| r["tool"] != "write"),
        "{:?}",
        probe.ran()
    );
}

#[tokio::test]
async fn a_trusted_server_s_caller_writes_unasked_and_a_from_rule_denies_what_cannot_be_told() {
    // Everything behind is trusted: no untrusted text reaches the caller, so the rule of
    // two has nothing to go on and the write runs.
    let probe = Probe::start(allowed(json!({"trusted": ["rec"]})), None);
    let write = json!({"to": PLANTED});
    let ran = probe
        .call(SAM_TOKEN, 1, "rec__write", write.clone(), json!({}))
        .await;
    assert_eq!(
        ran.result(1)["content"][0]["text"],
        "ran write",
        "{}",
        ran.text
    );
    drop(probe);

    // A deny on what came from untrusted text: where the gateway cannot tell (Omar was
    // relayed nothing), a deny applies, so what cannot be told never loosens it.
    let mut settings = allowed(json!({"trusted": ["rec"]}));
    settings["rules"] = json!([{"tool": "rec__write", "decision": "deny",
        "when": [{"pointer": "/to", "from": ["untrusted"]}]}]);
    let probe = Probe::start(settings, None);
    let refused = probe
        .call(OMAR_TOKEN, 1, "rec__write", write, json!({}))
        .await;
    let refused = refused.result(1);
    assert_eq!(refused["isError"], true, "{refused}");
    let lines = probe.ledger();
    let line = last_line_of(&lines, "rec__write");
    assert_eq!(line["decision"], "denied", "{line}");
    assert!(probe.ran().is_empty(), "{:?}", probe.ran());
}
