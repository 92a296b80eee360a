//! SEP-2243's `Mcp-Param-*` headers through the gateway, in front of the conformance
//! fixture (its `test_x_mcp_header` mirrors `region` into `Mcp-Param-Region`) behind an
//! HTTP tap: the gateway checks a call's headers against the tool's `x-mcp-header`
//! arguments as a server does (a missing or mismatched one is -32020, and nothing is sent
//! on), and its own call to the server behind carries the header the tool declares
//! (Base64-wrapped when the value cannot travel bare).

use serde_json::{Value, json};

use super::*;
use crate::common::{
    http_server::{Answer, post_raw, request, standard_headers},
    serve::SAM_TOKEN,
    servers_file,
};

/// A `test_x_mcp_header` call with `region` in its arguments and these extra headers.
async fn call_region(url: &str, id: i64, region: &str, extra: &[(&str, &str)]) -> Answer {
    let body = request(
        id,
        "tools/call",
        json!({"name": "test_x_mcp_header", "arguments": {"region": region}}),
    );
    let mut headers = standard_headers(&body);
    headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    post_raw(url, Some(SAM_TOKEN), &headers, body.to_string()).await
}

/// The `Mcp-Param-Region` header of each `tools/call` the tap passed to the fixture.
fn regions_sent(log: &Path) -> Vec<Value> {
    http_exchanges(&tapped(log))
        .iter()
        .filter(|e| {
            e["body"]
                .as_array()
                .is_some_and(|b| b.iter().any(|m| m["method"] == "tools/call"))
        })
        .map(|e| e["headers"]["mcp-param-region"].clone())
        .collect()
}

#[tokio::test]
async fn mcp_param_headers_are_checked_in_front_and_sent_behind() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = crate::conformance::start_fixture();
    let log = dir.path().join("tap.log");
    let tap = http_tap(&fixture.url, &log);
    let config = servers_file(
        dir.path(),
        json!({"fixture": crate::common::http_server(&tap.url, json!({}))}),
        json!({"gatewayNames": "unprefixed",
               "rules": [{"tool": "fixture__*", "decision": "allow"}]}),
    );
    let state = dir.path().join("state.db");
    let gw = start_gateway(dir.path(), &config, state.to_str().unwrap());

    let ok = call_region(
        &gw.url,
        1,
        "eu-west-1",
        &[("Mcp-Param-Region", "eu-west-1")],
    )
    .await;
    assert_eq!(ok.result(1)["content"][0]["text"], "region=eu-west-1");
    // A value that cannot travel bare, sent Base64-wrapped, decoded and compared.
    let wrapped = "=?base64?w6lzdHVhaXJlIOKAlCBub3Jk?=";
    let odd = call_region(
        &gw.url,
        2,
        "éstuaire — nord",
        &[("Mcp-Param-Region", wrapped)],
    )
    .await;
    assert_eq!(
        odd.result(2)["content"][0]["text"],
        "region=éstuaire — nord"
    );

    // Refused in front, before the policy or the server behind sees them.
    let mismatched = call_region(
        &gw.url,
        3,
        "eu-west-1",
        &[("Mcp-Param-Region", "us-east-1")],
    );
    let mismatched = mismatched.await;
    assert_eq!(mismatched.error_code(3), -32020, "{}", mismatched.text);
    let missing = call_region(&gw.url, 4, "eu-west-1", &[]).await;
    assert_eq!(missing.error_code(4), -32020, "{}", missing.text);
    assert!(
        missing.reply(4)["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Mcp-Param-Region")),
        "{}",
        missing.text
    );
    let bad_base64 = call_region(
        &gw.url,
        5,
        "Hello",
        &[("Mcp-Param-Region", "=?base64?SGVs!!!bG8=?=")],
    );
    assert_eq!(bad_base64.await.error_code(5), -32020);

    // Behind, the gateway's own two calls carried the header the tool declares.
    assert_eq!(
        regions_sent(&log),
        [json!("eu-west-1"), json!(wrapped)],
        "{:#?}",
        http_exchanges(&tapped(&log))
    );
}
