//! Where the secrets of sign-ins go: the operating system's keychain when one is running
//! (the `keyring` crate: macOS Keychain, Windows Credential Manager, the Secret Service on
//! Linux desktops), else the credential store's own 0600 file. A keychain that runs but is
//! locked or refuses is an error, never a silent fall back to the file: secrets go where
//! the person keeps them, or nowhere.
//!
//! Each secret is one keychain item (service [`KEYCHAIN_SERVICE`], its name as the user).
//! Each record says where its secret went, so a sign-in made while a keychain ran is still
//! found (or reported missing) by a run that would choose otherwise.

use std::{collections::BTreeMap, sync::OnceLock};

use crate::config::CredentialStore;

/// Why the store could not be used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the credential store {where_}: {reason}")]
pub struct StoreError {
    /// Which store, in words (a path, or "the keychain").
    pub where_: String,
    /// What went wrong.
    pub reason: String,
}

/// The service name of the host's keychain items.
pub const KEYCHAIN_SERVICE: &str = "gatehouse-oauth";
/// The item written and removed again before a sign-in, to learn that the keychain takes
/// secrets now (a locked one refuses, or asks the person to unlock it, before the sign-in
/// rather than after it).
const PROBE: &str = "probe: does the keychain take secrets";

/// One place secrets are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// In the credential store's own file (0600).
    File,
    /// In the operating system's keychain.
    Keychain,
}

/// Where new secrets are kept: the person's choice, resolved when first needed (asking
/// whether a keychain runs costs a connection to it).
pub struct Vault {
    choice: CredentialStore,
    resolved: OnceLock<Result<Kind, StoreError>>,
}

/// The operating system's keychain, when this build has it (the `keychain` feature: on
/// Linux its Secret Service client is a tenth of a source build's time, so a build from
/// source leaves it out unless asked, and published binaries have it).
#[cfg(feature = "keychain")]
mod keychain {
    use super::{KEYCHAIN_SERVICE, StoreError};

    /// Why new secrets cannot go to the keychain when it was asked for.
    pub const ABSENT: &str = "no keychain is running";

    pub fn error(e: keyring::Error) -> StoreError {
        StoreError {
            where_: "in the keychain".into(),
            reason: match e {
                keyring::Error::NoStorageAccess(inner) => {
                    format!("the keychain refused access (is it locked?): {inner}")
                }
                keyring::Error::PlatformFailure(inner) => format!("the keychain failed: {inner}"),
                keyring::Error::NoDefaultStore => ABSENT.into(),
                other => other.to_string(),
            },
        }
    }

    fn entry(name: &str) -> Result<keyring::Entry, StoreError> {
        keyring::Entry::new(KEYCHAIN_SERVICE, name).map_err(error)
    }

    /// Does a keychain run (blocking: a connection to it)?
    pub fn running() -> bool {
        keyring::Entry::store_status().is_ok()
    }

    pub fn get(name: &str) -> Result<Option<String>, StoreError> {
        match entry(name)?.get_password() {
            Ok(secret) => Ok(Some(secret)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(error(e)),
        }
    }

    pub fn set(name: &str, secret: &str) -> Result<(), StoreError> {
        entry(name)?.set_password(secret).map_err(error)
    }

    pub fn delete(name: &str) -> Result<(), StoreError> {
        match entry(name)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(error(e)),
        }
    }
}

/// A build without the keychain: secrets go to the file, and a secret a keychain build
/// kept is reported as out of reach, never as absent.
#[cfg(not(feature = "keychain"))]
mod keychain {
    use super::StoreError;

    /// Why new secrets cannot go to the keychain when it was asked for.
    pub const ABSENT: &str =
        "this gatehouse was built without keychain support (build it with `--features keychain`)";

    fn absent() -> StoreError {
        StoreError {
            where_: "in the keychain".into(),
            reason: ABSENT.into(),
        }
    }

    pub fn running() -> bool {
        false
    }

    pub fn get(_name: &str) -> Result<Option<String>, StoreError> {
        Err(absent())
    }

    pub fn set(_name: &str, _secret: &str) -> Result<(), StoreError> {
        Err(absent())
    }

    pub fn delete(_name: &str) -> Result<(), StoreError> {
        Err(absent())
    }
}

impl Vault {
    /// The vault the `credentialStore` setting asks for.
    pub fn new(choice: CredentialStore) -> Self {
        Vault {
            choice,
            resolved: OnceLock::new(),
        }
    }

