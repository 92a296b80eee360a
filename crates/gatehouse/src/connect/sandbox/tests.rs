use std::collections::BTreeMap;

use super::plan::{Start, resolve};
use crate::config::{Network, Sandbox};

#[test]
fn the_plan_reads_the_system_and_the_program_writes_its_own_folders_and_keeps_secrets_out() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    for d in [".ssh", "project/src", "tools/venv/bin", ".npm"] {
        std::fs::create_dir_all(h.join(d)).unwrap();
    }
    std::fs::write(h.join("tools/venv/bin/python"), "").unwrap();
    std::fs::write(h.join("project/server.py"), "").unwrap();
    let env = BTreeMap::from([
        (
            "PATH".to_string(),
            format!("{}:/usr/bin", h.join("tools/venv/bin").display()),
        ),
        ("HOME".to_string(), h.display().to_string()),
    ]);
    let tmp = h.join("box-tmp");
    let args = vec![
        "server.py".to_string(),
        "--verbose".into(),
        h.display().to_string(),
    ];
    let start = Start {
        command: "python",
        args: &args,
        cwd: &h.join("project"),
        env: &env,
        tmp: &tmp,
        home: Some(h),
    };
    let sandbox = Sandbox {
        read: vec![h.join(".ssh")],
        ..Sandbox::default()
    };
    let plan = resolve(&sandbox, &start);
    for p in ["/usr", "/etc", "/proc"] {
        assert!(plan.read.contains(&p.into()), "{p}: {plan:?}");
    }
    // The virtualenv above its `bin`, the script's folder (the working folder).
    assert!(plan.read.contains(&h.join("tools/venv")), "{plan:?}");
    assert!(plan.read.contains(&h.join("project")), "{plan:?}");
    assert!(plan.write.contains(&tmp) && plan.write.contains(&"/dev/null".into()));
    // The home folder named in the arguments is left out (it holds ~/.ssh)…
    assert!(!plan.read.contains(&h.to_path_buf()), "{plan:?}");
    // …but what the entry names is kept as written.
    assert!(plan.read.contains(&h.join(".ssh")), "{plan:?}");
    assert_eq!(plan.network, Network::Off);

    // npx writes npm's cache.
    let args = vec![
        "-y".to_string(),
        "@modelcontextprotocol/server-memory".into(),
    ];
    let start = Start {
        command: "npx",
        args: &args,
        ..start
    };
    let plan = resolve(&Sandbox::default(), &start);
    assert!(plan.write.contains(&h.join(".npm")), "{plan:?}");
    assert!(
        !plan
            .read
            .iter()
            .chain(&plan.write)
            .any(|p| p.starts_with(h.join(".ssh")))
    );
}

#[test]
fn a_folder_that_holds_a_project_s_policy_is_left_out_of_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("repo");
    std::fs::create_dir_all(project.join(".gatehouse")).unwrap();
    std::fs::write(project.join(".mcp.json"), "{}").unwrap();
    let env = BTreeMap::new();
    let tmp = dir.path().join("tmp");
    let start = Start {
        command: "/usr/bin/true",
        args: &[],
        cwd: &project,
        env: &env,
        tmp: &tmp,
        home: None,
    };
    let plan = resolve(&Sandbox::default(), &start);
    assert!(!plan.read.contains(&project), "{plan:?}");
    // Named in the entry, it is the person's choice.
    let named = Sandbox {
        read: vec![project.clone()],
        ..Sandbox::default()
    };
    assert!(resolve(&named, &start).read.contains(&project));
}
