use std::{collections::BTreeMap, path::PathBuf};

use super::*;

fn stdio(command: &str, args: &[&str], env: &[(&str, &str)], pass: &[&str]) -> ServerSpec {
    let mut spec = crate::config::Config::from_value(
        serde_json::json!({"mcpServers": {"s": {"command": "true"}}}),
        "test",
        &crate::config::Identity::default(),
    )
    .unwrap()
    .servers
    .remove(0);
    spec.transport = Transport::Stdio {
        command: command.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        cwd: None,
        pass: EnvPass {
            names: pass.iter().map(|p| p.to_string()).collect(),
            all: false,
        },
    };
    spec
}

fn host(vars: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
    vars.iter().map(|(k, v)| (k.into(), v.into())).collect()
}

fn lines(text: &[&str]) -> Vec<String> {
    text.iter().map(|l| l.to_string()).collect()
}

#[test]
fn npxs_half_written_package_is_named_with_its_folder() {
    let spec = stdio(
        "npx",
        &["-y", "@modelcontextprotocol/server-memory"],
        &[],
        &[],
    );
    let stderr = lines(&[
        "node:internal/modules/esm/resolve:215",
        "Error: Cannot find package '/home/u/.npm/_npx/15b07286cbcc3329/node_modules/zod/index.js' imported from /home/u/.npm/_npx/15b07286cbcc3329/node_modules/@modelcontextprotocol/server-memory/dist/index.js",
        "  code: 'ERR_MODULE_NOT_FOUND'",
    ]);
    let cause = cause(&spec, &stderr, &host(&[])).unwrap();
    assert_eq!(
        cause,
        Cause::BrokenNpxCache {
            folder: "/home/u/.npm/_npx/15b07286cbcc3329".into()
        }
    );
    assert!(
        cause
            .fix("memory", "f.json")
            .contains("`rm -rf /home/u/.npm/_npx/15b07286cbcc3329`"),
        "{}",
        cause.fix("memory", "f.json")
    );
    // npx's words when the package's own folder is whole but a dependency is missing.
    let dependency = lines(&[
        "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /tmp/c2/_npx/15b07286cbcc3329/node_modules/@modelcontextprotocol/server-memory/dist/index.js",
    ]);
    assert_eq!(
        super::cause(&spec, &dependency, &host(&[])),
        Some(Cause::BrokenNpxCache {
            folder: "/tmp/c2/_npx/15b07286cbcc3329".into()
        })
    );
    // A folder with a space is quoted.
    let spaced = lines(&[
        "Error [ERR_MODULE_NOT_FOUND]: Cannot find package '/home/a b/.npm/_npx/ab12/node_modules/zod/index.js' imported",
    ]);
    let cause = super::cause(&spec, &spaced, &host(&[])).unwrap();
    assert!(
        cause
            .fix("m", "f")
            .contains("`rm -rf '/home/a b/.npm/_npx/ab12'`")
    );
}

#[test]
fn a_missing_module_elsewhere_is_no_npx_cache() {
    let spec = stdio("node", &["server.js"], &[], &[]);
    let stderr = lines(&["Error: Cannot find module '/srv/app/node_modules/zod/index.js'"]);
    assert_eq!(cause(&spec, &stderr, &host(&[])), None);
}

/// uv 0.13.8's and Python's words (reproduced) when a file of the environment uv keeps
/// for `uvx mcp-server-time` in its cache (`UV_CACHE_DIR=/tmp/c 1/uv`) was cut short.
const UV_DAMAGED: &[&str] = &[
    "Traceback (most recent call last):",
    "  File \"/tmp/c 1/uv/archive-v0/ypmTBTa4p53L8bne/bin/mcp-server-time\", line 6, in <module>",
    "    from mcp_server_time import main",
    "ImportError: cannot import name 'main' from 'mcp_server_time' (/tmp/c 1/uv/archive-v0/ypmTBTa4p53L8bne/lib/python3.11/site-packages/mcp_server_time/__init__.py)",
];

