//! The SCIM discovery documents (RFC 7644 section 4): `ServiceProviderConfig`,
//! `ResourceTypes` and `Schemas`, as providers read them before they provision. They state
//! exactly what this service does: PATCH yes, bulk, sort, ETags and password changes no,
//! filters limited to one `eq` comparison (up to `MAX_COUNT` results), a bearer token.

use serde_json::{Value, json};

use super::protocol::{GROUP_SCHEMA, LIST_SCHEMA, MAX_COUNT, USER_SCHEMA};

const CONFIG_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig";
const RESOURCE_TYPE_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:ResourceType";
const SCHEMA_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Schema";

pub fn service_provider_config(base: &str) -> Value {
    json!({
        "schemas": [CONFIG_SCHEMA],
        "documentationUri": format!("{base}/docs/sso.md"),
        "patch": {"supported": true},
        "bulk": {"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": true, "maxResults": MAX_COUNT},
        "changePassword": {"supported": false},
        "sort": {"supported": false},
        "etag": {"supported": false},
        "authenticationSchemes": [{
            "type": "oauthbearertoken",
            "name": "SCIM token",
            "description": "A token from POST /api/v1/orgs/me/scim-tokens in Authorization: Bearer",
            "primary": true
        }],
        "meta": {"resourceType": "ServiceProviderConfig", "location": format!("{base}/scim/v2/ServiceProviderConfig")}
    })
}

fn resource_type(base: &str, name: &str, endpoint: &str, schema: &str) -> Value {
    json!({
        "schemas": [RESOURCE_TYPE_SCHEMA],
        "id": name,
        "name": name,
        "endpoint": endpoint,
        "schema": schema,
        "meta": {"resourceType": "ResourceType", "location": format!("{base}/scim/v2/ResourceTypes/{name}")}
    })
}

/// The resource type named `name`, if this service has it.
pub fn resource_type_named(base: &str, name: &str) -> Option<Value> {
    match name {
        "User" => Some(resource_type(base, "User", "/Users", USER_SCHEMA)),
        "Group" => Some(resource_type(base, "Group", "/Groups", GROUP_SCHEMA)),
        _ => None,
    }
}

pub fn resource_types(base: &str) -> Value {
    list(vec![
        resource_type(base, "User", "/Users", USER_SCHEMA),
        resource_type(base, "Group", "/Groups", GROUP_SCHEMA),
    ])
}

fn attribute(name: &str, kind: &str, required: bool, mutability: &str) -> Value {
    json!({
        "name": name, "type": kind, "multiValued": false, "required": required,
        "caseExact": false, "mutability": mutability, "returned": "default", "uniqueness": "none"
    })
}

fn user_schema(base: &str) -> Value {
    let mut user_name = attribute("userName", "string", true, "readWrite");
    user_name["uniqueness"] = json!("server");
    let name = json!({
        "name": "name", "type": "complex", "multiValued": false, "required": false,
        "mutability": "readWrite", "returned": "default",
        "subAttributes": [
            attribute("givenName", "string", false, "readWrite"),
            attribute("familyName", "string", false, "readWrite"),
            attribute("formatted", "string", false, "readWrite"),
        ]
    });
    let emails = json!({
        "name": "emails", "type": "complex", "multiValued": true, "required": false,
        "mutability": "readWrite", "returned": "default",
        "subAttributes": [
            attribute("value", "string", false, "readWrite"),
            attribute("type", "string", false, "readWrite"),
            attribute("primary", "boolean", false, "readWrite"),
        ]
    });
    json!({
        "schemas": [SCHEMA_SCHEMA],
        "id": USER_SCHEMA,
        "name": "User",
        "description": "A member of the organisation",
        "attributes": [
            user_name,
            name,
            attribute("displayName", "string", false, "readWrite"),
            emails,
            attribute("active", "boolean", false, "readWrite"),
            attribute("externalId", "string", false, "readWrite"),
        ],
        "meta": {"resourceType": "Schema", "location": format!("{base}/scim/v2/Schemas/{USER_SCHEMA}")}
    })
}

fn group_schema(base: &str) -> Value {
    let members = json!({
        "name": "members", "type": "complex", "multiValued": true, "required": false,
        "mutability": "readWrite", "returned": "default",
        "subAttributes": [
            attribute("value", "string", false, "immutable"),
            attribute("display", "string", false, "readOnly"),
        ]
    });
    json!({
        "schemas": [SCHEMA_SCHEMA],
        "id": GROUP_SCHEMA,
        "name": "Group",
        "description": "A role of the organisation: admins, members or viewers",
        "attributes": [attribute("displayName", "string", true, "readOnly"), members],
        "meta": {"resourceType": "Schema", "location": format!("{base}/scim/v2/Schemas/{GROUP_SCHEMA}")}
    })
}

/// The schema with id `id`, if this service has it.
pub fn schema_with_id(base: &str, id: &str) -> Option<Value> {
    match id {
        USER_SCHEMA => Some(user_schema(base)),
        GROUP_SCHEMA => Some(group_schema(base)),
        _ => None,
    }
}

pub fn schemas(base: &str) -> Value {
    list(vec![user_schema(base), group_schema(base)])
}

fn list(resources: Vec<Value>) -> Value {
    json!({
        "schemas": [LIST_SCHEMA],
        "totalResults": resources.len(),
        "startIndex": 1,
        "itemsPerPage": resources.len(),
        "Resources": resources,
    })
}
