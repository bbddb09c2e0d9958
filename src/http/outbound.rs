//! The resolver every outbound HTTP client uses (webhooks, identity providers): it hands the
//! connector only addresses `destination::address_allowed` accepts.
//!
//! Invariants: the check runs on the addresses actually connected to, so a name that resolves
//! somewhere private (or is rebound there after it was saved) is refused; a refusal is a
//! `PermissionDenied` I/O error whose text starts with `REFUSED`. Agents built on it must also
//! disable redirects and environment proxies, which would bypass it (`guarded_agent` does).

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use super::destination;

/// The marker of a refused destination inside ureq's `Io` error.
pub const REFUSED: &str = "destination refused";

/// A resolver that drops every address the guard refuses, and fails when none is left.
#[derive(Debug)]
pub struct GuardedResolver {
    allow_private: bool,
    inner: DefaultResolver,
}

impl GuardedResolver {
    pub fn new(allow_private: bool) -> GuardedResolver {
        GuardedResolver {
            allow_private,
            inner: DefaultResolver::default(),
        }
    }
}

impl Resolver for GuardedResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let resolved = self.inner.resolve(uri, config, timeout)?;
        let mut allowed = self.empty();
        let mut refusal = None;
        for address in resolved.iter().copied() {
            match destination::address_allowed(address.ip(), self.allow_private) {
                Ok(()) => allowed.push(address),
                Err(err) => refusal = Some(err),
            }
        }
        match refusal {
            Some(err) if allowed.is_empty() => Err(ureq::Error::Io(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("{REFUSED}: {err}"),
            ))),
            _ => Ok(allowed),
        }
    }
}

/// Whether a ureq error is the guard's refusal.
pub fn is_refusal(err: &ureq::Error) -> bool {
    matches!(err, ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::PermissionDenied)
}

/// An agent with `config` (which must have redirects and proxies off) that connects only
/// where the guard allows.
pub fn guarded_agent(config: Config, allow_private: bool) -> ureq::Agent {
    ureq::Agent::with_parts(
        config,
        DefaultConnector::default(),
        GuardedResolver::new(allow_private),
    )
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;

    #[test]
    fn resolver_refuses_loopback_unless_allowed() {
        let uri: Uri = "http://127.0.0.1:9/".parse().unwrap();
        let config = Config::default();
        let err = GuardedResolver::new(false)
            .resolve(&uri, &config, NextTimeout::default())
            .unwrap_err();
        assert!(is_refusal(&err), "{err}");
        assert!(err.to_string().contains(REFUSED), "{err}");
        let addresses = GuardedResolver::new(true)
            .resolve(&uri, &config, NextTimeout::default())
            .unwrap();
        let first: SocketAddr = "127.0.0.1:9".parse().unwrap();
        assert_eq!(addresses.first(), Some(&first));
    }
}
