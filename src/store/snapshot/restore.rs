//! Restoring a backup into an empty (or absent) data dir.
//!
//! Invariants:
//! - Every refusal that depends on the file or the target (damaged, truncated, newer format or
//!   schema, non-empty target) happens before anything is created or written, so a refused
//!   restore leaves the target exactly as it was, and absent if it was absent.
//! - The database is unpacked under a temporary name inside the locked target, checked row by
//!   row against the manifest, fsynced, and only then renamed to `lookout.redb`; a restore that
//!   fails or is killed midway leaves no `lookout.redb` behind, so `serve` cannot start on half
//!   a database.
//! - Only the database is restored. Derived data is rebuilt by `serve` from redb: the search
//!   index, once it exists, is rebuilt at start-up when missing, which is its hook. Server
//!   secrets outside redb (`jwt.key`) are not in backups: a restored server makes new ones, so
//!   sessions issued before the restore end and users sign in again.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::format::Manifest;
use super::read::{check_database, inspect_layout, unpack};
use super::{ProgressFn, SnapshotError};
use crate::store::data_dir::{DATABASE_FILE, DataDir, LOCK_FILE};

const STAGING_FILE: &str = "lookout.redb.restoring";

/// Restores the backup at `backup` into `target`, which must be absent or empty.
pub fn restore(
    backup: &Path,
    target: &Path,
    progress: ProgressFn<'_>,
) -> Result<Manifest, SnapshotError> {
    refuse_unusable_target(target, &[])?;
    let (manifest, layout) = inspect_layout(backup, progress)?;

    let existed = target.exists();
    let owner = existed
        .then(|| fs::metadata(target).map(|m| (m.uid(), m.gid())))
        .transpose();
    let owner = owner.map_err(SnapshotError::io("cannot read", target))?;
    let dir = DataDir::open(target, "restore")?;
    // Another process may have written into the directory between the first check and the lock;
    // whatever it wrote is left alone.
    refuse_unusable_target(target, &[LOCK_FILE])?;
    // From here on the target is ours; `Cleanup` undoes our writes unless the restore completes.
    let mut cleanup = Cleanup {
        target: target.to_path_buf(),
        remove_dir: !existed,
        armed: true,
    };

    let staging = target.join(STAGING_FILE);
    unpack(backup, &layout, &manifest, &staging, progress)?;
    check_database(&staging, &manifest)?;
    let database = target.join(DATABASE_FILE);
    fs::rename(&staging, &database).map_err(SnapshotError::io("cannot rename into", &database))?;
    if let Some((uid, gid)) = owner {
        give_to_owner(target, uid, gid)?;
    }
    fs::File::open(target)
        .and_then(|dir| dir.sync_all())
        .map_err(SnapshotError::io("cannot fsync", target))?;
    cleanup.armed = false;
    drop(dir);
    Ok(manifest)
}

/// Refuses a target that is not a directory, or holds anything but the `allowed` names.
fn refuse_unusable_target(target: &Path, allowed: &[&str]) -> Result<(), SnapshotError> {
    let entries = match fs::read_dir(target) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(_) if target.exists() && !target.is_dir() => {
            return Err(SnapshotError::TargetNotDirectory {
                path: target.to_path_buf(),
            });
        }
        Err(err) => return Err(SnapshotError::io("cannot read", target)(err)),
    };
    for entry in entries {
        let entry = entry.map_err(SnapshotError::io("cannot read", target))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !allowed.contains(&name.as_str()) {
            return Err(SnapshotError::TargetNotEmpty {
                path: target.to_path_buf(),
                first: name,
            });
        }
    }
    Ok(())
}

/// A restore run as root into a directory made for the service (its StateDirectory) hands the
/// files to that directory's owner, or the service could not open its own database. Files
/// made by anyone else already belong to the user who restored, which is what they asked for.
fn give_to_owner(target: &Path, uid: u32, gid: u32) -> Result<(), SnapshotError> {
    for name in [DATABASE_FILE, LOCK_FILE] {
        let path = target.join(name);
        let metadata = fs::metadata(&path).map_err(SnapshotError::io("cannot read", &path))?;
        let made_by_root = metadata.uid() == 0;
        if made_by_root && (metadata.uid(), metadata.gid()) != (uid, gid) {
            std::os::unix::fs::chown(&path, Some(uid), Some(gid))
                .map_err(SnapshotError::io("cannot change the owner of", &path))?;
        }
    }
    Ok(())
}

/// Removes what an unfinished restore created: the staging file, the lock file and, when the
/// restore created it, the directory itself.
struct Cleanup {
    target: PathBuf,
    remove_dir: bool,
    armed: bool,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        for name in [STAGING_FILE, DATABASE_FILE, LOCK_FILE] {
            let _ = fs::remove_file(self.target.join(name));
        }
        if self.remove_dir {
            let _ = fs::remove_dir(&self.target);
        }
    }
}
