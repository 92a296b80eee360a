//! Files the host writes for the person (saved results, recordings): readable by the user
//! only (0600 files in 0700 folders), and never written over an earlier file.

use std::{
    fs::{DirBuilder, File, OpenOptions},
    io,
    path::{Path, PathBuf},
};

/// Most names tried for one new file before giving up (`name`, `name-2`, …).
pub const MAX_NAME_TRIES: usize = 1_000;

/// Create `dir` and its missing parents, readable by the user only.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

fn options(new: bool) -> OpenOptions {
    let mut options = OpenOptions::new();
    options.write(true);
    if new {
        options.create_new(true);
    } else {
        options.create(true).truncate(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// Create (or truncate) the file at `path`, readable by the user only.
pub fn create_private(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        private_dir(dir)?;
    }
    let file = options(false).open(path)?;
    #[cfg(unix)]
    {
        // An existing file keeps its mode on open; make it private too.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

/// Open the file at `path` for appending, creating it (readable by the user only) if it
/// is missing, and its folder too; what it holds is kept (ledgers, lock files).
pub fn create_private_keep(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        private_dir(dir)?;
    }
    let mut options = OpenOptions::new();
    options.read(true).append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Create the file at `path`, readable by the user only; an error if it exists.
pub fn create_new_private(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        private_dir(dir)?;
    }
    options(true).open(path)
}

/// Write `bytes` to a new file in `dir` named `stem.ext`, or `stem-2.ext`, … if taken:
/// never over an existing file. Returns where it went.
pub fn write_new(dir: &Path, stem: &str, ext: &str, bytes: &[u8]) -> io::Result<PathBuf> {
    use std::io::Write;
    private_dir(dir)?;
    for n in 1..=MAX_NAME_TRIES {
        let name = if n == 1 {
            format!("{stem}.{ext}")
        } else {
            format!("{stem}-{n}.{ext}")
        };
        let path = dir.join(name);
        match options(true).open(&path) {
            Ok(mut file) => {
                file.write_all(bytes)?;
                return Ok(path);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{MAX_NAME_TRIES} files named {stem} already exist"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_private_and_never_overwritten() {
        let dir = std::env::temp_dir()
            .join(format!("gatehouse-files-{}", std::process::id()))
            .join("saved");
        let a = write_new(&dir, "turn1-step1-1", "png", b"one").unwrap();
        let b = write_new(&dir, "turn1-step1-1", "png", b"two").unwrap();
        assert_ne!(a, b);
        assert_eq!(std::fs::read(&a).unwrap(), b"one");
        assert!(b.ends_with("turn1-step1-1-2.png"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&a), 0o600);
            assert_eq!(mode(&dir), 0o700);
            let record = dir.join("run.jsonl");
            std::fs::write(&record, b"x").unwrap();
            drop(create_private(&record).unwrap());
            assert_eq!(mode(&record), 0o600);
        }
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }
}
