//! An entry's `sandbox`, read and checked: the folders a stdio server may also read and
//! write, its network, and its limits. How the box is made is `connect::sandbox`'s.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Most processes (threads included) a boxed server may run at once, unless its entry says.
pub const DEFAULT_PROCESSES: u64 = 512;
/// Most files a boxed server may hold open at once, unless its entry says.
pub const DEFAULT_OPEN_FILES: u64 = 4_096;
/// The largest `processes` an entry may set.
pub const MAX_PROCESSES: u64 = 65_536;
/// The largest `openFiles` an entry may set.
pub const MAX_OPEN_FILES: u64 = 1 << 20;
/// The smallest `memoryMb` an entry may set (a runtime needs some to start at all).
pub const MIN_MEMORY_MB: u64 = 16;
/// The largest `memoryMb` an entry may set (1 TiB).
pub const MAX_MEMORY_MB: u64 = 1 << 20;
/// Most folders an entry's `read` or `write` may name.
pub const MAX_FOLDERS: usize = 64;

/// Whether a boxed server may use the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// No network at all: a network namespace of its own, with nothing in it.
    Off,
    /// The machine's network.
    On,
}

/// A server's box as its entry says (`"sandbox": true` for the defaults, or an object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sandbox {
    /// Folders (or files) it may also read.
    pub read: Vec<PathBuf>,
    /// Folders (or files) it may also write (and read).
    pub write: Vec<PathBuf>,
    /// The network: off unless the entry says `"on"`.
    pub network: Network,
    /// Most processes and threads at once.
    pub processes: u64,
    /// Most open files at once.
    pub open_files: u64,
    /// Most memory (its data segment), in MiB; unbounded unless the entry says.
    pub memory_mb: Option<u64>,
}

impl Default for Sandbox {
    fn default() -> Sandbox {
        Sandbox {
            read: Vec::new(),
            write: Vec::new(),
            network: Network::Off,
            processes: DEFAULT_PROCESSES,
            open_files: DEFAULT_OPEN_FILES,
            memory_mb: None,
        }
    }
}

/// The keys a `sandbox` object may have.
const KEYS: &[&str] = &[
    "read",
    "write",
    "network",
    "processes",
    "openFiles",
    "memoryMb",
];

impl Sandbox {
    /// An entry's `sandbox`: `false` or absent for none, `true` for the defaults, or an
    /// object; `expand` makes each folder (variables, `~`). Checked when read.
    pub fn parse(
        value: Option<&Value>,
        expand: &dyn Fn(&str) -> Result<String, String>,
    ) -> Result<Option<Sandbox>, String> {
        let map = match value {
            None | Some(Value::Bool(false)) => return Ok(None),
            Some(Value::Bool(true)) => return Ok(Some(Sandbox::default())),
            Some(Value::Object(map)) => map,
            Some(_) => return Err("\"sandbox\" must be true, false or an object".into()),
        };
        if let Some(key) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(format!(
                "sandbox: unknown key \"{key}\" (a sandbox has {})",
                KEYS.join(", ")
            ));
        }
        let mut sandbox = Sandbox {
            read: folders(map, "read", expand)?,
            write: folders(map, "write", expand)?,
            ..Sandbox::default()
        };
        sandbox.network = match map.get("network") {
            None => Network::Off,
            Some(Value::String(s)) if s == "off" => Network::Off,
            Some(Value::String(s)) if s == "on" => Network::On,
            Some(other) => {
                return Err(format!(
                    "sandbox: \"network\" must be \"off\" or \"on\", not {other}"
                ));
            }
        };
        if let Some(n) = bound(map, "processes", 1, MAX_PROCESSES)? {
            sandbox.processes = n;
        }
        if let Some(n) = bound(map, "openFiles", 16, MAX_OPEN_FILES)? {
            sandbox.open_files = n;
        }
        sandbox.memory_mb = bound(map, "memoryMb", MIN_MEMORY_MB, MAX_MEMORY_MB)?;
        Ok(Some(sandbox))
    }
}

fn folders(
    map: &Map<String, Value>,
    key: &str,
    expand: &dyn Fn(&str) -> Result<String, String>,
) -> Result<Vec<PathBuf>, String> {
    let items = match map.get(key) {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) if items.len() <= MAX_FOLDERS => items,
        Some(Value::Array(_)) => {
            return Err(format!(
                "sandbox: \"{key}\" names more than {MAX_FOLDERS} folders"
            ));
        }
        Some(_) => return Err(format!("sandbox: \"{key}\" must be an array of folders")),
    };
    items
        .iter()
        .map(|item| match item {
            Value::String(s) if !s.trim().is_empty() => {
                let path = PathBuf::from(expand(s).map_err(|e| format!("sandbox: {key}: {e}"))?);
                match path.is_absolute() {
                    true => Ok(path),
                    false => Err(format!(
                        "sandbox: \"{key}\": {s} is not an absolute path (write it from / or ~)"
                    )),
                }
            }
            other => Err(format!(
                "sandbox: \"{key}\" must hold folder paths, found {other}"
            )),
        })
        .collect()
}

fn bound(map: &Map<String, Value>, key: &str, min: u64, max: u64) -> Result<Option<u64>, String> {
    match map.get(key) {
        None => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
            _ => Err(format!(
                "sandbox: \"{key}\" must be a whole number from {min} to {max}, not {v}"
            )),
        },
    }
}

#[cfg(test)]
mod tests;
