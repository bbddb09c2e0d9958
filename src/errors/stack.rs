//! Stack parsing: the `stack` string of a browser error (V8/Chrome, Gecko/Firefox or
//! JavaScriptCore/Safari format) into frames, innermost first, as the browser printed them.
//!
//! Invariants: parsing is total — any input gives a (possibly empty) list of frames and never
//! panics; a line that is not a frame (the message line of V8 stacks, `eval code`, blank lines,
//! anything that names no file) is skipped. At most `MAX_FRAMES` frames are kept, so a hostile
//! stack costs bounded work downstream. Eval frames report the location of the script that
//! called `eval` (the only location a source map can resolve) and carry `eval: true`; async
//! frames carry `async: true`.

use serde_json::{Map, Value};

/// Frames kept from one stack; browsers print at most a few dozen (V8 keeps 10 by default).
pub const MAX_FRAMES: usize = 128;

/// One stack frame, borrowing the stack's text (parsing allocates nothing per frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// URL or path of the script; `[native code]` / `<anonymous>` for frames without one.
    pub file: &'a str,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub function: Option<&'a str>,
    /// An `await` continuation (V8 `at async f`, Gecko `async*f`).
    pub is_async: bool,
    /// Code run by `eval` or `new Function`; the location is that of the caller.
    pub is_eval: bool,
}

impl<'a> Frame<'a> {
    fn new(file: &'a str, line: Option<u32>, column: Option<u32>) -> Frame<'a> {
        Frame {
            file,
            line,
            column,
            function: None,
            is_async: false,
            is_eval: false,
        }
    }

    /// The frame in the ingest wire shape: `{"file","line","column","function"?}` plus
    /// `"async"` / `"eval"` when set.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("file".into(), Value::from(self.file));
        if let Some(line) = self.line {
            object.insert("line".into(), Value::from(line));
        }
        if let Some(column) = self.column {
            object.insert("column".into(), Value::from(column));
        }
        if let Some(function) = self.function {
            object.insert("function".into(), Value::from(function));
        }
        if self.is_async {
            object.insert("async".into(), Value::Bool(true));
        }
        if self.is_eval {
            object.insert("eval".into(), Value::Bool(true));
        }
        Value::Object(object)
    }
}

/// Parses a stack in any of the three formats. V8 stacks are recognised by their `at ` lines
/// (their first line is the message, which may contain anything); everything else is read
/// as Gecko/JavaScriptCore `function@location` lines.
pub fn parse(stack: &str) -> Vec<Frame<'_>> {
    frames(stack).collect()
}

/// The frames `parse` returns, one at a time (for a reader that keeps none of them).
pub fn frames(stack: &str) -> impl Iterator<Item = Frame<'_>> {
    let is_v8 = stack
        .lines()
        .any(|line| line.trim_start().starts_with("at "));
    let parse_line = if is_v8 {
        parse_v8_line
    } else {
        parse_gecko_line
    };
    stack
        .lines()
        .filter_map(move |line| parse_line(line.trim()))
        // A frame names its script; `f@ line 3 > eval` or `at f ( :1:2)` name none.
        .filter(|frame| !frame.file.trim().is_empty())
        .take(MAX_FRAMES)
}

/// `at [async ][function ](location)` or `at [async ]location`.
fn parse_v8_line(line: &str) -> Option<Frame<'_>> {
    let rest = line.strip_prefix("at ")?.trim();
    let (is_async, rest) = match rest.strip_prefix("async ") {
        Some(rest) => (true, rest.trim_start()),
        None => (false, rest),
    };
    let (function, location) = match matching_open_paren(rest) {
        Some(open) => (Some(rest[..open].trim()), &rest[open + 1..rest.len() - 1]),
        None => (None, rest),
    };
    let mut frame = parse_v8_location(location)?;
    frame.function = function.filter(|f| !f.is_empty());
    frame.is_async = is_async;
    Some(frame)
}

/// The index of the `(` that matches a final `)`, when `text` ends with one.
fn matching_open_paren(text: &str) -> Option<usize> {
    if !text.ends_with(')') {
        return None;
    }
    let mut depth = 0usize;
    for (index, byte) in text.bytes().enumerate().rev() {
        match byte {
            b')' => depth += 1,
            b'(' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(index);
                }
            }
            _ => {}
        }
    }
    None
}

/// A V8 location: `url:line:col`, `url:line`, `native`, `<anonymous>`, or
/// `eval at f (location), <anonymous>:l:c` (possibly nested).
fn parse_v8_location(location: &str) -> Option<Frame<'_>> {
    if location.trim().is_empty() {
        return None;
    }
    if let Some(origin) = location.strip_prefix("eval at ") {
        // The caller's location sits in the parentheses after the caller's name.
        let open = origin.find('(')?;
        let close = matching_close_paren(origin, open)?;
        let mut frame = parse_v8_location(&origin[open + 1..close])?;
        frame.is_eval = true;
        return Some(frame);
    }
    Some(split_location(location))
}

/// The index of the `)` closing the `(` at `open`.
fn matching_close_paren(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (index, byte) in text.bytes().enumerate().skip(open) {
        match byte {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(index);
                }
            }
            _ => {}
        }
    }
    None
}

/// `file:line:column`, `file:line` or `file` (read from the end: URLs hold colons too).
fn split_location(location: &str) -> Frame<'_> {
    let number = |text: &str| text.parse::<u32>().ok();
    if let Some((head, last)) = location.rsplit_once(':')
        && let Some(last) = number(last)
    {
        if let Some((file, line)) = head.rsplit_once(':')
            && let Some(line) = number(line)
            && !file.is_empty()
        {
            return Frame::new(file, Some(line), Some(last));
        }
        if !head.is_empty() && !head.ends_with('/') {
            return Frame::new(head, Some(last), None);
        }
    }
    Frame::new(location, None, None)
}

/// Gecko and JavaScriptCore: `function@location`, `@location`, a bare `location` (Safari's
/// anonymous frames) or `[native code]`. Gecko prints eval'd code as
/// `url line N > eval:l:c` (or `> Function`), whose real location is `url:N`.
fn parse_gecko_line(line: &str) -> Option<Frame<'_>> {
    if line.is_empty() {
        return None;
    }
    let (function, location) = match split_at_sign(line) {
        Some((function, location)) => (Some(function), location),
        None => (None, line),
    };
    if location.trim().is_empty() {
        return None;
    }
    let mut frame = if location == "[native code]" {
        Frame::new(location, None, None)
    } else if let Some((file, after)) = location.split_once(" line ")
        && after.contains('>')
    {
        let line = after.split(' ').next().and_then(|n| n.parse().ok());
        let mut frame = Frame::new(file, line, None);
        frame.is_eval = true;
        frame
    } else {
        let frame = split_location(location);
        // A line without `@` is only a frame when it names a position (`eval code`, a
        // message line or garbage is not).
        if function.is_none() && frame.line.is_none() {
            return None;
        }
        frame
    };
    let mut function = function.unwrap_or("");
    if let Some(rest) = function.strip_prefix("async*") {
        frame.is_async = true;
        function = rest;
    }
    if !function.is_empty() {
        frame.function = Some(function);
    }
    Some(frame)
}

/// Splits at the `@` that separates the function from a location. Function names never hold
/// `@` followed by a scheme or `[native code]`, while URLs may hold `@` in their user part.
fn split_at_sign(line: &str) -> Option<(&str, &str)> {
    let at = line.find('@')?;
    Some((&line[..at], &line[at + 1..]))
}

#[cfg(test)]
#[path = "stack_tests.rs"]
mod tests;
