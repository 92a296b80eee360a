//! What of the host's environment a stdio server gets: a short base, the names its entry
//! passes through, and its own `env`; never the host's credentials by accident.

/// Which of the host's environment variables a stdio server gets, besides the `env` of its
/// entry: [`BASE_ENV`] always, the names in `passEnv`, or everything with `inheritEnv`.
/// A server gets none of the host's secrets (API keys, tokens) unless its entry names them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvPass {
    /// `passEnv`: exact names, or prefixes ending in `*` (`AWS_*`).
    pub names: Vec<String>,
    /// `inheritEnv: true`: the host's whole environment, as other hosts used to pass.
    pub all: bool,
}

/// What every stdio server gets from the host's environment: where programs are, a home,
/// a user, a shell, a terminal type, a language, a temporary folder and the certificates
/// the machine trusts (`SSL_CERT_FILE`, `SSL_CERT_DIR`: without them, behind a proxy that
/// re-signs TLS, `uvx` cannot download a server it can download in the shell). No
/// credentials.
#[cfg(not(windows))]
pub const BASE_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LC_*",
    "TMPDIR",
    "TZ",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];
/// What every stdio server gets from the host's environment (Windows' equivalents).
#[cfg(windows)]
pub const BASE_ENV: &[&str] = &[
    "PATH",
    "PATHEXT",
    "APPDATA",
    "LOCALAPPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "USERPROFILE",
    "USERNAME",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "WINDIR",
    "COMSPEC",
    "TEMP",
    "TMP",
    "PROGRAMFILES",
    "PROCESSOR_ARCHITECTURE",
];

/// Does `name` match `pattern`: the same name, or a prefix pattern ending in `*`?
fn env_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

impl EnvPass {
    /// The variables of `host` (the host's environment) a server started with this policy
    /// gets, before its own `env` is added.
    pub fn select<I>(&self, host: I) -> Vec<(std::ffi::OsString, std::ffi::OsString)>
    where
        I: IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    {
        host.into_iter()
            .filter(|(name, _)| {
                self.all
                    || name.to_str().is_some_and(|name| {
                        BASE_ENV
                            .iter()
                            .copied()
                            .chain(self.names.iter().map(String::as_str))
                            .any(|p| env_matches(p, name))
                    })
            })
            .collect()
    }
}
