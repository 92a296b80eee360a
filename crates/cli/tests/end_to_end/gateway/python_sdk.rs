//! The Python SDK client drives the gateway as it would any server: it lists the
//! catalog, answers the gateway's approval form (or declines it), and answers a
//! server's own question relayed by the gateway. Every decision is a ledger line naming
//! the caller. `--config builtin` puts the gateway in front of the built-in servers, as
//! it does for `ask` and `tools`.

use serde_json::json;

use super::*;
use crate::common::run;
use crate::interop_foreign_clients::python_sdk::call_args;

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

pub fn lists_the_catalog_less_what_a_deny_rule_hides(t: Transport) {
    let gw = Gw::new(t);
    let out = gw.client("auto", &[]);
    assert_eq!(out["protocolVersion"], "2026-07-28", "{out}");
    assert_eq!(out["serverInfo"]["name"], "gatehouse-gateway");
    let names = tool_names(&out);
    for expected in [ASKED, "tickets__open_ticket", "tickets__list_tickets"] {
        assert!(names.contains(&expected.to_owned()), "{names:?}");
    }
    assert!(!names.contains(&HIDDEN.to_owned()), "{names:?}");
    // A hidden tool called anyway is refused by its rule, and written down.
    let mut argv = call_args(HIDDEN, &json!({"query": "jump"}));
    argv.push("--no-list".into());
    let out = gw.client("auto", &strs(&argv));
    let result = &out["calls"][0]["result"];
    assert_eq!(result["isError"], true, "{out}");
    let lines = gw.ledger();
    let line = last_line_of(&lines, HIDDEN);
    assert_eq!(line["decision"], "denied", "{line}");
    assert_eq!(line["rule"], "rules[0]", "{line}");
    assert_eq!(line["caller"], "usr-sam@larkfield", "{line}");
}

/// The approval asked in `mode`: the form shows the exact call and the rule's reason; a
/// yes runs it, a no does not; both are ledger lines by the person via their client.
fn approves(t: Transport, mode: &str, protocol: &str) {
    let gw = Gw::new(t);
    let mut argv = call_args(ASKED, &asked_args());
    argv.extend(["--no-list", "--answer", "approve=true"].map(String::from));
    let out = gw.client(mode, &strs(&argv));
    assert_eq!(out["protocolVersion"], protocol, "{out}");
    let forms = out["elicitations"]
        .as_array()
        .expect("the client was asked");
    assert_eq!(forms.len(), 1, "{out}");
    let message = forms[0]["message"].as_str().unwrap();
    for part in [
        ASKED,
        "on cmdb",
        "asset records are private",
        "jump-prod-02",
    ] {
        assert!(
            message.contains(part),
            "{part:?} not in the form: {message}"
        );
    }
    let result = &out["calls"][0]["result"];
    assert_eq!(result["isError"], false, "{out}");
    assert_eq!(result["structuredContent"]["hostname"], "jump-prod-02");
    let lines = gw.ledger();
    let line = last_line_of(&lines, ASKED);
    assert_approved_in_the_client(line, "usr-sam@larkfield");
    // On 2026-07-28 the yes used a confirmation up; older clients answer inside the call.
    assert_eq!(
        line["confirmation"].is_string(),
        protocol == "2026-07-28",
        "{line}"
    );

    let mut argv = call_args(ASKED, &asked_args());
    argv.extend(["--no-list", "--decline"].map(String::from));
    let out = gw.client(mode, &strs(&argv));
    let result = &out["calls"][0]["result"];
    assert_eq!(result["isError"], true, "{out}");
    assert!(result.to_string().contains("declined"), "{result}");
    assert!(result["structuredContent"].is_null(), "{result}");
    let lines = gw.ledger();
    assert_eq!(last_line_of(&lines, ASKED)["answer"], "no");
    assert_ledger_verifies(&gw.ledger);
}