#[test]
fn uvs_damaged_environment_is_named_with_the_cache_to_clear() {
    let spec = stdio("/opt/uv/bin/uvx", &["mcp-server-time@2026.10.19"], &[], &[]);
    let cause = cause(&spec, &lines(UV_DAMAGED), &host(&[])).unwrap();
    assert_eq!(
        cause,
        Cause::BrokenUvCache {
            cache: "/tmp/c 1/uv".into(),
            uv: "/opt/uv/bin/uv".into()
        }
    );
    assert!(
        cause
            .fix("time", "f")
            .contains("`/opt/uv/bin/uv cache clean --cache-dir '/tmp/c 1/uv'`"),
        "{}",
        cause.fix("time", "f")
    );
    // Only the last line and one path, as a tail of last words may keep them; `uv tool
    // run` by name, a missing module named in the line itself.
    let spec = stdio("uv", &["tool", "run", "mcp-server-git"], &[], &[]);
    let tail = lines(&[
        "    import git",
        "ModuleNotFoundError: No module named 'git'",
        "  File \"/home/u/.cache/uv/archive-v0/Ab_c/lib/python3.11/site-packages/mcp_server_git/server.py\", line 9",
    ]);
    assert_eq!(
        super::cause(&spec, &tail, &host(&[])),
        Some(Cause::BrokenUvCache {
            cache: "/home/u/.cache/uv".into(),
            uv: "uv".into()
        })
    );
}

#[test]
fn a_python_failure_that_is_no_import_or_no_uvx_server_is_no_uv_cache() {
    let uvx = stdio("uvx", &["mcp-server-git"], &[], &[]);
    // The server's own error, raised from the environment in the cache.
    let own = lines(&[
        "  File \"/home/u/.cache/uv/archive-v0/Ab_c/lib/python3.11/site-packages/mcp_server_git/server.py\", line 9",
        "git.exc.InvalidGitRepositoryError: /srv/x",
    ]);
    assert_eq!(cause(&uvx, &own, &host(&[])), None);
    // An import that failed in a venv of the person's.
    let venv = lines(&[
        "  File \"/srv/app/.venv/lib/python3.11/site-packages/x/__init__.py\", line 1",
        "ModuleNotFoundError: No module named 'y'",
    ]);
    assert_eq!(cause(&uvx, &venv, &host(&[])), None);
    // The same words from a server not started through uvx.
    let python = stdio("python3", &["-m", "mcp_server_time"], &[], &[]);
    assert_eq!(cause(&python, &lines(UV_DAMAGED), &host(&[])), None);
}

#[test]
fn a_variable_set_in_the_shell_and_not_passed_is_named() {
    let spec = stdio("python3", &["s.py"], &[("MODE", "x")], &["OTHER_*"]);
    let stderr =
        lines(&["Error: API_KEY is not set (nor TOKEN_B); HOME and MODE and OTHER_KEY are fine"]);
    let env = host(&[
        ("API_KEY", "k"),
        ("HOME", "/h"),
        ("MODE", "y"),
        ("OTHER_KEY", "z"),
    ]);
    let cause = cause(&spec, &stderr, &env).unwrap();
    assert_eq!(
        cause,
        Cause::NotPassed {
            names: vec!["API_KEY".into()]
        }
    );
    let fix = cause.fix("acme", "/p/.mcp.json");
    assert!(
        fix.starts_with("API_KEY is set in your shell but not passed to this server: add `\"passEnv\": [\"API_KEY\"]` to acme in /p/.mcp.json (or `gatehouse mcp add … --pass-env API_KEY`)"),
        "{fix}"
    );
    // Not set where the host runs: nothing to say.
    assert_eq!(super::cause(&spec, &stderr, &host(&[("HOME", "/h")])), None);
}

#[test]
fn the_command_by_hand_has_the_servers_environment_and_quotes() {
    let mut spec = stdio(
        "/opt/my tools/server",
        &["--name", "it's here", "plain"],
        &[("MODE", "a b"), ("ACME_TOKEN", "secret")],
        &["EXTRA"],
    );
    if let Transport::Stdio { cwd, .. } = &mut spec.transport {
        *cwd = Some(PathBuf::from("/srv/x y"));
    }
    let env = host(&[("PATH", "/bin"), ("EXTRA", "1"), ("SECRET_OF_HOST", "s")]);
    let line = by_hand(&spec, &env).unwrap();
    assert_eq!(
        line,
        "cd '/srv/x y' && env -i EXTRA=\"$EXTRA\" PATH=\"$PATH\" ACME_TOKEN=\"$ACME_TOKEN\" MODE='a b' '/opt/my tools/server' --name 'it'\\''s here' plain"
    );
}
