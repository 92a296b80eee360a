//! `doctor`'s checks of the reference tickets servers a servers file starts (`gatehouse
//! serve tickets`, `gatehouse-servers tickets`): their stores and sealing keys, private.
//! Only in a build with the reference servers, whose names and defaults it reads.

use std::path::{Path, PathBuf};

use gatehouse::config::{Config, PathKind, ServerSpec, Transport};

use super::{Check, places::place};

/// The places of the reference tickets servers the servers file starts: each store, its
/// folder, and its sealing key beside it unless the environment holds the key.
pub(super) fn places(config: Option<&Config>) -> Vec<Check> {
    let mut checks = Vec::new();
    let stores = config
        .map(|c| {
            c.servers
                .iter()
                .filter_map(tickets_store)
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    for db in stores {
        if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
            checks.push(place("tickets store folder", dir, PathKind::Folder));
        }
        checks.push(place("tickets store", &db, PathKind::File));
        if std::env::var_os(gatehouse_servers::tickets::ENV_KEY).is_none() {
            // The tickets server keeps its sealing key beside the store (tickets::load_key).
            checks.push(place(
                "tickets sealing key",
                &db.with_extension("key"),
                PathKind::File,
            ));
        }
    }
    checks
}

/// The store of a configured reference tickets server (`gatehouse serve tickets` or
/// `gatehouse-servers tickets`): its `--db`, the entry's GATEHOUSE_TICKETS_DB, else the
/// default the built-in servers get from the host's environment.
fn tickets_store(spec: &ServerSpec) -> Option<PathBuf> {
    let Transport::Stdio {
        command, args, env, ..
    } = &spec.transport
    else {
        return None;
    };
    let program = Path::new(command).file_stem()?.to_str()?;
    let ours = ["gatehouse", gatehouse_servers::built_in::SERVERS_BINARY].contains(&program);
    if !ours || !args.iter().any(|a| a == "tickets") {
        return None;
    }
    if let Some(i) = args.iter().position(|a| a == "--db") {
        return args.get(i + 1).map(PathBuf::from);
    }
    Some(
        env.get(gatehouse_servers::tickets::ENV_DB)
            .map(PathBuf::from)
            .unwrap_or_else(gatehouse_servers::tickets::default_db_path),
    )
}
