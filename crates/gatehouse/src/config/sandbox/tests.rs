use std::path::Path;

use serde_json::json;

use super::*;

fn parse(value: serde_json::Value) -> Result<Option<Sandbox>, String> {
    let home = |s: &str| Ok(s.replace('~', "/home/ana"));
    Sandbox::parse(Some(&value), &home)
}

#[test]
fn an_entry_s_sandbox_is_none_the_defaults_or_checked_when_read() {
    assert_eq!(Sandbox::parse(None, &|s| Ok(s.into())), Ok(None));
    assert_eq!(parse(json!(false)), Ok(None));
    assert_eq!(parse(json!(true)), Ok(Some(Sandbox::default())));
    let s = parse(
        json!({"read": ["~/data"], "write": ["/srv/out"], "network": "on",
                         "processes": 32, "openFiles": 256, "memoryMb": 512}),
    )
    .unwrap()
    .unwrap();
    assert_eq!(s.read, [Path::new("/home/ana/data")]);
    assert_eq!(s.write, [Path::new("/srv/out")]);
    assert_eq!(
        (s.network, s.processes, s.open_files, s.memory_mb),
        (Network::On, 32, 256, Some(512))
    );
    for (bad, says) in [
        (json!("yes"), "must be true, false or an object"),
        (json!({"net": "off"}), "unknown key \"net\""),
        (
            json!({"network": "some"}),
            "\"network\" must be \"off\" or \"on\"",
        ),
        (json!({"read": "/srv"}), "must be an array of folders"),
        (json!({"read": ["data"]}), "is not an absolute path"),
        (json!({"write": [7]}), "must hold folder paths"),
        (
            json!({"processes": 0}),
            "\"processes\" must be a whole number from 1",
        ),
        (
            json!({"memoryMb": 1}),
            "\"memoryMb\" must be a whole number from 16",
        ),
        (
            json!({"openFiles": -3}),
            "\"openFiles\" must be a whole number",
        ),
    ] {
        let e = parse(bad.clone()).unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
    }
    let many: Vec<String> = (0..=MAX_FOLDERS).map(|i| format!("/d{i}")).collect();
    assert!(
        parse(json!({"read": many}))
            .unwrap_err()
            .contains("more than 64")
    );
}
