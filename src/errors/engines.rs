//! What differs between browser engines (V8, Gecko, JavaScriptCore) and SDKs for the same
//! throw site, removed before fingerprinting (version 2 of the rule, CONTRACT section 3):
//! spellings of anonymous functions and of methods, wrapper frames only some engines print,
//! async continuations only some engines print, and messages worded differently per engine.
//!
//! Invariants: pure and total; every function here is part of the fingerprint, so a change
//! to one is a change of the fingerprint version (see `fingerprint.rs`).

use serde_json::Value;

/// Spellings of "no name": V8 `<anonymous>`, Sentry `?`, Trident `Anonymous function`,
/// JavaScriptCore's `global code` / `module code` / `eval code` for top-level code (which V8
/// and Gecko print without a name).
const ANONYMOUS: [&str; 8] = [
    "",
    "<anonymous>",
    "?",
    "anonymous",
    "anonymous function",
    "global code",
    "module code",
    "eval code",
];

/// Files of engine-internal code, never the application's even when a client says so.
const NATIVE_FILES: [&str; 5] = ["<anonymous>", "native", "[native code]", "self-hosted", ""];

/// The engine-neutral name of a function: the last part of a dotted or Gecko path
/// (`Cart.checkout`, `Cart.prototype.checkout`, `Object.checkout`, `outer/checkout` →
/// `checkout`), without `async ` / `new ` prefixes, V8's ` [as alias]`, Gecko's `label*`
/// async cause; anonymous spellings and Gecko's `outer/<` (a closure in
/// `outer`) become the empty name.
pub fn function_key(function: &str) -> String {
    let mut name = function.trim();
    if let Some(at) = name.rfind('*') {
        // `async*f`, `promise callback*f`, `setTimeout handler*` (Gecko's async causes).
        name = &name[at + 1..];
    }
    for prefix in ["async ", "new "] {
        name = name.strip_prefix(prefix).unwrap_or(name).trim_start();
    }
    if let Some(at) = name.find(" [as ") {
        name = &name[..at];
    }
    let name = name.trim();
    if name.ends_with('<') {
        return String::new();
    }
    let name = name.rsplit('/').next().unwrap_or(name);
    if ANONYMOUS.contains(&name.to_ascii_lowercase().as_str()) || name.ends_with(".<anonymous>") {
        return String::new();
    }
    let name = name.rsplit('.').next().unwrap_or(name);
    match ANONYMOUS.contains(&name.to_ascii_lowercase().as_str()) {
        true => String::new(),
        false => name.to_string(),
    }
}

/// A frame some engines print and others do not: code run by `eval`/`new Function` (V8
/// prints `eval`, Gecko the caller's name, JavaScriptCore `eval code`), `eval` itself, and
/// engine code (`Array.map (<anonymous>)`, `map@[native code]`, Gecko's `self-hosted`).
pub fn is_wrapper(frame: &Value) -> bool {
    let file = frame["file"].as_str().unwrap_or_default();
    frame["eval"].as_bool() == Some(true)
        || frame["function"].as_str() == Some("eval")
        || NATIVE_FILES.contains(&file)
}

/// Where the synchronous part of a stack ends: V8 prints `at async f` only for `await`
/// continuations, Gecko prints `async*f`, `promise callback*f` and more, JavaScriptCore
/// prints none; so no frame from here outwards is fingerprinted.
pub fn is_async_boundary(frame: &Value) -> bool {
    let function = frame["function"].as_str().unwrap_or_default();
    frame["async"].as_bool() == Some(true)
        || function.starts_with("async ")
        || function.contains('*')
}

/// A message without what engines and SDKs put before it: `Uncaught ` (window.onerror in
/// Chromium) and an error name (`TypeError: `).
pub fn strip_message_prefix(message: &str) -> &str {
    let message = message.trim();
    let message = message.strip_prefix("Uncaught ").unwrap_or(message);
    match message.split_once(": ") {
        Some((name, rest))
            if name.ends_with("Error")
                && name.len() <= 40
                && name.chars().all(|c| c.is_ascii_alphanumeric()) =>
        {
            rest
        }
        _ => message,
    }
}

/// A type-level key for messages every engine words differently, so one mistake without
/// in-app frames is one group in every browser:
///
/// | V8 | Gecko | JavaScriptCore | key |
/// |---|---|---|---|
/// | `Cannot read properties of undefined (reading 'x')` | `a is undefined`, `can't access property "x", a is undefined` | `undefined is not an object (evaluating 'a.x')` | `<read of undefined>` |
/// | `… of null …` | `a is null` | `null is not an object …` | `<read of null>` |
/// | `a.b is not a function` | same | same + `. (In 'a.b()', 'a.b' is undefined)` | `<not a function>` |
/// | `x is not defined` | same | `Can't find variable: x` | `<not defined: x>` |
pub fn message_key(message: &str) -> Option<String> {
    let text = strip_message_prefix(message);
    for nullish in ["undefined", "null"] {
        let read = text.starts_with(&format!("Cannot read properties of {nullish} "))
            || text.starts_with(&format!("Cannot set properties of {nullish} "))
            || (text.starts_with("Cannot read property ")
                && text.contains(&format!(" of {nullish}")))
            || text.starts_with(&format!("{nullish} is not an object"))
            || text.starts_with("can't access property ")
                && text.ends_with(&format!(" is {nullish}"))
            || is_gecko_nullish(text, nullish);
        if read {
            return Some(format!("<read of {nullish}>"));
        }
    }
    let call = text.split(". (In '").next().unwrap_or(text);
    if call.ends_with(" is not a function") {
        return Some("<not a function>".to_string());
    }
    let variable = text
        .strip_suffix(" is not defined")
        .or_else(|| text.strip_prefix("Can't find variable: "))?;
    is_identifier(variable).then(|| format!("<not defined: {variable}>"))
}

/// Gecko's `a.b is undefined`: an expression of identifiers, dots and brackets.
fn is_gecko_nullish(text: &str, nullish: &str) -> bool {
    text.strip_suffix(&format!(" is {nullish}"))
        .is_some_and(|expression| {
            !expression.is_empty()
                && expression
                    .chars()
                    .all(|c| c.is_alphanumeric() || "_$.[]'\"".contains(c))
        })
}

fn is_identifier(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}

#[cfg(test)]
#[path = "engines_tests.rs"]
mod tests;
