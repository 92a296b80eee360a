//! `doctor`'s checks of every place the host writes (and the reference tickets server's
//! store): each made or makeable, private where it holds what is the person's.

use std::path::Path;

use gatehouse::config::{Config, PathKind};

use super::{Check, Verdict, check};

/// Every place the host (or its reference tickets server) writes.
#[cfg_attr(not(feature = "built-in-servers"), allow(unused_variables))]
pub(super) fn data_checks(
    config: Option<&Config>,
    settings: &gatehouse::config::Settings,
) -> Vec<Check> {
    let mut checks = Vec::new();
    if settings.save_dir.is_none() {
        let tmp = std::env::temp_dir();
        checks.push(match std::fs::metadata(&tmp) {
            Ok(m) if m.is_dir() => check(
                "data",
                "saved results (saveDir)",
                Verdict::Ok,
                format!(
                    "a new folder per session under {}, readable by you only",
                    tmp.display()
                ),
            ),
            _ => check(
                "data",
                "saved results (saveDir)",
                Verdict::Broken,
                format!("the temporary folder {} is missing", tmp.display()),
            )
            .fix("set TMPDIR to a folder that exists, or saveDir in the servers file"),
        });
    }
    for written in settings.written_paths() {
        let name = format!("{} ({})", written.what, written.setting);
        checks.push(place(&name, &written.path, written.kind));
    }
    #[cfg(feature = "built-in-servers")]
    checks.extend(super::tickets::places(config));
    checks
}

/// A place the host writes: there (or its folder there to create it in), of the right
/// kind, and readable by the user only.
pub(super) fn place(name: &str, path: &Path, kind: PathKind) -> Check {
    let shown = path.display().to_string();
    let (noun, private_mode) = match kind {
        PathKind::File => ("file", "600"),
        PathKind::Folder => ("folder", "700"),
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return check(
                "data",
                name,
                Verdict::Ok,
                format!(
                    "{shown} is not there yet; it is created readable by you only when first written"
                ),
            );
        }
        Err(e) => {
            return check(
                "data",
                name,
                Verdict::Broken,
                format!("{shown} cannot be read: {e}"),
            )
            .fix(format!(
                "make it readable by you (chmod u+rw {shown}), or name another place"
            ));
        }
    };
    let problem = if meta.is_dir() != (kind == PathKind::Folder) {
        Some((
            Verdict::Broken,
            format!("{shown} is not a {noun}"),
            format!("move it away, or name another place for the {noun}"),
        ))
    } else if meta.permissions().readonly() {
        Some((
            Verdict::Broken,
            format!("{shown} cannot be written"),
            format!("chmod u+w {shown}"),
        ))
    } else {
        readable_by_others(&meta).map(|mode| {
            (
                Verdict::Warning,
                format!("{shown} can be read by others (mode {mode:o})"),
                format!("chmod {private_mode} {shown}"),
            )
        })
    };
    match problem {
        Some((verdict, detail, fix)) => check("data", name, verdict, detail).fix(fix),
        None => check(
            "data",
            name,
            Verdict::Ok,
            format!("{shown}, readable by you only"),
        ),
    }
}

/// The mode of a file or folder that others than its owner may read or enter.
fn readable_by_others(meta: &std::fs::Metadata) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        (mode & 0o077 != 0).then_some(mode)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}
