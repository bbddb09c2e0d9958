//! The IP allowlist of an organisation as a value: parsing what an admin typed, and whether an
//! address is admitted. Pure, so every edge is unit-tested here.
//!
//! Invariants: a stored list holds networks with their host bits cleared, without duplicates,
//! in the order given; a bare address means exactly that host (/32 or /128); an empty list
//! admits everyone (the allowlist is off). IPv4 clients that reach an IPv6 socket appear as
//! IPv4-mapped addresses (`::ffff:a.b.c.d`), so an address is compared in its canonical form.

use std::net::IpAddr;

use ipnet::IpNet;

/// At most this many entries: the check runs on every request.
pub const MAX_ENTRIES: usize = 256;

/// Why a list was refused, naming the entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllowlistError {
    #[error(
        "cidrs[{index}]: {value:?} is not an IP address or CIDR like 10.0.0.0/8 or 2001:db8::/32"
    )]
    Invalid { index: usize, value: String },
    #[error("cidrs: at most {MAX_ENTRIES} entries")]
    TooMany,
}

/// Parses an admin's list into networks.
pub fn parse(entries: &[String]) -> Result<Vec<IpNet>, AllowlistError> {
    if entries.len() > MAX_ENTRIES {
        return Err(AllowlistError::TooMany);
    }
    let mut networks: Vec<IpNet> = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let text = entry.trim();
        let network =
            match text.parse::<IpNet>() {
                Ok(network) => network.trunc(),
                Err(_) => text.parse::<IpAddr>().map(IpNet::from).map_err(|_| {
                    AllowlistError::Invalid {
                        index,
                        value: entry.clone(),
                    }
                })?,
            };
        if !networks.contains(&network) {
            networks.push(network);
        }
    }
    Ok(networks)
}

/// Whether `address` may use the API of an org with this allowlist.
pub fn admits(allowlist: &[IpNet], address: IpAddr) -> bool {
    let address = address.to_canonical();
    allowlist.is_empty() || allowlist.iter().any(|network| network.contains(&address))
}

/// A client address the organisation's allowlist does not admit (403 `ip_not_allowed`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{client} is not in {whose} organisation's IP allowlist")]
pub struct NotAdmitted {
    pub client: IpAddr,
    /// Names the organisation in the detail: "the", "that".
    pub whose: &'static str,
}

/// Refuses `client` unless the allowlist admits it; `whose` names the organisation in the
/// detail ("the", "that").
pub fn require_admitted(
    allowlist: &[IpNet],
    client: IpAddr,
    whose: &'static str,
) -> Result<(), NotAdmitted> {
    if admits(allowlist, client) {
        return Ok(());
    }
    Err(NotAdmitted { client, whose })
}

/// The list as text, the way it is shown back.
pub fn to_strings(allowlist: &[IpNet]) -> Vec<String> {
    allowlist.iter().map(IpNet::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_cidrs_and_bare_addresses_of_both_families() {
        let parsed = parse(&strings(&[
            "10.1.2.3/8",
            " 192.0.2.7 ",
            "2001:db8::1/32",
            "::1",
            "10.0.0.0/8",
        ]))
        .unwrap();
        assert_eq!(
            to_strings(&parsed),
            ["10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32", "::1/128"]
        );
        assert_eq!(parse(&[]).unwrap(), Vec::<IpNet>::new());
    }

    #[test]
    fn refuses_what_is_not_an_address() {
        for bad in [
            "",
            "10.0.0.0/33",
            "example.com",
            "10.0.0",
            "::1/129",
            "1.2.3.4/8/8",
        ] {
            let err = parse(&strings(&["127.0.0.1", bad])).unwrap_err();
            assert_eq!(
                err,
                AllowlistError::Invalid {
                    index: 1,
                    value: bad.into()
                }
            );
        }
        let too_many = vec!["10.0.0.1".to_string(); MAX_ENTRIES + 1];
        assert_eq!(parse(&too_many), Err(AllowlistError::TooMany));
    }

    #[test]
    fn admits_members_of_any_network_and_everyone_when_empty() {
        let list = parse(&strings(&["10.0.0.0/8", "2001:db8::/32"])).unwrap();
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        assert!(admits(&list, ip("10.200.0.1")));
        assert!(admits(&list, ip("2001:db8::42")));
        assert!(admits(&list, ip("::ffff:10.0.0.9")), "IPv4-mapped");
        assert!(!admits(&list, ip("127.0.0.1")));
        assert!(!admits(&list, ip("2001:db9::1")));
        assert!(admits(&[], ip("203.0.113.1")));
    }
}
