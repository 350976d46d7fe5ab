//! The OpenAPI 3.1 document of the management API, built from the handlers themselves:
//! every route is registered through `utoipa-axum` with the path its `#[utoipa::path]`
//! documents, so the served routes and the document cannot drift apart. Served at
//! `GET /manage/openapi.json` (behind the same auth as every path) and committed as
//! `docs/openapi.json` (a test keeps the two equal; `strom openapi` prints it).
//!
//! Auth: `salt` and `hash = base64(md5("<salt>/<token>"))` in the query, described as
//! two API keys that go together. Answers every operation may give (403 without a valid
//! hash, 404 for bad names, 405, 413 for a body past the limit) are added to all.

use super::shapes::ErrorBody;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::openapi::{OpenApi as Document, RefOr, ResponseBuilder};
use utoipa::{Modify, OpenApi, PartialSchema};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "strom management API",
        description = "Wire-compatible with spec/management-api.md; see docs/api.md (Management API)."
    ),
    components(schemas(ErrorBody)),
    security(("salt" = [], "hash" = [])),
    modifiers(&Common)
)]
pub struct ApiDoc;

/// The auth scheme and the answers every operation may give.
struct Common;

impl Modify for Common {
    fn modify(&self, document: &mut Document) {
        let components = document.components.get_or_insert_with(Default::default);
        for name in ["salt", "hash"] {
            components.add_security_scheme(
                name,
                SecurityScheme::ApiKey(ApiKey::Query(ApiKeyValue::with_description(
                    name,
                    "With management_token set: any salt, and hash = base64(md5(\"<salt>/<token>\"))",
                ))),
            );
        }
        let error = |description: &str| {
            RefOr::T(
                ResponseBuilder::new()
                    .description(description)
                    .content(
                        "application/json",
                        utoipa::openapi::ContentBuilder::new()
                            .schema(Some(ErrorBody::schema()))
                            .build(),
                    )
                    .build(),
            )
        };
        for item in document.paths.paths.values_mut() {
            for operation in [
                &mut item.get,
                &mut item.post,
                &mut item.delete,
                &mut item.put,
            ]
            .into_iter()
            .flatten()
            {
                let responses = &mut operation.responses.responses;
                for (code, description) in [
                    ("400", "bad request (body, query or name)"),
                    ("403", "missing or wrong salt/hash"),
                    ("404", "unknown stream or resource"),
                    ("405", "method not allowed"),
                    ("413", "body too large"),
                    ("503", "a worker did not answer"),
                ] {
                    responses
                        .entry(code.to_owned())
                        .or_insert_with(|| error(description));
                }
            }
        }
    }
}

/// The document as served and committed (pretty JSON with a final newline).
pub fn document_text(document: &Document) -> String {
    let mut text = document.to_pretty_json().unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    /// The committed document is the one the code generates; after an API change run
    /// `cargo run -p strom -- openapi > docs/openapi.json`.
    #[test]
    fn the_committed_document_is_current() {
        let generated = crate::api::openapi_document();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json");
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            generated == committed,
            "docs/openapi.json is stale: run `cargo run -p strom -- openapi > docs/openapi.json`"
        );
        let document: serde_json::Value = serde_json::from_str(&generated).unwrap();
        assert_eq!(document["openapi"], "3.1.0");
        assert!(document["paths"]["/manage/server_status"]["get"].is_object());
        assert!(document["paths"]["/manage/rtmp/republish/{id}"]["delete"].is_object());
        assert_eq!(
            document["components"]["securitySchemes"]["hash"]["in"],
            "query"
        );
    }
}
