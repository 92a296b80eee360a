//! The inspector 2.12.0 `--cli`, a client that declares no forms, in front of the
//! gateway in its legacy and modern eras: it lists the catalog less the hidden tool, and a
//! call the policy asks about is refused with the reason (nobody could be asked), written
//! down as nobody's no.

use serde_json::Value;

use super::*;

fn inspector(gw: &Gw, era: &str, method: &[&str]) -> Value {
    require(
        "inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
        "inspector",
    );
    node22();
    let mut argv: Vec<String> = ["--protocol-era", era, "--format", "json", "-q"]
        .map(String::from)
        .to_vec();
    let state = gw.state.to_string_lossy().into_owned();
    match gw.url() {
        None => {
            argv.extend(["-e", "MCP_USER=usr-sam", "-e", "MCP_TENANT=larkfield"].map(String::from))
        }
        Some(_) => argv.extend(["--header".into(), bearer()]),
    }
    argv.extend(method.iter().map(|m| m.to_string()));
    argv.push("--".into());
    match gw.url() {
        None => {
            let exe = exe().to_string_lossy().into_owned();
            argv.extend([exe, "gateway".into(), "--config".into(), gw.config.clone()]);
            argv.extend(["--state".into(), state]);
        }
        Some(url) => argv.push(url),
    }
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let home = gw.path().join("inspector-home");
    let env = [("INSPECTOR_HOME", home.to_str().unwrap())];
    let ran = run_peer(&script("inspector2.sh"), &argv, &env, None);
    let printed = ran.stdout.lines().next().unwrap_or_default();
    serde_json::from_str(printed).unwrap_or_else(|e| {
        panic!(
            "the inspector printed no JSON ({e}):\n{}\n{}",
            ran.stdout, ran.stderr
        )
    })
}

pub fn the_inspector_lists_the_catalog_and_is_refused_where_it_cannot_show_the_form(t: Transport) {
    let gw = Gw::new(t);
    for era in ["legacy", "modern"] {
        let listed = inspector(&gw, era, &["--method", "tools/list"]);
        let names: Vec<&str> = listed["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{era}: {listed}"))
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(
            names.contains(&ASKED) && !names.contains(&HIDDEN),
            "{era}: {names:?}"
        );
        let called = inspector(
            &gw,
            era,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                ASKED,
                "--tool-arg",
                "hostname=jump-prod-02",
            ],
        );
        let result = &called["result"];
        assert_eq!(result["isError"], true, "{era}: {called}");
        assert!(
            result.to_string().contains("cannot show them a form"),
            "{era}: {called}"
        );
        let lines = gw.ledger();
        let line = last_line_of(&lines, ASKED);
        assert_eq!(
            (&line["answer"], &line["by"]),
            (&"no".into(), &"nobody".into()),
            "{line}"
        );
    }
}
