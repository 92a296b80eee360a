//! Files the host writes for the person (saved results, recordings, the log): readable by
//! the user only (0600 files in 0700 folders); a saved result never written over an
//! earlier file.

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

/// How a private file is opened.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    /// A new file, never one that exists.
    New,
    /// Created, or emptied when it exists.
    Truncate,
    /// Created, or added to when it exists.
    Append,
    /// Created, or read and added to when it exists.
    Keep,
}

fn options(how: Open) -> OpenOptions {
    let mut options = OpenOptions::new();
    match how {
        Open::New => options.write(true).create_new(true),
        Open::Truncate => options.write(true).create(true).truncate(true),
        Open::Append => options.append(true).create(true),
        Open::Keep => options.read(true).append(true).create(true),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// Open `path` as `how` says, its missing folders created private, and the file made
/// private even when it existed with another mode.
fn open_private(path: &Path, how: Open) -> io::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        private_dir(dir)?;
    }
    let file = options(how).open(path)?;
    #[cfg(unix)]
    {
        // An existing file keeps its mode on open; make it private too.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

/// Create (or truncate) the file at `path`, readable by the user only.
pub fn create_private(path: &Path) -> io::Result<File> {
    open_private(path, Open::Truncate)
}

/// Create the file at `path`, which must not exist yet, readable by the user only (its
/// missing folders created private).
pub fn create_new_private(path: &Path) -> io::Result<File> {
    open_private(path, Open::New)
}

/// Open the file at `path` to add to it (a log that several runs write), creating it if
/// need be; readable by the user only.
pub fn append_private(path: &Path) -> io::Result<File> {
    open_private(path, Open::Append)
}

/// Open the file at `path` to read it and add to it, creating it (readable by the user
/// only) if it is missing, and its folder too; what it holds is kept (ledgers, lock files).
pub fn create_private_keep(path: &Path) -> io::Result<File> {
    open_private(path, Open::Keep)
}

/// The text of the small file at `path`, `None` when it does not exist; a file over
/// `max_bytes` is an error, read no further.
pub fn read_small(path: &Path, max_bytes: u64) -> Result<Option<String>, String> {
    use std::io::Read;
    let shown = path.display();
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {shown}: {e}")),
    };
    let mut text = String::new();
    file.take(max_bytes + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if text.len() as u64 > max_bytes {
        return Err(format!("{shown} is larger than {max_bytes} bytes"));
    }
    Ok(Some(text))
}

/// Shortest key [`private_key`] accepts, in bytes.
pub const MIN_KEY_BYTES: usize = 32;

/// The person's key at `path` (a secret that seals what the host writes for them), made
/// of random bytes on first use when `create`, kept 0600 in a 0700 folder; `None` when it
/// does not exist and `create` is false. Two processes that make it at once use one key.
pub fn private_key(path: &Path, create: bool) -> Result<Option<Vec<u8>>, String> {
    let shown = path.display();
    match std::fs::read(path) {
        Ok(key) if key.len() >= MIN_KEY_BYTES => return Ok(Some(key)),
        Ok(_) => return Err(format!("{shown} is too short to be a key")),
        Err(e) if e.kind() == io::ErrorKind::NotFound && !create => return Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot read {shown}: {e}")),
    }
    let key: [u8; MIN_KEY_BYTES] = rand::random();
    match create_whole_private(path, &key) {
        Ok(true) => Ok(Some(key.to_vec())),
        // Another process made it first: use theirs.
        Ok(false) => private_key(path, false),
        Err(e) => Err(format!("cannot create {shown}: {e}")),
    }
}

/// Make the file at `path`, readable by the user only, holding `bytes`, unless it exists:
/// whether this call made it. Written whole to a private file beside it, then linked in
/// place: a link never replaces a file, so the first to link wins and no reader ever
/// finds the file there but not yet written (as creating it, then writing it, allowed).
pub fn create_whole_private(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    use std::io::Write;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let unique: u64 = rand::random();
    let temp = path.with_file_name(format!("{name}.{}-{unique:x}.new", std::process::id()));
    let written = create_new_private(&temp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    let linked = written.and_then(|()| std::fs::hard_link(&temp, path));
    let _ = std::fs::remove_file(&temp);
    match linked {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// Replace the file at `path` whole with `bytes`: written to a private file beside it,
/// synced, then renamed over it, so a reader sees the old file or the new one.
pub fn replace_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_private_with(path, |file| file.write_all(bytes))
}

/// Replace the file at `path` whole with what `write` writes, as [`replace_private`]
/// does (buffered). When `write` fails, the file is left as it was and its error is
/// returned.
pub fn replace_private_with(
    path: &Path,
    write: impl FnOnce(&mut dyn io::Write) -> io::Result<()>,
) -> io::Result<()> {
    use std::io::Write;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = path.with_file_name(format!("{name}.{}.tmp", std::process::id()));
    let written = create_private(&temp).and_then(|f| {
        let mut buffered = io::BufWriter::new(f);
        write(&mut buffered)?;
        buffered.flush()?;
        buffered
            .into_inner()
            .map_err(|e| e.into_error())?
            .sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&temp, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    renamed
}

/// Replace the file at `path` whole with `bytes`, as [`replace_private`] does (a
/// temporary file beside it, synced, then renamed over it), but keeping the file's
/// permissions: a file that is someone else's to read stays so. A file behind a link is
/// written where the link points; a new file (with any missing folder) is readable by the
/// user only.
pub fn replace_keeping(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path)?,
        _ => path.to_owned(),
    };
    let dir = match target.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.to_owned(),
        None => PathBuf::from("."),
    };
    if !dir.exists() {
        private_dir(&dir)?;
    }
    let permissions = std::fs::metadata(&target).ok().map(|m| m.permissions());
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let temp = dir.join(format!(
        ".{name}.{}.{:08x}.tmp",
        std::process::id(),
        rand::random::<u32>()
    ));
    let written = (|| {
        let mut file = create_new_private(&temp)?;
        file.write_all(bytes)?;
        if let Some(p) = permissions {
            file.set_permissions(p)?;
        }
        file.sync_all()?;
        std::fs::rename(&temp, &target)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
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
        match options(Open::New).open(&path) {
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
    /// Many processes making the same key at once all read the one that was made: none
    /// finds the file there but empty (before, the file was created and then written).
    #[test]
    fn a_key_made_by_many_at_once_is_one_key_never_read_half_written() {
        for _ in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("approvals.key");
            let start = std::sync::Arc::new(std::sync::Barrier::new(8));
            let makers: Vec<_> = (0..8)
                .map(|_| {
                    let (path, start) = (path.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        super::private_key(&path, true)
                    })
                })
                .collect();
            let keys: Vec<_> = makers.into_iter().map(|t| t.join().unwrap()).collect();
            let first = keys[0].clone().unwrap().unwrap();
            for key in keys {
                assert_eq!(key, Ok(Some(first.clone())));
            }
            // Nothing of the making is left beside it.
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert_eq!(left.len(), 1, "{left:?}");
        }
    }

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
            let log = dir.join("host.log");
            std::fs::write(&log, b"first\n").unwrap();
            std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
            {
                use std::io::Write;
                append_private(&log)
                    .unwrap()
                    .write_all(b"second\n")
                    .unwrap();
            }
            assert_eq!(std::fs::read(&log).unwrap(), b"first\nsecond\n");
            assert_eq!(mode(&log), 0o600);
        }
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }
}
