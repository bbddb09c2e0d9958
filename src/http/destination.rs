//! Destination checks for outbound URLs (server-side request forgery): webhook channels, and
//! the identity providers SSO fetches from (discovery, key sets, token endpoints, SAML metadata).
//!
//! Invariants: unless `WEBHOOK_ALLOW_PRIVATE=true`, a destination URL must be `http` or `https`
//! and must not name, or resolve to, a loopback, private, link-local, CGNAT, unspecified,
//! multicast, documentation or cloud-metadata address, in IPv4, IPv6 or IPv4-mapped/compatible
//! IPv6 form. The same `address_allowed` check runs twice: on the URL when it is saved
//! (`check_url`) and on every address the resolver hands to the connector at send time
//! (`outbound::GuardedResolver`), so a name that later resolves somewhere private (DNS rebinding) is refused
//! on the address actually connected to. Numeric spellings such as `127.1`, `2130706433` and
//! `0x7f000001` are normalised by the WHATWG URL parser before the check, so they cannot slip by.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// Why a destination was refused; the text is shown to the admin saving the URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DestinationError {
    #[error("url: not a valid absolute URL")]
    Malformed,
    #[error("url: scheme {0:?} is not allowed; use http or https")]
    Scheme(String),
    #[error("url: must not carry a user name or password")]
    Credentials,
    #[error("url: host {0} is a {1} address, which outbound requests may not reach")]
    Address(IpAddr, &'static str),
    #[error("url: host {0} names this machine or an internal service")]
    InternalName(String),
}

/// Parses and checks a destination URL. With `allow_private` only the scheme and shape are checked.
pub fn check_url(text: &str, allow_private: bool) -> Result<Url, DestinationError> {
    let url = Url::parse(text.trim()).map_err(|_| DestinationError::Malformed)?;
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(DestinationError::Scheme(other.to_string())),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(DestinationError::Credentials);
    }
    let host = url.host().ok_or(DestinationError::Malformed)?;
    if allow_private {
        return Ok(url);
    }
    match host {
        Host::Ipv4(ip) => refuse_address(IpAddr::V4(ip))?,
        Host::Ipv6(ip) => refuse_address(IpAddr::V6(ip))?,
        Host::Domain(name) => refuse_internal_name(name)?,
    }
    Ok(url)
}

/// Refuses names that always mean this machine or a cloud's metadata service, before any DNS.
fn refuse_internal_name(name: &str) -> Result<(), DestinationError> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let internal = name == "localhost"
        || name.ends_with(".localhost")
        || name == "metadata.google.internal"
        || name == "metadata"
        || name.ends_with(".internal");
    if internal {
        return Err(DestinationError::InternalName(name));
    }
    Ok(())
}

fn refuse_address(ip: IpAddr) -> Result<(), DestinationError> {
    match classify(ip) {
        None => Ok(()),
        Some(kind) => Err(DestinationError::Address(ip, kind)),
    }
}

/// Whether an outbound request may connect to `ip` (the send-time check on resolved addresses).
pub fn address_allowed(ip: IpAddr, allow_private: bool) -> Result<(), DestinationError> {
    if allow_private {
        return Ok(());
    }
    refuse_address(ip)
}

