//! Parsers of single setting values. Each takes the trimmed text and returns the typed value
//! or the reason it is invalid, phrased to follow the quoted value.

use super::*;

pub(super) trait Parse<T>: Fn(&str) -> Result<T, String> {}
impl<T, F: Fn(&str) -> Result<T, String>> Parse<T> for F {}

/// Bounds shared by the integer parsers; `Default` is zero.
pub(super) trait Integer: FromStr + PartialOrd + Default + Copy + fmt::Display {}
impl<T: FromStr + PartialOrd + Default + Copy + fmt::Display> Integer for T {}

/// Plain decimal digits only, so signs, fractions and exponents are rejected, never rounded.
pub(super) fn whole_number<T: Integer>(value: &str, min: T) -> Result<T, String> {
    if value.is_empty() || !value.bytes().all(|byte| byte.is_ascii_digit()) {
        let kind = if min > T::default() {
            "positive"
        } else {
            "non-negative"
        };
        return Err(format!("is not a {kind} integer"));
    }
    // All digits, so the only failure left is overflow.
    value.parse().map_err(|_| "is too large".to_owned())
}

pub(super) fn at_least<T: Integer>(min: T) -> impl Parse<T> {
    move |value| match whole_number(value, min)? {
        number if number < min => Err(format!("must be at least {min}")),
        number => Ok(number),
    }
}

pub(super) fn between<T: Integer>(min: T, max: T) -> impl Parse<T> {
    move |value| match whole_number(value, min)? {
        number if number < min || number > max => Err(format!("must be between {min} and {max}")),
        number => Ok(number),
    }
}

pub(super) fn boolean(value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err("is not a boolean (expected true/false, yes/no, on/off or 1/0)".to_owned()),
    }
}

/// A comma list: entries are trimmed, empty ones dropped, and the error quotes the bad entry.
pub(super) fn list<T>(entry: impl Parse<T>) -> impl Parse<Vec<T>> {
    move |value| {
        let entries = value
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty());
        let parse =
            |item| entry(item).map_err(|why| format!("has an invalid entry: {item:?} {why}"));
        entries.map(parse).collect()
    }
}

pub(super) fn data_dir(value: &str) -> Result<PathBuf, String> {
    if value.is_empty() {
        return Err("is not a directory path".to_owned());
    }
    Ok(PathBuf::from(value))
}

/// Host names are refused: binding must not depend on name resolution at start-up.
pub(super) fn listen_address(value: &str) -> Result<SocketAddr, String> {
    let expected = "is not an IP address and port like 127.0.0.1:8080 or [::]:8080";
    value.parse().map_err(|_| expected.to_owned())
}

