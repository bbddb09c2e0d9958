//! SCIM PATCH bodies (RFC 7644 section 3.5.2) as identity providers send them: Okta's
//! `{"op":"replace","value":{"active":false}}`, Entra ID's `{"op":"Replace","path":"active",
//! "value":"False"}`, member edits on groups with `members` or `members[value eq "…"]`.
//!
//! Invariants: the body must name the PatchOp schema and hold 1 to `MAX_OPERATIONS`
//! operations; `op` compares case-insensitively; a path keeps its spelling for the resource
//! to read (attribute names compare case-insensitively there) with a core-schema URN prefix
//! taken off. Booleans may come as JSON booleans or as the strings `true`/`false` in any case.

use serde_json::Value;

use super::protocol::{PATCH_SCHEMA, ScimError};

/// The most operations one PATCH may carry.
pub const MAX_OPERATIONS: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Add,
    Replace,
    Remove,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PatchOperation {
    pub op: Op,
    /// Without the core schema's URN prefix; `None` when the value names the attributes.
    pub path: Option<String>,
    pub value: Option<Value>,
}

/// The operations of a PATCH body.
pub fn parse(body: &Value, core_schema: &str) -> Result<Vec<PatchOperation>, ScimError> {
    let names_schema = body["schemas"]
        .as_array()
        .is_some_and(|schemas| schemas.iter().any(|schema| schema == PATCH_SCHEMA));
    if !names_schema {
        return Err(ScimError::bad(
            "invalidSyntax",
            format!("schemas: must include {PATCH_SCHEMA}"),
        ));
    }
    let operations = body["Operations"]
        .as_array()
        .ok_or_else(|| ScimError::bad("invalidSyntax", "Operations: expected an array"))?;
    if operations.is_empty() || operations.len() > MAX_OPERATIONS {
        return Err(ScimError::bad(
            "invalidSyntax",
            format!("Operations: 1 to {MAX_OPERATIONS} operations"),
        ));
    }
    operations
        .iter()
        .map(|operation| one(operation, core_schema))
        .collect()
}

fn one(operation: &Value, core_schema: &str) -> Result<PatchOperation, ScimError> {
    let op = match operation["op"]
        .as_str()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("add") => Op::Add,
        Some("replace") => Op::Replace,
        Some("remove") => Op::Remove,
        _ => {
            return Err(ScimError::bad(
                "invalidSyntax",
                "op: add, replace or remove",
            ));
        }
    };
    let path = match &operation["path"] {
        Value::Null => None,
        Value::String(path) => Some(without_schema(path.trim(), core_schema).to_string()),
        _ => return Err(ScimError::bad("invalidPath", "path: expected a string")),
    };
    let value = operation
        .get("value")
        .filter(|value| !value.is_null())
        .cloned();
    match (op, &path, &value) {
        (Op::Remove, None, _) => Err(ScimError::bad("noTarget", "remove needs a path")),
        (Op::Add | Op::Replace, _, None) => Err(ScimError::bad("invalidValue", "value: required")),
        (Op::Add | Op::Replace, None, Some(value)) if !value.is_object() => Err(ScimError::bad(
            "invalidValue",
            "value: an object of attributes when there is no path",
        )),
        _ => Ok(PatchOperation { op, path, value }),
    }
}

/// `path` without a leading `<core schema>:`.
fn without_schema<'a>(path: &'a str, core_schema: &str) -> &'a str {
    match path.get(..core_schema.len()) {
        Some(prefix) if prefix.eq_ignore_ascii_case(core_schema) => {
            path[core_schema.len()..].trim_start_matches(':')
        }
        _ => path,
    }
}

/// A boolean as providers send it: `false`, `"False"`, `"true"`.
pub fn boolean(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(flag) => Some(*flag),
        Value::String(text) if text.eq_ignore_ascii_case("true") => Some(true),
        Value::String(text) if text.eq_ignore_ascii_case("false") => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::protocol::USER_SCHEMA;
    use super::*;

    fn body(operations: Value) -> Value {
        json!({"schemas": [PATCH_SCHEMA], "Operations": operations})
    }

    #[test]
    fn okta_and_entra_bodies_are_read() {
        let okta = parse(
            &body(json!([{"op": "replace", "value": {"active": false}}])),
            USER_SCHEMA,
        )
        .unwrap();
        assert_eq!(okta[0].op, Op::Replace);
        assert_eq!(okta[0].path, None);
        assert_eq!(okta[0].value, Some(json!({"active": false})));

        let entra = parse(
            &body(json!([
                {"op": "Replace", "path": "active", "value": "False"},
                {"op": "Add", "path": "urn:ietf:params:scim:schemas:core:2.0:User:name.givenName", "value": "Ada"},
                {"op": "Remove", "path": "externalId"},
            ])),
            USER_SCHEMA,
        )
        .unwrap();
        assert_eq!(entra[0].path.as_deref(), Some("active"));
        assert_eq!(boolean(entra[0].value.as_ref().unwrap()), Some(false));
        assert_eq!(entra[1].path.as_deref(), Some("name.givenName"));
        assert_eq!(entra[2].op, Op::Remove);
    }

    #[test]
    fn malformed_bodies_are_refused() {
        let bad = [
            json!({"Operations": [{"op": "replace", "path": "active", "value": false}]}),
            body(json!([])),
            body(json!({"op": "replace"})),
            body(json!([{"op": "move", "path": "active", "value": false}])),
            body(json!([{"op": "remove"}])),
            body(json!([{"op": "replace", "path": "active"}])),
            body(json!([{"op": "replace", "value": false}])),
            body(json!([{"op": "add", "path": 7, "value": 1}])),
            body(Value::Array(vec![
                json!({"op": "remove", "path": "x"});
                MAX_OPERATIONS + 1
            ])),
        ];
        for body in bad {
            assert!(parse(&body, USER_SCHEMA).is_err(), "{body}");
        }
        assert_eq!(boolean(&json!("TRUE")), Some(true));
        assert_eq!(boolean(&json!(1)), None);
    }
}
