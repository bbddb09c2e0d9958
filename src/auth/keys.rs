//! Server secrets kept in the data dir, generated at first start.
//!
//! Invariants: secret files are created with mode 0600 in one step (never world-readable, not
//! even briefly) and written atomically (temp file + rename), so a crash mid-write leaves either
//! no key or a whole key; an existing key with looser permissions is tightened.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use rand::RngCore;

pub const JWT_KEY_FILE: &str = "jwt.key";
const JWT_KEY_BYTES: usize = 64;

/// The HS256 signing key of session tokens.
#[derive(Clone)]
pub struct JwtKey(pub std::sync::Arc<[u8]>);

impl std::fmt::Debug for JwtKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JwtKey([redacted])")
    }
}

/// Loads the JWT key from `data_dir`, creating it on first start.
pub fn load_or_create_jwt_key(data_dir: &Path) -> std::io::Result<JwtKey> {
    let path = data_dir.join(JWT_KEY_FILE);
    match fs::read(&path) {
        Ok(bytes) if bytes.len() == JWT_KEY_BYTES => {
            let mut permissions = fs::metadata(&path)?.permissions();
            if permissions.mode() & 0o077 != 0 {
                tracing::warn!(path = %path.display(), "secret file was readable by others; tightening to 0600");
                permissions.set_mode(0o600);
                fs::set_permissions(&path, permissions)?;
            }
            return Ok(JwtKey(bytes.into()));
        }
        Ok(bytes) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{} holds {} bytes, expected {JWT_KEY_BYTES}",
                    path.display(),
                    bytes.len()
                ),
            ));
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(err),
    }
    let mut key = vec![0u8; JWT_KEY_BYTES];
    rand::rng().fill_bytes(&mut key);
    let temp = data_dir.join(format!("{JWT_KEY_FILE}.tmp"));
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)?;
    file.write_all(&key)?;
    file.sync_all()?;
    fs::rename(&temp, &path)?;
    // Make the rename itself durable.
    fs::File::open(data_dir)?.sync_all()?;
    Ok(JwtKey(key.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_is_created_once_with_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_create_jwt_key(dir.path()).unwrap();
        let mode = fs::metadata(dir.path().join(JWT_KEY_FILE))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let second = load_or_create_jwt_key(dir.path()).unwrap();
        assert_eq!(first.0, second.0);
        assert_eq!(format!("{first:?}"), "JwtKey([redacted])");
    }
}