/// A form closed without an answer (`cancel`) runs nothing and is said as such, not as
/// the person's no: in the result the client gets and in the ledger (`dismissed`), on
/// 2026-07-28 (the form in a round) and on 2025-11-25 (`elicitation/create`) alike.
#[test]
fn a_dismissed_form_runs_nothing_and_is_not_called_a_decline() {
    let gw = Gw::new(Transport::Stdio);
    let ask = |mode: &str, answer: &str| {
        let mut argv = call_args(ASKED, &asked_args());
        argv.extend(["--no-list", answer].map(String::from));
        let out = gw.client(mode, &strs(&argv));
        assert_eq!(
            out["elicitations"].as_array().map(Vec::len),
            Some(1),
            "{out}"
        );
        let result = out["calls"][0]["result"].clone();
        assert_eq!(result["isError"], true, "{mode}: {out}");
        assert!(result["structuredContent"].is_null(), "{mode}: {result}");
        (
            result.to_string(),
            last_line_of(&gw.ledger(), ASKED).clone(),
        )
    };
    for mode in ["auto", "legacy"] {
        let (text, line) = ask(mode, "--cancel");
        assert!(
            text.contains(
                "the person dismissed the question without answering; the call was not run"
            ),
            "{mode}: {text}"
        );
        assert!(!text.contains("declined"), "{mode}: {text}");
        assert_eq!(
            (&line["answer"], &line["by"], &line["dismissed"]),
            (&json!("no"), &json!("client"), &json!(true)),
            "{mode}: {line}"
        );
        let (text, line) = ask(mode, "--decline");
        assert!(
            text.contains("the person declined this call"),
            "{mode}: {text}"
        );
        assert_eq!(line["answer"], "no", "{mode}: {line}");
        assert!(line.get("dismissed").is_none(), "{mode}: {line}");
    }
    assert_ledger_verifies(&gw.ledger);
}

pub fn the_person_approves_in_the_gateways_form_on_2026_07_28(t: Transport) {
    approves(t, "auto", "2026-07-28");
}

pub fn the_person_approves_through_elicitation_create_on_2025_11_25(t: Transport) {
    approves(t, "legacy", "2025-11-25");
}

/// tickets asks its own question (the priority): the gateway passes it to the client
/// and the client's answer to tickets, in both eras; the gateway answers nothing itself.
pub fn a_servers_own_question_reaches_the_client_and_its_answer_the_server(t: Transport) {
    let gw = Gw::new(t);
    for (mode, priority) in [("auto", "P2"), ("legacy", "P3")] {
        let mut argv = call_args(
            "tickets__open_ticket",
            &json!({"host": "jump-prod-02", "summary": "disk full"}),
        );
        argv.extend([
            "--no-list".into(),
            "--answer".into(),
            format!("priority={priority}"),
        ]);
        let out = gw.client(mode, &strs(&argv));
        let forms = out["elicitations"]
            .as_array()
            .expect("the client was asked");
        assert_eq!(forms.len(), 1, "{mode}: {out}");
        assert!(
            forms[0]["message"]
                .as_str()
                .unwrap()
                .contains("Open an incident ticket"),
            "{mode}: {out}"
        );
        let ticket = &out["calls"][0]["result"]["structuredContent"];
        assert_eq!(ticket["priority"], priority, "{mode}: {out}");
    }
    // Declined in the client: tickets hears the decline, and opens nothing.
    let mut argv = call_args(
        "tickets__open_ticket",
        &json!({"host": "jump-prod-02", "summary": "again"}),
    );
    argv.extend(["--no-list", "--decline"].map(String::from));
    argv.extend(call_args("tickets__list_tickets", &json!({})));
    let out = gw.client("auto", &strs(&argv));
    assert_eq!(out["calls"][0]["result"]["isError"], true, "{out}");
    assert_eq!(
        out["calls"][1]["result"]["structuredContent"]["total"], 2,
        "{out}"
    );
}

/// `--config builtin` names the built-in servers for the gateway too; a servers file that
/// is not there is said once, with its cause once, by the gateway as by the other commands.
#[test]
fn the_gateway_takes_config_builtin_and_a_missing_file_is_said_once() {
    let gw = Gw::with_config(Transport::Stdio, |_| "builtin".into());
    let out = gw.client("auto", &[]);
    let names = tool_names(&out);
    for expected in [
        "support__get_ticket",
        "cmdb__get_asset",
        "orders__export_report",
    ] {
        assert!(names.contains(&expected.to_owned()), "{names:?}: {out}");
    }
    let missing = gw.path().join("nowhere.json");
    let missing = missing.to_str().unwrap();
    let said = format!("gatehouse: cannot read {missing}: there is no such file\n");
    for command in [&["gateway"][..], &["tools"], &["ask", "hi"]] {
        let mut args = command.to_vec();
        args.extend(["--config", missing]);
        let ran = run(&args, &[]);
        assert_eq!(
            (ran.status, ran.stderr.as_str()),
            (2, said.as_str()),
            "{args:?}"
        );
    }
}