    /// Where new secrets go. Blocking the first time (it asks the keychain whether it runs).
    pub fn for_writing(&self) -> Result<Kind, StoreError> {
        self.resolved
            .get_or_init(|| match self.choice {
                CredentialStore::File => Ok(Kind::File),
                CredentialStore::Keychain if keychain::running() => Ok(Kind::Keychain),
                CredentialStore::Keychain => Err(StoreError {
                    where_: "in the keychain".into(),
                    reason: format!(
                        "{} (credentialStore is \"keychain\"); start one, or set credentialStore to \"file\"",
                        keychain::ABSENT
                    ),
                }),
                CredentialStore::Auto => Ok(if keychain::running() {
                    Kind::Keychain
                } else {
                    Kind::File
                }),
            })
            .clone()
    }

    /// Where new secrets go, and that they can go there now: a keychain is written to and
    /// cleaned up once. Blocking.
    pub fn ready(&self) -> Result<Kind, StoreError> {
        let kind = self.for_writing()?;
        if kind == Kind::Keychain {
            keychain::set(PROBE, PROBE)?;
            keychain::delete(PROBE)?;
        }
        Ok(kind)
    }
}

impl Kind {
    /// Where, in words (`file` is the store's path).
    pub fn describe(&self, file: &std::path::Path) -> String {
        match self {
            Kind::File => format!("the file {}", file.display()),
            Kind::Keychain => format!("the keychain (service {KEYCHAIN_SERVICE})"),
        }
    }

    /// The secret `name`, if kept. `file` is the store's own map of secrets.
    pub fn get(
        &self,
        file: &BTreeMap<String, String>,
        name: &str,
    ) -> Result<Option<String>, StoreError> {
        match self {
            Kind::File => Ok(file.get(name).cloned()),
            Kind::Keychain => keychain::get(name),
        }
    }

    /// Keep the secret `name`.
    pub fn set(
        &self,
        file: &mut BTreeMap<String, String>,
        name: &str,
        secret: &str,
    ) -> Result<(), StoreError> {
        match self {
            Kind::File => {
                file.insert(name.to_owned(), secret.to_owned());
                Ok(())
            }
            Kind::Keychain => keychain::set(name, secret),
        }
    }

    /// Forget the secret `name` (nothing to do when it is not kept).
    pub fn delete(
        &self,
        file: &mut BTreeMap<String, String>,
        name: &str,
    ) -> Result<(), StoreError> {
        match self {
            Kind::File => {
                file.remove(name);
                Ok(())
            }
            Kind::Keychain => keychain::delete(name),
        }
    }
}

#[cfg(all(test, feature = "keychain"))]
mod tests {
    fn words(e: keyring::Error) -> String {
        super::keychain::error(e).to_string()
    }

    #[test]
    fn keychain_errors_are_told_in_words_that_name_the_keychain() {
        let locked = words(keyring::Error::NoStorageAccess("prompt dismissed".into()));
        // What it is, what may be wrong, then the keychain's own words.
        for part in ["in the keychain", "is it locked?", "prompt dismissed"] {
            assert!(locked.contains(part), "{part}: {locked}");
        }
        let failed = words(keyring::Error::PlatformFailure("no reply".into()));
        assert!(failed.contains("the keychain failed: no reply"), "{failed}");
        let absent = words(keyring::Error::NoDefaultStore);
        assert!(absent.contains("no keychain is running"), "{absent}");
        let other = words(keyring::Error::TooLong("user".into(), 10));
        assert!(
            other.starts_with("the credential store in the keychain: "),
            "{other}"
        );
    }
}

#[cfg(all(test, not(feature = "keychain")))]
mod without_a_keychain {
    use super::*;

    #[test]
    fn a_build_without_the_keychain_keeps_secrets_in_the_file_and_says_why_when_asked_for_one() {
        assert_eq!(
            Vault::new(CredentialStore::Auto).for_writing().unwrap(),
            Kind::File
        );
        let refused = Vault::new(CredentialStore::Keychain)
            .for_writing()
            .unwrap_err()
            .to_string();
        assert!(refused.contains("--features keychain"), "{refused}");
        // A secret a keychain build kept is out of reach, not absent.
        let kept = Kind::Keychain.get(&BTreeMap::new(), "token").unwrap_err();
        assert!(kept.to_string().contains("built without"), "{kept}");
    }
}
