//! Who approves a gateway's call (issue 27, M2), with the hostile client's recording
//! server (`hostile_client.rs`): a client that answers its own approval form, `remember`
//! included, is written down as the client and remembered nothing unless the servers file
//! lets it (`approvals.rememberFromClient`); with `"via": "page"` the client's form is
//! neither offered nor taken, the page signs people in only at the OAuth issuer (no
//! bearer token), and a gateway without such a page does not start.

use serde_json::{Value, json};

use super::{
    KEY_FILE_ENV,
    hostile_client::Probe,
    http_args, last_line_of,
    page_oauth::{PAGE_CLIENT, SECRET_ENV, page_issuer},
};
use crate::common::{
    http_server::{post, post_raw, request},
    ports::on_a_free_port,
    serve::{SAM_TOKEN, tokens_file},
};

/// The approval form's answer: yes, and remember.
fn yes_and_remember(state: &Value) -> Value {
    json!({"requestState": state, "inputResponses": {"gatehouse.approve":
        {"action": "accept", "content": {"approve": true, "remember": true}}}})
}

#[tokio::test]
async fn a_client_answering_its_own_form_is_the_client_and_remembers_only_where_allowed() {
    for allowed in [false, true] {
        let probe = Probe::start(json!({"approvals": {"rememberFromClient": allowed}}), None);
        let args = json!({"path": "/etc/x"});
        let asked = probe
            .call(SAM_TOKEN, 1, "rec__write", args.clone(), json!({}))
            .await;
        let asked = asked.result(1);
        assert_eq!(asked["resultType"], "input_required", "{asked}");
        let form = &asked["inputRequests"]["gatehouse.approve"]["params"];
        let offered = &form["requestedSchema"]["properties"];
        assert!(offered["approve"].is_object(), "{asked}");
        assert_eq!(offered["remember"].is_object(), allowed, "{asked}");

        let answer = yes_and_remember(&asked["requestState"]);
        let r = probe
            .call(SAM_TOKEN, 2, "rec__write", args.clone(), answer)
            .await;
        assert_eq!(r.result(2)["content"][0]["text"], "ran write", "{}", r.text);
        let lines = probe.ledger();
        let line = last_line_of(&lines, "rec__write");
        assert_eq!(
            (&line["decision"], &line["answer"], &line["by"]),
            (&json!("asked"), &json!("yes"), &json!("client")),
            "{line}"
        );

        // Asked again, unless the servers file lets a client's `remember` stand.
        let again = probe
            .call(SAM_TOKEN, 3, "rec__write", args, json!({}))
            .await;
        let again = again.result(3);
        match allowed {
            false => assert_eq!(again["resultType"], "input_required", "{again}"),
            true => {
                assert_eq!(again["content"][0]["text"], "ran write", "{again}");
                let lines = probe.ledger();
                assert_eq!(last_line_of(&lines, "rec__write")["rule"], "project");
            }
        }
        assert_eq!(
            probe.ran().len(),
            if allowed { 2 } else { 1 },
            "{:?}",
            probe.ran()
        );
    }
}

/// The probe's rules with `rec__write` asked on the page only.
fn page_only() -> Value {
    json!({"rules": [{"tool": "rec__delete", "decision": "deny"},
                     {"tool": "rec__write", "decision": "ask", "via": "page"}]})
}

#[test]
fn with_via_page_a_gateway_without_an_interactive_page_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = Probe::world(dir.path(), page_only(), None);
    let tokens = tokens_file(dir.path());
    let key = dir.path().join("gateway.key");
    let env = [(KEY_FILE_ENV, key.to_str().unwrap())];
    let base = ["--tokens", tokens.to_str().unwrap()];
    let with_page = ["--approval-page", "http://127.0.0.1:1"];
    for flags in [&base[..], &[&base[..], &with_page[..]].concat()] {
        let mut args = http_args(&config, "127.0.0.1:0", state.to_str().unwrap());
        args.extend_from_slice(flags);
        let ran = crate::common::run(&args, &env);
        assert_ne!(ran.status, 0, "{flags:?}: it started");
        assert!(
            ran.stderr.contains("asks a person on the approval page")
                && ran.stderr.contains("--oauth-issuer"),
            "{flags:?}: {}",
            ran.stderr
        );
    }
}

#[tokio::test]
async fn with_via_page_the_clients_form_is_neither_offered_nor_taken() {
    let (id, secret) = PAGE_CLIENT;
    let mut dir = Some(tempfile::tempdir().unwrap());
    let world = Probe::world(dir.as_ref().unwrap().path(), page_only(), None);
    // The page's callback is registered at the issuer before the gateway binds its port:
    // on another port, both again.
    let (probe, _issuer, base) = on_a_free_port("the gateway with its page", |port| {
        let base = format!("http://127.0.0.1:{port}");
        let issuer = page_issuer(&base);
        let flags = [
            "--oauth-issuer",
            &issuer.url,
            "--approval-page",
            &base,
            "--approval-page-client-id",
            id,
            "--approval-page-wait",
            "1",
        ];
        let addr = format!("127.0.0.1:{port}");
        let folder = dir.take().expect("the test's folder");
        let env = [(SECRET_ENV, secret)];
        match Probe::try_start_in(folder, world.clone(), &addr, (&flags, &env)) {
            Ok(probe) => Ok((probe, issuer, base)),
            Err((taken, folder)) => {
                dir = Some(folder);
                Err(taken)
            }
        }
    });
    let args = json!({"path": "/etc/x"});

    // A client that shows forms only: no form, refused, nobody's no.
    let r = probe
        .call(SAM_TOKEN, 1, "rec__write", args.clone(), json!({}))
        .await;
    let refused = r.result(1);
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused.to_string().contains("approval page"), "{refused}");
    let line = last_line_of(&probe.ledger(), "rec__write").clone();
    assert_eq!(
        (&line["answer"], &line["by"]),
        (&json!("no"), &json!("nobody")),
        "{line}"
    );

    // A client that takes URL questions too: sent to the page, never the form; its own
    // "yes" in the answer approves nothing (asked again, with the same URL).
    let mut body = request(
        2,
        "tools/call",
        json!({"name": "rec__write", "arguments": args}),
    );
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {"form": {}, "url": {}}});
    let asked = post(&probe.gw.url, Some(SAM_TOKEN), &body).await;
    let asked = asked.result(2).clone();
    let question = &asked["inputRequests"]["gatehouse.approve"]["params"];
    assert_eq!(question["mode"], "url", "{asked}");
    assert!(question["requestedSchema"].is_null(), "{asked}");
    let url = question["url"].as_str().unwrap().to_owned();
    body["id"] = json!(3);
    body["params"]["requestState"] = asked["requestState"].clone();
    body["params"]["inputResponses"] = json!({"gatehouse.approve":
        {"action": "accept", "content": {"approve": true, "remember": true}}});
    let again = post(&probe.gw.url, Some(SAM_TOKEN), &body).await;
    let again = again.result(3);
    assert_eq!(again["resultType"], "input_required", "{again}");
    assert_eq!(
        again["inputRequests"]["gatehouse.approve"]["params"]["url"],
        url
    );
    assert!(probe.ran().is_empty(), "{:?}", probe.ran());

    // The page takes no bearer token: its token sign-in is not there.
    let sign_in = format!("{url}/sign-in");
    let form = format!("token={SAM_TOKEN}");
    let headers = [("Origin".to_owned(), base.clone())];
    let tried = post_raw(&sign_in, None, &headers, form).await;
    assert!(
        matches!(tried.status, 404 | 405),
        "{} {}",
        tried.status,
        tried.text
    );
}
