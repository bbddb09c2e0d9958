//! TOTP second factor (RFC 6238: SHA-1, 6 digits, 30 s steps, one step of skew) and recovery
//! codes.
//!
//! Invariants: a code is accepted once — the matched time step is recorded and no code of that
//! step or an earlier one passes again; this check-and-set runs inside a write transaction, so
//! of concurrent submissions of one code exactly one wins (the writer serialises them).
//! Recovery codes are stored as SHA-256 digests and each is removed when used.

use qrcode::QrCode;
use qrcode::render::svg;
use redb::WriteTransaction;
use totp_rs::{Algorithm, Secret, Totp};

use super::db;
use super::model::TwoFactor;
use crate::accounts::model::UserId;
use crate::clock::Timestamp;
use crate::store::StoreError;

pub const ISSUER: &str = "Lookout";
pub const RECOVERY_CODES: usize = 10;

/// A fresh 160-bit secret, base32.
pub fn new_secret() -> String {
    Secret::generate().to_base32()
}

fn totp(secret: &str, account: &str) -> Option<Totp> {
    let secret = Secret::try_from_base32(secret).ok()?;
    totp_rs::Builder::new()
        .with_algorithm(Algorithm::SHA1)
        .with_digits(6)
        .with_skew(1)
        .with_step_duration(30)
        .with_secret(secret)
        .with_account_name(account)
        .with_issuer(Some(ISSUER))
        .build()
        .ok()
}

/// The `otpauth://` URI an authenticator app imports.
pub fn otpauth_uri(secret: &str, account: &str) -> Option<String> {
    totp(secret, account)?.to_url().ok()
}

/// The URI as a QR code, in SVG.
pub fn qr_svg(uri: &str) -> Option<String> {
    let code = QrCode::new(uri.as_bytes()).ok()?;
    Some(
        code.render::<svg::Color<'_>>()
            .min_dimensions(200, 200)
            .build(),
    )
}

/// The step a code matches at `now` (current step ± 1), if any.
fn matching_step(secret: &str, code: &str, now: Timestamp) -> Option<u64> {
    let code = code.trim();
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let seconds = u64::try_from(now.unix_seconds()).ok()?;
    totp(secret, "")?.check(code, seconds)
}

/// The current code of `secret` (used by tests and by nothing else in the service).
pub fn current_code(secret: &str, now: Timestamp) -> Option<String> {
    let seconds = u64::try_from(now.unix_seconds()).ok()?;
    Some(totp(secret, "")?.generate(seconds).to_string())
}

/// Ten recovery codes (`xxxxx-xxxxx`, 50 bits each) and their digests.
pub fn new_recovery_codes() -> (Vec<String>, Vec<String>) {
    use rand::Rng;
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";
    let mut rng = rand::rng();
    let codes: Vec<String> = (0..RECOVERY_CODES)
        .map(|_| {
            let mut code: String = (0..10)
                .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
                .collect();
            code.insert(5, '-');
            code
        })
        .collect();
    let digests = codes.iter().map(|code| recovery_digest(code)).collect();
    (codes, digests)
}

fn recovery_digest(code: &str) -> String {
    let normalised: String = code
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| *c != '-' && *c != ' ')
        .collect();
    crate::secrets::digest_hex(&normalised)
}

/// Checks `code` against a pending (not yet enabled) enrolment and, when it matches, enables
/// it with fresh recovery codes, which are returned once.
pub fn confirm_enrolment(
    txn: &WriteTransaction,
    user: &UserId,
    code: &str,
    now: Timestamp,
) -> Result<Option<Vec<String>>, StoreError> {
    let Some(mut enrolment) = db::two_factor(txn, user)? else {
        return Ok(None);
    };
    if enrolment.enabled {
        return Ok(None);
    }
    let Some(step) = matching_step(&enrolment.secret, code, now) else {
        return Ok(None);
    };
    let (codes, digests) = new_recovery_codes();
    enrolment.enabled = true;
    enrolment.enabled_at = Some(now);
    enrolment.last_used_step = Some(step);
    enrolment.recovery_code_digests = digests;
    db::put_two_factor(txn, user, &enrolment)?;
    Ok(Some(codes))
}

/// Checks a second-factor `code` (a TOTP code or a recovery code) of an enabled enrolment and
/// consumes it. `false` for a wrong, reused or too old code.
pub fn verify_and_consume(
    txn: &WriteTransaction,
    user: &UserId,
    code: &str,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let Some(mut enrolment) = db::two_factor(txn, user)?.filter(|e| e.enabled) else {
        return Ok(false);
    };
    if let Some(step) = matching_step(&enrolment.secret, code, now) {
        if enrolment.last_used_step.is_some_and(|last| step <= last) {
            return Ok(false);
        }
        enrolment.last_used_step = Some(step);
        db::put_two_factor(txn, user, &enrolment)?;
        return Ok(true);
    }
    let digest = recovery_digest(code);
    let Some(index) = enrolment
        .recovery_code_digests
        .iter()
        .position(|d| crate::secrets::digests_match(d.as_bytes(), digest.as_bytes()))
    else {
        return Ok(false);
    };
    enrolment.recovery_code_digests.remove(index);
    db::put_two_factor(txn, user, &enrolment)?;
    Ok(true)
}

/// A pending enrolment with a fresh secret (replacing an unconfirmed one).
pub fn pending_enrolment(now: Timestamp) -> TwoFactor {
    TwoFactor {
        secret: new_secret(),
        enabled: false,
        last_used_step: None,
        recovery_code_digests: Vec::new(),
        created_at: now,
        enabled_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_within_one_step_only() {
        let secret = new_secret();
        let now = Timestamp(1_795_348_815_000);
        let code = current_code(&secret, now).unwrap();
        assert!(matching_step(&secret, &code, now).is_some());
        let previous = current_code(&secret, Timestamp(now.unix_millis() - 30_000)).unwrap();
        assert!(
            matching_step(&secret, &previous, now).is_some(),
            "one step of skew"
        );
        let two_back = current_code(&secret, Timestamp(now.unix_millis() - 60_000)).unwrap();
        assert!(
            matching_step(&secret, &two_back, now).is_none(),
            "two steps back is refused"
        );
        assert!(matching_step(&secret, "12345", now).is_none());
        assert!(matching_step(&secret, "abcdef", now).is_none());
    }

    #[test]
    fn recovery_codes_are_distinct_and_normalised() {
        let (codes, digests) = new_recovery_codes();
        assert_eq!(codes.len(), RECOVERY_CODES);
        let unique: std::collections::HashSet<_> = codes.iter().collect();
        assert_eq!(unique.len(), RECOVERY_CODES);
        assert_eq!(
            recovery_digest(&codes[0].to_uppercase().replace('-', " ")),
            digests[0]
        );
    }

    #[test]
    fn otpauth_uri_and_qr() {
        let secret = new_secret();
        let uri = otpauth_uri(&secret, "ada@example.com").unwrap();
        assert!(uri.starts_with("otpauth://totp/"), "{uri}");
        assert!(uri.contains(&format!("secret={secret}")), "{uri}");
        assert!(qr_svg(&uri).unwrap().contains("<svg"));
    }
}
