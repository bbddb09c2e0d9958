//! An artifact bundle as `sentry-cli sourcemaps upload` builds it, read into the source maps
//! it holds: a zip archive (after an optional `SYSB` + version header) whose `manifest.json`
//! lists each file with its `type` (`minified_source`, `source_map`, …), `url` and `headers`
//! (`debug-id`, `sourcemap`). Only the manifest and the source maps are inflated; minified
//! sources are never read.
//!
//! Invariants: the archive is read by hand, within bounds, before anything is inflated: at most
//! `MAX_ENTRIES` entries; stored or deflated entries only (no encryption, no ZIP64); every
//! offset and size inside the archive; an entry is inflated only up to one byte past its own
//! cap (the manifest `MAX_MANIFEST_BYTES`, a map the source map limit) and must match its
//! declared size and CRC-32; what is inflated in all is capped at `MAX_INFLATED_BYTES`. Any
//! breach is a `BundleError` naming the place, never the bytes.

use std::collections::HashMap;
use std::io::Read;

use serde::Deserialize;

/// The most entries a bundle's archive may list.
pub const MAX_ENTRIES: usize = 1024;
/// The largest `manifest.json`, inflated.
pub const MAX_MANIFEST_BYTES: usize = 1 << 20;
/// The most bytes inflated from one bundle, manifest and maps together.
pub const MAX_INFLATED_BYTES: usize = 64 << 20;

/// Why a bundle cannot be read; the text is what `sentry-cli` prints.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{0}")]
pub struct BundleError(pub String);

fn broken(detail: impl Into<String>) -> BundleError {
    BundleError(detail.into())
}

/// A source map found in a bundle: the minified file it belongs to, its debug id as sent, and
/// its text.
#[derive(Debug, PartialEq)]
pub struct BundledMap {
    /// The minified file's URL as the bundle names it (`~/app.min.js`), else the map's URL
    /// without `.map`.
    pub file: String,
    pub debug_id: Option<String>,
    pub map: String,
}

/// One entry of the central directory.
struct Entry {
    name: String,
    method: u16,
    crc: u32,
    compressed: usize,
    size: usize,
    /// Where its local header starts, in the bytes given to `read_bundle`.
    local_header: usize,
}

#[derive(Deserialize)]
struct Manifest {
    #[serde(default)]
    files: HashMap<String, ManifestFile>,
}

#[derive(Deserialize)]
struct ManifestFile {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    headers: HashMap<String, String>,
}

impl ManifestFile {
    /// A header by its name in any case (`Sourcemap`, `sourcemap`).
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

fn u16_at(bytes: &[u8], at: usize) -> Result<u16, BundleError> {
    bytes
        .get(at..at + 2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or_else(|| broken("the bundle's archive is truncated"))
}

fn u32_at(bytes: &[u8], at: usize) -> Result<u32, BundleError> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| broken("the bundle's archive is truncated"))
}

/// The source maps of a bundle, each at most `max_map_bytes` inflated.
pub fn read_bundle(bytes: &[u8], max_map_bytes: usize) -> Result<Vec<BundledMap>, BundleError> {
    let entries = central_directory(bytes)?;
    let mut budget = MAX_INFLATED_BYTES;
    let manifest = entries
        .iter()
        .find(|entry| entry.name == "manifest.json")
        .ok_or_else(|| broken("the bundle has no manifest.json"))?;
    let manifest = inflate(bytes, manifest, MAX_MANIFEST_BYTES, &mut budget)?;
    let manifest: Manifest = serde_json::from_slice(&manifest)
        .map_err(|_| broken("the bundle's manifest.json is not a manifest"))?;
    let by_name: HashMap<&str, &Entry> = entries.iter().map(|e| (e.name.as_str(), e)).collect();
    let mut maps = Vec::new();
    for (path, described) in &manifest.files {
        if described.kind != "source_map" {
            continue;
        }
        let entry = by_name.get(path.as_str()).ok_or_else(|| {
            broken(format!(
                "the manifest names {path}, which is not in the bundle"
            ))
        })?;
        let text = inflate(bytes, entry, max_map_bytes, &mut budget)?;
        let map = String::from_utf8(text)
            .map_err(|_| broken(format!("the source map {path} is not UTF-8")))?;
        maps.push(BundledMap {
            file: minified_file_of(&manifest, described),
            debug_id: described.header("debug-id").map(str::to_string),
            map,
        });
    }
    Ok(maps)
}

