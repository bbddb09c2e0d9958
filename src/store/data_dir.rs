//! The data directory and the lock that gives one process at a time the right to write it.
//!
//! Invariants: the directory is created with mode 0700; `lookout.lock` is held (an exclusive
//! advisory `flock`) for as long as a `DataDir` value lives, and names its holder so that a
//! second process can say who is in the way. The lock dies with the process, so a `kill -9`
//! never leaves a stale lock behind.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::clock::Clock;

pub const DATABASE_FILE: &str = "lookout.redb";
pub const LOCK_FILE: &str = "lookout.lock";
pub const ADMIN_SOCKET_FILE: &str = "admin.sock";

#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    #[error("data dir {path} is in use by another lookout process ({holder})")]
    Locked { path: PathBuf, holder: String },
    #[error("cannot use data dir {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// An open, locked data directory.
#[derive(Debug)]
pub struct DataDir {
    path: PathBuf,
    /// Holding this file holds the lock; dropping it releases the lock.
    _lock: File,
}

impl DataDir {
    /// Creates the directory if needed and takes its lock on behalf of `holder` (e.g. "serve").
    pub fn open(path: &Path, holder: &str) -> Result<DataDir, DataDirError> {
        let io_error = |source| DataDirError::Io {
            path: path.to_path_buf(),
            source,
        };
        create_private_dir(path).map_err(io_error)?;
        let lock_path = path.join(LOCK_FILE);
        let mut lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&lock_path)
            .map_err(io_error)?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(DataDirError::Locked {
                    path: path.to_path_buf(),
                    holder: read_holder(&mut lock),
                });
            }
            Err(fs::TryLockError::Error(source)) => return Err(io_error(source)),
        }
        // Record who holds the lock; the content is informational, the flock is the lock.
        let description = format!(
            "pid {}, lookout {}, since {}",
            std::process::id(),
            holder,
            Clock::system().now()
        );
        lock.set_len(0).map_err(io_error)?;
        lock.seek(SeekFrom::Start(0)).map_err(io_error)?;
        lock.write_all(description.as_bytes()).map_err(io_error)?;
        lock.sync_data().map_err(io_error)?;
        Ok(DataDir {
            path: path.to_path_buf(),
            _lock: lock,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn database_path(&self) -> PathBuf {
        self.path.join(DATABASE_FILE)
    }

    pub fn admin_socket_path(&self) -> PathBuf {
        admin_socket_path(&self.path)
    }
}

/// Where a running server listens for admin commands on this data dir.
pub fn admin_socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join(ADMIN_SOCKET_FILE)
}

/// Creates `path` (and parents) with owner-only permissions, tightening an existing one.
pub fn create_private_dir(path: &Path) -> std::io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)?;
    let mut permissions = fs::metadata(path)?.permissions();
    if permissions.mode() & 0o077 != 0 {
        permissions.set_mode(0o700);
        fs::set_permissions(path, permissions)?;
    }
    Ok(())
}

fn read_holder(lock: &mut File) -> String {
    let mut text = String::new();
    let _ = lock.seek(SeekFrom::Start(0));
    match lock.take(512).read_to_string(&mut text) {
        Ok(_) if !text.trim().is_empty() => text.trim().to_string(),
        _ => "holder unknown".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_open_names_the_holder_and_drop_releases() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        let first = DataDir::open(&path, "serve").unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        match DataDir::open(&path, "user create") {
            Err(DataDirError::Locked { holder, .. }) => {
                assert!(
                    holder.contains(&format!("pid {}", std::process::id())),
                    "{holder}"
                );
                assert!(holder.contains("lookout serve"), "{holder}");
            }
            other => panic!("expected a lock error, got {other:?}"),
        }
        drop(first);
        DataDir::open(&path, "user create").unwrap();
    }
}
