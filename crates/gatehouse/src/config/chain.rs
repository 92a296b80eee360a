//! The chain of hosts that started this one: a servers file that leads back to itself (a
//! gateway listed as a server of its own file, directly or through others) is refused at
//! once, and chains of hosts have a bounded depth, so no entry can make the host start
//! itself without end.
//!
//! Each host tells the stdio servers it starts which servers files are already in use
//! above them ([`CHAIN_ENV`], a JSON list of canonical paths): the one variable of the
//! host's own that a server gets beside what its entry names. A host started with a
//! file already in that list, or below [`MAX_CHAIN_DEPTH`] hosts, does not start.

use std::path::PathBuf;

use serde_json::Value;

use super::{Config, ConfigError, Transport};

/// The variable that carries the chain to a server.
pub const CHAIN_ENV: &str = "GATEHOUSE_CHAIN";
/// Most hosts in one chain (a gateway in front of a gateway in front of …).
pub const MAX_CHAIN_DEPTH: usize = 4;
/// Longest value of [`CHAIN_ENV`] read, in bytes.
pub const MAX_CHAIN_BYTES: usize = 64 * 1024;

/// The servers files in use above this host, from its environment; an empty list when
/// it was not started by a host.
pub fn inherited() -> Result<Vec<String>, ConfigError> {
    let Some(value) = std::env::var_os(CHAIN_ENV).filter(|v| !v.is_empty()) else {
        return Ok(Vec::new());
    };
    let invalid = |message: String| ConfigError::Invalid {
        path: format!("${CHAIN_ENV}"),
        message,
    };
    let text = value
        .into_string()
        .map_err(|_| invalid("is not text".into()))?;
    if text.len() > MAX_CHAIN_BYTES {
        return Err(invalid(format!("is longer than {MAX_CHAIN_BYTES} bytes")));
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(items)) if items.iter().all(Value::is_string) => Ok(items
            .into_iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect()),
        _ => Err(invalid(
            "must be a JSON list of servers files (the host that started this one sets it)".into(),
        )),
    }
}

/// Check that `files` (what this host reads) are not already in use above it and that
/// the chain is not too deep; then give every stdio server the chain with them added.
pub fn enter(config: &mut Config, files: &[PathBuf]) -> Result<(), ConfigError> {
    enter_below(config, files, inherited()?)
}

/// [`enter`], below the chain `above`.
pub fn enter_below(
    config: &mut Config,
    files: &[PathBuf],
    above: Vec<String>,
) -> Result<(), ConfigError> {
    let mine: Vec<String> = files.iter().map(|f| super::project::canonical(f)).collect();
    let refuse = |message: String| ConfigError::Invalid {
        path: config.source.clone(),
        message,
    };
    if let Some(again) = mine.iter().find(|f| above.contains(f)) {
        return Err(refuse(format!(
            "this servers file leads back to itself: {again} is already in use by a host that started this one (the chain: {}); a gateway cannot be one of its own servers",
            above.join(" → ")
        )));
    }
    if above.len() >= MAX_CHAIN_DEPTH {
        return Err(refuse(format!(
            "{} hosts already started one another (the chain: {}); at most {MAX_CHAIN_DEPTH} may",
            above.len(),
            above.join(" → ")
        )));
    }
    let mut chain = above;
    chain.extend(mine);
    let value = serde_json::to_string(&chain).expect("strings serialise");
    for server in &mut config.servers {
        if let Transport::Stdio { env, .. } = &mut server.transport {
            env.insert(CHAIN_ENV.into(), value.clone());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        Config::parse(
            r#"{"mcpServers": {"gw": {"command": "gatehouse", "args": ["gateway"]},
                               "web": {"url": "http://127.0.0.1:1/mcp"}}}"#,
            "a.json",
            &super::super::Identity::default(),
        )
        .unwrap()
    }

    #[test]
    fn a_file_in_use_above_is_refused_and_the_chain_is_bounded() {
        let mut c = config();
        enter_below(
            &mut c,
            &[PathBuf::from("/x/a.json")],
            vec!["/x/b.json".into()],
        )
        .unwrap();
        let Transport::Stdio { env, .. } = &c.servers[0].transport else {
            panic!("a stdio server")
        };
        assert_eq!(env[CHAIN_ENV], r#"["/x/b.json","/x/a.json"]"#);
        let err = enter_below(
            &mut config(),
            &[PathBuf::from("/x/a.json")],
            vec!["/x/a.json".into()],
        )
        .unwrap_err();
        assert!(err.to_string().contains("leads back to itself"), "{err}");
        let deep: Vec<String> = (0..MAX_CHAIN_DEPTH)
            .map(|i| format!("/x/{i}.json"))
            .collect();
        let err = enter_below(&mut config(), &[PathBuf::from("/x/z.json")], deep).unwrap_err();
        assert!(err.to_string().contains("at most 4 may"), "{err}");
    }
}