/// The URL of the minified file a map belongs to: the `minified_source` whose `sourcemap`
/// header points at the map, else the one with the same debug id, else the map's URL without
/// `.map`.
fn minified_file_of(manifest: &Manifest, map: &ManifestFile) -> String {
    let sources = || {
        manifest
            .files
            .values()
            .filter(|file| file.kind == "minified_source")
    };
    let by_reference = sources().find(|source| {
        source
            .header("sourcemap")
            .is_some_and(|reference| join(&source.url, reference) == map.url)
    });
    let by_debug_id = || {
        let id = map.header("debug-id")?;
        sources().find(|source| source.header("debug-id") == Some(id))
    };
    match by_reference.or_else(by_debug_id) {
        Some(source) => source.url.clone(),
        None => map.url.strip_suffix(".map").unwrap_or(&map.url).to_string(),
    }
}

/// A `sourcemap` reference resolved against the URL of the file that names it.
fn join(base: &str, reference: &str) -> String {
    if reference.contains("://") || reference.starts_with('/') || reference.starts_with("~/") {
        return reference.to_string();
    }
    match base.rfind('/') {
        Some(slash) => format!("{}{reference}", &base[..=slash]),
        None => reference.to_string(),
    }
}

/// The entries of the archive's central directory, their offsets made relative to `bytes`
/// (a header before the archive, such as `SYSB`, shifts every offset the archive states).
fn central_directory(bytes: &[u8]) -> Result<Vec<Entry>, BundleError> {
    const END_SIGNATURE: u32 = 0x0605_4b50;
    const ENTRY_SIGNATURE: u32 = 0x0201_4b50;
    const END_LEN: usize = 22;
    // The end record is the last 22 bytes plus a comment of at most 65535 bytes.
    let earliest = bytes.len().saturating_sub(END_LEN + usize::from(u16::MAX));
    let end = (earliest..=bytes.len().saturating_sub(END_LEN))
        .rev()
        .find(|&at| bytes.len() >= END_LEN && u32_at(bytes, at).ok() == Some(END_SIGNATURE))
        .ok_or_else(|| broken("the bundle is not a zip archive"))?;
    let count = usize::from(u16_at(bytes, end + 10)?);
    let directory_len = u32_at(bytes, end + 12)? as usize;
    let directory_offset = u32_at(bytes, end + 16)? as usize;
    if count == usize::from(u16::MAX) || directory_offset == u32::MAX as usize {
        return Err(broken("ZIP64 bundles are not supported"));
    }
    if count > MAX_ENTRIES {
        return Err(broken(format!(
            "the bundle has more than {MAX_ENTRIES} entries"
        )));
    }
    let shift = end
        .checked_sub(directory_offset + directory_len)
        .ok_or_else(|| broken("the bundle's central directory is out of bounds"))?;
    let mut at = directory_offset + shift;
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        if u32_at(bytes, at)? != ENTRY_SIGNATURE {
            return Err(broken("the bundle's central directory is corrupt"));
        }
        let flags = u16_at(bytes, at + 8)?;
        let name_len = usize::from(u16_at(bytes, at + 28)?);
        let extra_len = usize::from(u16_at(bytes, at + 30)?);
        let comment_len = usize::from(u16_at(bytes, at + 32)?);
        let name = bytes
            .get(at + 46..at + 46 + name_len)
            .ok_or_else(|| broken("the bundle's archive is truncated"))?;
        if flags & 1 == 1 {
            return Err(broken("encrypted bundles are not supported"));
        }
        entries.push(Entry {
            name: String::from_utf8_lossy(name).into_owned(),
            method: u16_at(bytes, at + 10)?,
            crc: u32_at(bytes, at + 16)?,
            compressed: u32_at(bytes, at + 20)? as usize,
            size: u32_at(bytes, at + 24)? as usize,
            local_header: u32_at(bytes, at + 42)? as usize + shift,
        });
        at += 46 + name_len + extra_len + comment_len;
    }
    Ok(entries)
}

