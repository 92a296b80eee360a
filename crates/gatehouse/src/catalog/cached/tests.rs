use serde_json::{Value, json};

use super::*;
use crate::config::name::server_name;

fn config(servers: Value) -> Config {
    Config::from_value(
        json!({"mcpServers": servers}),
        "/p/servers.json",
        &crate::config::Identity::default(),
    )
    .unwrap()
}

fn two() -> Config {
    config(json!({"a": {"command": "a"}, "b": {"command": "b", "args": ["x"]}}))
}

fn listing(server: &str, tool: &str) -> Listing {
    Listing {
        server: server_name(server),
        tools: vec![
            serde_json::from_value(json!({"name": tool, "inputSchema": {"type": "object"},
                "annotations": {"readOnlyHint": true}}))
            .unwrap(),
        ],
        listed_at: std::time::Instant::now(),
        ttl: Duration::ZERO,
    }
}

fn at(seconds: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000 + seconds)
}

fn kept(dir: &Path, config: &Config) -> PathBuf {
    let path = path(dir, &config.source);
    save(&path, config, &[listing("a", "read")], false, at(0)).unwrap();
    path
}

#[test]
fn a_start_is_kept_and_read_back_as_its_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let config = two();
    let path = kept(dir.path(), &config);
    let cached = load(&path, &config, None, at(60)).unwrap();
    assert_eq!(cached.taken_at, at(0));
    assert_eq!(cached.not_started, ["b"]);
    let tool = cached.catalog.get("a__read").unwrap();
    assert_eq!(
        tool.tool.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    // The host's own tools are there as at a start.
    assert!(cached.catalog.get(crate::catalog::SEARCH_TOOLS).is_some());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn a_changed_entry_or_a_new_server_is_never_served_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let path = kept(dir.path(), &two());
    let changed = config(json!({"a": {"command": "a"}, "b": {"command": "b", "args": ["y"]}}));
    assert_eq!(
        load(&path, &changed, None, at(1)).err(),
        Some(Unusable::Changed {
            server: server_name("b")
        })
    );
    let added = config(
        json!({"a": {"command": "a"}, "b": {"command": "b", "args": ["x"]},
        "c": {"command": "c"}}),
    );
    assert_eq!(
        load(&path, &added, None, at(1)).err(),
        Some(Unusable::Changed {
            server: server_name("c")
        })
    );
    // A server taken out of the file is simply not used.
    let fewer = config(json!({"a": {"command": "a"}}));
    assert!(load(&path, &fewer, None, at(1)).is_ok());
}

#[test]
fn an_old_missing_or_future_catalog_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let config = two();
    assert_eq!(
        load(&path(dir.path(), &config.source), &config, None, at(0)).err(),
        Some(Unusable::Missing)
    );
    let path = kept(dir.path(), &config);
    let late = at(FRESH_FOR.as_secs() + 1);
    assert_eq!(
        load(&path, &config, None, late).err(),
        Some(Unusable::Stale)
    );
    let before = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    assert!(matches!(
        load(&path, &config, None, before),
        Err(Unusable::Corrupt(why)) if why.contains("in the future")
    ));
}

#[test]
fn a_corrupt_or_foreign_file_is_ignored_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let config = two();
    let path = kept(dir.path(), &config);
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for (change, says) in [
        (json!({"format": 2}), "another form"),
        (json!({"source": "/elsewhere.json"}), "another servers file"),
        (json!({"granted": true}), "not a catalog"),
        (
            json!({"servers": {"a": {"entry": "x", "tools": [{"name": 7}]}}}),
            "not a catalog",
        ),
    ] {
        let mut bad = doc.clone();
        bad.as_object_mut()
            .unwrap()
            .extend(change.as_object().unwrap().clone());
        std::fs::write(&path, bad.to_string()).unwrap();
        let err = load(&path, &config, None, at(1)).err().unwrap();
        assert!(
            matches!(&err, Unusable::Corrupt(why) if why.contains(says)),
            "{change}: {err:?}"
        );
    }
    std::fs::write(&path, "{\"format\": 1, ").unwrap();
    assert!(matches!(
        load(&path, &config, None, at(1)),
        Err(Unusable::Corrupt(_))
    ));
    // Over the bound: not read at all.
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(MAX_CACHED_CATALOG_BYTES + 1).unwrap();
    assert!(matches!(
        load(&path, &config, None, at(1)),
        Err(Unusable::Unreadable(why)) if why.contains("larger than")
    ));
    doc["offers_resources"] = json!(true);
    std::fs::write(&path, doc.to_string()).unwrap();
    assert!(load(&path, &config, None, at(1)).is_ok());
}

#[test]
fn a_tool_that_a_start_would_leave_out_is_left_out_here_too() {
    let dir = tempfile::tempdir().unwrap();
    let config = two();
    let path = path(dir.path(), &config.source);
    save(
        &path,
        &config,
        &[listing("a", "bad\u{202e}name")],
        false,
        at(0),
    )
    .unwrap();
    let cached = load(&path, &config, None, at(1)).unwrap();
    assert!(cached.catalog.tools().is_empty());
    assert_eq!(cached.catalog.left_out.len(), 1);
}

#[test]
fn a_catalog_over_the_bound_is_not_kept_and_the_older_one_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let config = two();
    let path = kept(dir.path(), &config);
    let size = std::fs::metadata(&path).unwrap().len();
    // The same catalog within its own size is kept; a byte less, it is not.
    let listings = [listing("a", "read")];
    assert!(save_within(&path, &config, &listings, false, at(0), size).is_ok());
    let why = save_within(&path, &config, &listings, false, at(0), size - 1).unwrap_err();
    assert!(why.contains("not cached"), "{why}");
    assert!(!path.exists(), "the older catalog is removed");
    let left: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "nothing half-written is left: {left:?}");
}
