//! The files and folders the host writes that a setting names, for `gatehouse doctor`.

use std::path::PathBuf;

use super::Settings;

/// Whether a place the host writes is a file or a folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// A file.
    File,
    /// A folder.
    Folder,
}

/// A file or folder the host writes, as a setting names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenPath {
    /// What it holds, in words.
    pub what: &'static str,
    /// The setting that names it.
    pub setting: &'static str,
    /// Where it is.
    pub path: PathBuf,
    /// File or folder.
    pub kind: PathKind,
}

impl Settings {
    /// Every file or folder the host itself writes that a setting names: the save folder
    /// and the log. A new setting naming a place the host writes belongs here, so that
    /// `gatehouse doctor` checks it (that it can be written, and is readable by the user
    /// only).
    pub fn written_paths(&self) -> Vec<WrittenPath> {
        let mut paths = Vec::new();
        if let Some(dir) = &self.save_dir {
            paths.push(WrittenPath {
                what: "saved results (images, audio, files)",
                setting: "saveDir",
                path: dir.clone(),
                kind: PathKind::Folder,
            });
        }
        if let Some(file) = &self.log_file {
            paths.push(WrittenPath {
                what: "the log of every record",
                setting: "logFile",
                path: file.clone(),
                kind: PathKind::File,
            });
        }
        if let Some(file) = &self.tasks_file {
            paths.push(WrittenPath {
                what: "the records of calls run as tasks",
                setting: "tasksFile",
                path: file.clone(),
                kind: PathKind::File,
            });
        }
        paths
    }
}
