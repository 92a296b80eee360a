//! The official TypeScript SDK's client (1.32.2, `initialize` at 2025-11-25) drives the
//! gateway as it would any server: it lists the catalog less what a deny rule hides, and
//! the person answers the gateway's approval form in it (`elicitation/create`), yes or no.

use serde_json::json;

use super::*;
use crate::interop_foreign_clients::python_sdk::call_args;

pub fn the_typescript_sdk_client_lists_the_catalog_and_answers_the_approval_form(t: Transport) {
    let gw = Gw::new(t);
    let out = gw.ts_client(&[]);
    assert_eq!(out["protocolVersion"], "2025-11-25", "{out}");
    assert_eq!(out["serverInfo"]["name"], "gatehouse-gateway", "{out}");
    let names = tool_names(&out);
    assert!(names.contains(&ASKED.to_owned()), "{names:?}");
    assert!(!names.contains(&HIDDEN.to_owned()), "{names:?}");

    // Yes: the form shows the call and the rule's reason, and the call runs.
    let mut argv = call_args(ASKED, &asked_args());
    argv.extend(["--no-list", "--answer", "approve=true"].map(String::from));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = gw.ts_client(&argv);
    let forms = out["elicitations"]
        .as_array()
        .expect("the client was asked");
    assert_eq!(forms.len(), 1, "{out}");
    let message = forms[0]["message"].as_str().unwrap_or_default();
    for part in [ASKED, "asset records are private", "jump-prod-02"] {
        assert!(
            message.contains(part),
            "{part:?} not in the form: {message}"
        );
    }
    let result = &out["calls"][0]["result"];
    assert_eq!(result["isError"], false, "{out}");
    assert_eq!(
        result["structuredContent"]["hostname"], "jump-prod-02",
        "{out}"
    );
    let lines = gw.ledger();
    let line = last_line_of(&lines, ASKED);
    assert_eq!(line["answer"], "yes", "{line}");
    assert_eq!(line["by"], "client", "{line}");

    // No: declined in the form, the call does not run.
    let mut argv = call_args(ASKED, &json!({"hostname": "db-prod-01"}));
    argv.extend(["--no-list", "--decline"].map(String::from));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = gw.ts_client(&argv);
    assert_eq!(out["calls"][0]["result"]["isError"], true, "{out}");
    let lines = gw.ledger();
    let line = last_line_of(&lines, ASKED);
    assert_eq!(line["answer"], "no", "{line}");
    assert_eq!(line["arguments"]["hostname"], "db-prod-01", "{line}");
}