/// An entry's bytes, at most `cap` (and what is left of `budget`), checked against its
/// declared size and CRC-32.
fn inflate(
    bytes: &[u8],
    entry: &Entry,
    cap: usize,
    budget: &mut usize,
) -> Result<Vec<u8>, BundleError> {
    const LOCAL_SIGNATURE: u32 = 0x0403_4b50;
    let name = &entry.name;
    let limit = cap.min(*budget);
    if entry.size > limit {
        return Err(broken(format!(
            "{name} inflates to {} bytes, more than the {limit} allowed",
            entry.size
        )));
    }
    let at = entry.local_header;
    if u32_at(bytes, at)? != LOCAL_SIGNATURE {
        return Err(broken(format!(
            "{name}: no local header where the directory says"
        )));
    }
    let start =
        at + 30 + usize::from(u16_at(bytes, at + 26)?) + usize::from(u16_at(bytes, at + 28)?);
    let data = bytes
        .get(start..start.saturating_add(entry.compressed))
        .ok_or_else(|| broken(format!("{name} runs past the end of the bundle")))?;
    let cap = limit as u64 + 1;
    let mut inflated = Vec::with_capacity(entry.size);
    match entry.method {
        0 => inflated.extend_from_slice(data),
        8 => {
            flate2::read::DeflateDecoder::new(data)
                .take(cap)
                .read_to_end(&mut inflated)
                .map_err(|_| broken(format!("{name} is not valid deflate")))?;
        }
        other => {
            return Err(broken(format!(
                "{name} uses compression method {other}; only stored and deflated entries are read"
            )));
        }
    }
    if inflated.len() != entry.size || crc32fast::hash(&inflated) != entry.crc {
        return Err(broken(format!(
            "{name} does not match its declared size and CRC-32"
        )));
    }
    *budget -= inflated.len();
    Ok(inflated)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bundle `sentry-cli` 3.8.0 uploaded for the fixture in `tests/fixtures/sentry-cli/`
    /// (`sourcemaps inject` then `sourcemaps upload --release 1.0.0`), as it arrived inflated.
    const BUNDLE: &[u8] = include_bytes!("../../tests/fixtures/sentry-cli/bundle.bin");

    #[test]
    fn the_real_cli_bundle_gives_its_map_with_file_and_debug_id() {
        assert!(BUNDLE.starts_with(b"SYSB"), "the header before the archive");
        let maps = read_bundle(BUNDLE, 1 << 20).unwrap();
        assert_eq!(maps.len(), 1);
        assert_eq!(maps[0].file, "~/app.min.js");
        assert_eq!(
            maps[0].debug_id.as_deref(),
            Some("68393a25-88ee-5071-ad32-702df8b402ad")
        );
        assert!(maps[0].map.contains("\"mappings\""));
        // Behind more bytes, it reads the same: offsets are taken from where the end record
        // really is.
        let mut shifted = vec![0; 16];
        shifted.extend_from_slice(BUNDLE);
        assert_eq!(read_bundle(&shifted, 1 << 20).unwrap(), maps);
    }

    #[test]
    fn limits_and_damage_are_errors() {
        let too_small = read_bundle(BUNDLE, 100).unwrap_err();
        assert!(
            too_small.0.contains("more than the 100 allowed"),
            "{too_small}"
        );
        assert!(read_bundle(b"not a zip", 1 << 20).is_err());
        assert!(read_bundle(&BUNDLE[..BUNDLE.len() / 2], 1 << 20).is_err());
        // A flipped byte inside the map's compressed bytes fails its inflation or its CRC-32;
        // inside the minified source (never read) it changes nothing.
        let mut damaged = BUNDLE.to_vec();
        damaged[450] ^= 0x55;
        assert!(read_bundle(&damaged, 1 << 20).is_err());
        let mut damaged = BUNDLE.to_vec();
        damaged[80] ^= 0x55;
        assert!(read_bundle(&damaged, 1 << 20).is_ok());
        for cut in 0..BUNDLE.len() {
            let _ = read_bundle(&BUNDLE[..cut], 1 << 20);
        }
    }

    #[test]
    fn references_resolve_against_the_minified_url() {
        assert_eq!(
            join("~/js/app.min.js", "app.min.js.map"),
            "~/js/app.min.js.map"
        );
        assert_eq!(join("~/app.js", "~/maps/app.js.map"), "~/maps/app.js.map");
        assert_eq!(join("app.js", "app.js.map"), "app.js.map");
    }
}