pub(super) fn base_url(value: &str) -> Result<Url, String> {
    let mut url = Url::parse(value).map_err(|error| format!("is not a URL ({error})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("is not an http or https URL".to_owned());
    }
    let has_credentials = !url.username().is_empty() || url.password().is_some();
    if has_credentials || url.query().is_some() || url.fragment().is_some() {
        return Err("must not carry credentials, a query or a fragment".to_owned());
    }
    // Paths are appended to the base URL, so a trailing slash would double up.
    let path = url.path().trim_end_matches('/').to_owned();
    url.set_path(&path);
    Ok(url)
}

/// A bare address is taken as a single host (/32 or /128); host bits of a CIDR are cleared.
pub(super) fn ip_net(value: &str) -> Result<IpNet, String> {
    if let Ok(net) = value.parse::<IpNet>() {
        return Ok(net.trunc());
    }
    let address = value.parse::<IpAddr>();
    address
        .map(IpNet::from)
        .map_err(|_| "is not an IP address or CIDR like 10.0.0.0/8".to_owned())
}

pub(super) fn log_format(value: &str) -> Result<LogFormat, String> {
    match value.to_ascii_lowercase().as_str() {
        "text" => Ok(LogFormat::Text),
        "json" => Ok(LogFormat::Json),
        _ => Err("is not a log format (expected text or json)".to_owned()),
    }
}

/// Checked with the parser logging will use, so a bad filter fails here and not at first log.
pub(super) fn log_filter(value: &str) -> Result<String, String> {
    match tracing_subscriber::EnvFilter::try_new(value) {
        Ok(_) => Ok(value.to_owned()),
        Err(error) => Err(format!(
            "is not a log filter like info or lookout=debug,info ({error})"
        )),
    }
}

/// A plausible host name: dot-separated labels of letters, digits and inner hyphens, with an
/// optional leading dot (which browsers ignore).
pub(super) fn cookie_domain(value: &str) -> Result<String, String> {
    let host = value.strip_prefix('.').unwrap_or(value);
    let label_ok = |label: &str| {
        let allowed = label
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-');
        (1..=63).contains(&label.len())
            && allowed
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if host.is_empty() || host.len() > 253 || !host.split('.').all(label_ok) {
        return Err(
            "is not a host name like example.com (no scheme, port, path or spaces)".to_owned(),
        );
    }
    Ok(value.to_ascii_lowercase())
}

/// Ids are `org_` plus a canonical ULID: 26 upper-case Crockford base32 characters.
pub(super) fn organisation_id(value: &str) -> Result<String, String> {
    const CROCKFORD: &str = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let canonical = value.strip_prefix("org_").is_some_and(|ulid| {
        // The ulid crate also rejects values beyond 128 bits, which the alphabet alone allows.
        let alphabet = ulid.chars().all(|c| CROCKFORD.contains(c));
        ulid.len() == 26 && alphabet && ulid::Ulid::from_string(ulid).is_ok()
    });
    if !canonical {
        return Err("is not an organisation id (org_ followed by a 26-character ULID)".to_owned());
    }
    Ok(value.to_owned())
}

/// Browsers send `Origin` as scheme, host and non-default port only, so that is all an entry may
/// hold; it is stored serialised the way browsers send it.
pub(super) fn origin(value: &str) -> Result<String, String> {
    let expected = "is not an origin like https://app.example.com (scheme, host, optional port)";
    let url = Url::parse(value).map_err(|_| expected.to_owned())?;
    let bare = url.path() == "/" && url.query().is_none() && url.fragment().is_none();
    let anonymous = url.username().is_empty() && url.password().is_none();
    if !matches!(url.scheme(), "http" | "https") || !bare || !anonymous {
        return Err(expected.to_owned());
    }
    Ok(url.origin().ascii_serialization())
}

pub(super) fn allowed_origins(value: &str) -> Result<AllowedOrigins, String> {
    if value == "*" {
        return Ok(AllowedOrigins::Any);
    }
    // An empty list would quietly refuse every browser; ask for `*` or named origins instead.
    let origins = list(origin)(value)?;
    if origins.is_empty() {
        return Err("is empty (expected * or a comma list of origins)".to_owned());
    }
    Ok(AllowedOrigins::List(origins))
}

pub(super) fn channel(value: &str) -> Result<String, String> {
    if value.chars().any(char::is_control) {
        return Err("contains control characters".to_owned());
    }
    Ok(value.to_owned())
}

pub(super) fn retry_delays(value: &str) -> Result<Vec<Duration>, String> {
    let delays = list(at_least(1u32))(value)?;
    if !(1..=10).contains(&delays.len()) {
        return Err(format!("has {} delays (expected 1 to 10)", delays.len()));
    }
    Ok(delays.into_iter().map(|count| SECOND * count).collect())
}

/// Keys are secrets: errors say which setting holds a bad key and why, never what the key is.
pub(super) fn ingest_keys(raw: &RawSettings) -> Result<Vec<String>, ConfigError> {
    // WEB_INGEST_KEY holds exactly one key, so only WEB_INGEST_KEYS is split at commas.
    let single = raw.get("WEB_INGEST_KEY").map(|key| ("WEB_INGEST_KEY", key));
    let rotation = raw
        .get("WEB_INGEST_KEYS")
        .into_iter()
        .flat_map(|keys| keys.split(','));
    let candidates = single
        .into_iter()
        .chain(rotation.map(|key| ("WEB_INGEST_KEYS", key.trim())));
    let mut keys: Vec<String> = Vec::new();
    for (setting, key) in candidates.filter(|(_, key)| !key.is_empty()) {
        ingest_key(key).map_err(|reason| invalid(setting, reason))?;
        if !keys.iter().any(|known| known == key) {
            keys.push(key.to_owned());
        }
    }
    Ok(keys)
}

pub(super) fn ingest_key(key: &str) -> Result<(), String> {
    let length = key.chars().count();
    if length < 16 {
        return Err(format!(
            "a key has {length} characters (expected at least 16)"
        ));
    }
    let alphabet = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-';
    if !key.bytes().all(alphabet) {
        return Err("a key has characters other than A-Z a-z 0-9 _ -".to_owned());
    }
    Ok(())
}