/// The kind of non-public range `ip` falls in, or `None` for a public unicast address.
pub fn classify(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if ip.is_unspecified() || a == 0 {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    if ip.is_private() {
        return Some("private");
    }
    if ip.is_link_local() {
        // 169.254.169.254 (AWS, GCP, Azure, OpenStack metadata) lives here.
        return Some("link-local or metadata");
    }
    if a == 100 && (64..128).contains(&b) {
        return Some("shared (CGNAT)");
    }
    if a == 192 && b == 0 && c == 0 {
        return Some("IETF protocol assignment");
    }
    if (a == 192 && b == 0 && c == 2)
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
    {
        return Some("documentation");
    }
    if a == 198 && (b == 18 || b == 19) {
        return Some("benchmarking");
    }
    if ip.is_multicast() || ip.is_broadcast() || a >= 240 {
        return Some("multicast or reserved");
    }
    None
}

fn classify_v6(ip: Ipv6Addr) -> Option<&'static str> {
    // IPv4-mapped (::ffff:a.b.c.d) and the deprecated IPv4-compatible (::a.b.c.d) forms reach
    // the IPv4 address they embed, so they get its verdict.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    let segments = ip.segments();
    if segments[..6].iter().all(|s| *s == 0) && !ip.is_loopback() && !ip.is_unspecified() {
        return classify_v4(Ipv4Addr::new(
            (segments[6] >> 8) as u8,
            segments[6] as u8,
            (segments[7] >> 8) as u8,
            segments[7] as u8,
        ));
    }
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    let first = segments[0];
    if first & 0xfe00 == 0xfc00 {
        return Some("private (unique local)");
    }
    if first & 0xffc0 == 0xfe80 || first & 0xffc0 == 0xfec0 {
        return Some("link-local");
    }
    if first & 0xff00 == 0xff00 {
        return Some("multicast");
    }
    // NAT64 (64:ff9b::/96) embeds an IPv4 address too.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return classify_v4(Ipv4Addr::new(
            (segments[6] >> 8) as u8,
            segments[6] as u8,
            (segments[7] >> 8) as u8,
            segments[7] as u8,
        ));
    }
    // AWS's IPv6 metadata endpoint fd00:ec2::254 is covered by fc00::/7 above.
    if first == 0x2001 && segments[1] == 0x0db8 {
        return Some("documentation");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_every_private_spelling() {
        let refused = [
            "http://127.0.0.1/",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0x7f.0.0.1/",
            "http://0177.0.0.1/",
            "http://017700000001/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[::127.0.0.1]/",
            "http://[0:0:0:0:0:ffff:10.0.0.1]/",
            "http://0.0.0.0/",
            "http://0/",
            "http://[::]/",
            "http://10.1.2.3/",
            "http://172.16.0.1/",
            "http://172.31.255.255/",
            "http://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://100.64.0.1/",
            "http://100.127.255.254/",
            "http://[fc00::1]/",
            "http://[fd00:ec2::254]/",
            "http://[fe80::1]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://localhost:8080/",
            "http://LOCALHOST./",
            "http://api.localhost/",
            "http://metadata.google.internal/computeMetadata/v1/",
            "https://224.0.0.1/",
            "http://255.255.255.255/",
        ];
        for url in refused {
            assert!(check_url(url, false).is_err(), "{url} should be refused");
            assert!(
                check_url(url, true).is_ok(),
                "{url} allowed when private is"
            );
        }
    }

    #[test]
    fn accepts_public_destinations() {
        for url in [
            "https://hooks.example.com/lookout",
            "http://93.184.216.34:8080/x?y=1",
            "https://[2606:4700::1111]/",
            "http://172.32.0.1/",
            "http://100.128.0.1/",
            "http://11.0.0.1/",
        ] {
            assert!(check_url(url, false).is_ok(), "{url} should be accepted");
        }
    }

    #[test]
    fn refuses_other_schemes_and_shapes_even_when_private_is_allowed() {
        for url in [
            "ftp://example.com/",
            "file:///etc/passwd",
            "gopher://example.com/",
            "javascript:alert(1)",
            "example.com/hook",
            "",
            "http://user:pw@example.com/",
        ] {
            assert!(check_url(url, true).is_err(), "{url} should be refused");
        }
    }

    #[test]
    fn send_time_check_follows_the_setting() {
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(address_allowed(loopback, false).is_err());
        assert!(address_allowed(loopback, true).is_ok());
        let mapped: IpAddr = "::ffff:169.254.169.254".parse().unwrap();
        assert!(address_allowed(mapped, false).is_err());
        assert!(address_allowed("8.8.8.8".parse().unwrap(), false).is_ok());
    }
}
