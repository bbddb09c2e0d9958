//! Where setting values come from: the optional TOML file and the process environment, merged
//! into `RawSettings` (the environment wins, setting by setting; an empty variable is unset), and
//! the typed look-ups every settings group reads through (a value or its documented default,
//! one parser for both sources).

use super::*;

/// The merged, still untyped values: the file first, then the environment on top, trimmed.
#[derive(Default)]
pub(super) struct RawSettings {
    values: HashMap<&'static str, String>,
}

pub(super) const SECOND: Duration = Duration::from_secs(1);
pub(super) const MINUTE: Duration = Duration::from_secs(60);
pub(super) const HOUR: Duration = Duration::from_secs(3600);
pub(super) const DAY: Duration = Duration::from_secs(86_400);

impl RawSettings {
    pub(super) fn from_toml(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let file_error = |message| ConfigError::File {
            path: path.to_path_buf(),
            message,
        };
        let table: toml::Table = text
            .parse()
            .map_err(|error| file_error(toml_error(text, &error)))?;
        let mut values = HashMap::new();
        for (key, value) in &table {
            let known = SETTINGS
                .iter()
                .find(|setting| setting.name.eq_ignore_ascii_case(key));
            let Some(setting) = known else {
                return Err(file_error(format!("unknown key {key:?}")));
            };
            // Keys are documented in lower case; other spellings would be two ways to write one.
            if key.bytes().any(|byte| byte.is_ascii_uppercase()) {
                let lower = key.to_ascii_lowercase();
                let message = format!("unknown key {key:?} (keys are lower case: {lower:?})");
                return Err(file_error(message));
            }
            let rendered =
                toml_value_text(value).map_err(|reason| invalid(setting.name, reason))?;
            values.insert(setting.name, rendered.trim().to_owned());
        }
        Ok(Self { values })
    }

    /// Only names in SETTINGS are looked up, so no other variable can influence the service.
    pub(super) fn overlay_environment(&mut self, env: &HashMap<String, String>) {
        for setting in SETTINGS {
            let Some(value) = env.get(setting.name).map(|value| value.trim()) else {
                continue;
            };
            // `FOO=` in a unit file or shell means "not set", not "set to nothing".
            if !value.is_empty() {
                self.values.insert(setting.name, value.to_owned());
            }
        }
    }

    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// A setting with a default: its value, else the default from SETTINGS, through one parser.
    pub(super) fn setting<T>(
        &self,
        name: &'static str,
        parse: impl Parse<T>,
    ) -> Result<T, ConfigError> {
        let value = match self.get(name) {
            Some(value) => value,
            None => documented_default(name)?,
        };
        parse(value).map_err(|reason| invalid(name, format!("{value:?} {reason}")))
    }

    /// A setting without a default: `None` when neither source sets it.
    pub(super) fn optional<T>(
        &self,
        name: &'static str,
        parse: impl Parse<T>,
    ) -> Result<Option<T>, ConfigError> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        let parsed = parse(value).map_err(|reason| invalid(name, format!("{value:?} {reason}")))?;
        Ok(Some(parsed))
    }

    /// A comma list without a default: empty when unset.
    pub(super) fn list<T>(
        &self,
        name: &'static str,
        entry: impl Parse<T>,
    ) -> Result<Vec<T>, ConfigError> {
        Ok(self.optional(name, list(entry))?.unwrap_or_default())
    }

    /// A whole number of `unit`s; u32 keeps even a year of hours far from Duration's limits.
    pub(super) fn duration(
        &self,
        name: &'static str,
        unit: Duration,
        parse: impl Parse<u32>,
    ) -> Result<Duration, ConfigError> {
        Ok(unit * self.setting(name, parse)?)
    }

    pub(super) fn seconds(
        &self,
        name: &'static str,
        parse: impl Parse<u32>,
    ) -> Result<Duration, ConfigError> {
        self.duration(name, SECOND, parse)
    }

    pub(super) fn minutes(
        &self,
        name: &'static str,
        parse: impl Parse<u32>,
    ) -> Result<Duration, ConfigError> {
        self.duration(name, MINUTE, parse)
    }
}

pub(super) fn invalid(setting: &'static str, message: String) -> ConfigError {
    ConfigError::Invalid { setting, message }
}

/// Reaching the error arm means the code asks for a default the table does not define: a bug that
/// the defaults test catches.
pub(super) fn documented_default(name: &'static str) -> Result<&'static str, ConfigError> {
    match SETTINGS.iter().find(|setting| setting.name == name) {
        Some(setting) if setting.default != NONE => Ok(setting.default),
        _ => Err(invalid(
            name,
            "the setting has no documented default".to_owned(),
        )),
    }
}

pub(super) fn read_config_file(
    explicit: Option<&Path>,
) -> Result<Option<(PathBuf, String)>, ConfigError> {
    let path = explicit.map_or_else(|| PathBuf::from(DEFAULT_CONFIG_PATH), Path::to_path_buf);
    let error = match std::fs::read_to_string(&path) {
        Ok(text) => return Ok(Some((path, text))),
        Err(error) => error,
    };
    // Only the default file is optional; a file named on the command line must exist. Any other
    // failure (permissions, a directory) is reported rather than skipped.
    let message = match error.kind() {
        std::io::ErrorKind::NotFound if explicit.is_none() => return Ok(None),
        std::io::ErrorKind::NotFound => "file not found".to_owned(),
        _ => format!("cannot read the file: {error}"),
    };
    Err(ConfigError::File { path, message })
}

pub(super) fn read_process_environment() -> Result<HashMap<String, String>, ConfigError> {
    let mut env = HashMap::new();
    for setting in SETTINGS {
        let Some(value) = std::env::var_os(setting.name) else {
            continue;
        };
        let not_utf8 = |_| invalid(setting.name, "the value is not valid UTF-8".to_owned());
        env.insert(
            setting.name.to_owned(),
            value.into_string().map_err(not_utf8)?,
        );
    }
    Ok(env)
}

/// One line, lower case like our other messages, instead of toml's multi-line snippet.
pub(super) fn toml_error(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim();
    let Some(span) = error.span() else {
        return message.to_owned();
    };
    // Count bytes rather than slice the str, so an odd span can never panic.
    let before = &text.as_bytes()[..span.start.min(text.len())];
    let line = before.iter().filter(|&&byte| byte == b'\n').count() + 1;
    format!("line {line}: {message}")
}

/// Renders a file value as the environment would carry it. Floats keep their `.0` (`7.0`), so
/// the integer parser rejects them instead of rounding.
pub(super) fn toml_value_text(value: &toml::Value) -> Result<String, String> {
    let scalar = |value: &toml::Value| match value {
        toml::Value::String(text) => Ok(text.clone()),
        toml::Value::Integer(number) => Ok(number.to_string()),
        toml::Value::Boolean(flag) => Ok(flag.to_string()),
        toml::Value::Float(number) => Ok(format!("{number:?}")),
        toml::Value::Datetime(datetime) => Ok(datetime.to_string()),
        toml::Value::Array(_) | toml::Value::Table(_) => Err(
            "a table or nested array is not allowed (expected a string, integer, boolean or array)",
        ),
    };
    let rendered = match value {
        toml::Value::Array(items) => items
            .iter()
            .map(scalar)
            .collect::<Result<Vec<_>, _>>()?
            .join(","),
        other => scalar(other)?,
    };
    Ok(rendered)
}
