//! The web console's static files (`/console/...` on the management port), embedded in
//! the binary so that the console works offline and always matches the server it is
//! served by. `/` redirects to `/console/`.
//!
//! The files load without the management token: they hold no data. Every API call the
//! page makes is signed with the token the user types in (see `assets/console/sign.js`),
//! and the API checks it as it checks any other client.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

/// One embedded file: its name under `/console/`, content type and bytes.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
    /// Versioned names (the vendored players) never change content, so browsers may keep
    /// them; the console's own files are revalidated so that an upgraded server is seen.
    immutable: bool,
}

macro_rules! asset {
    ($name:literal, $type:literal, $immutable:literal) => {
        Asset {
            name: $name,
            content_type: $type,
            body: include_bytes!(concat!("../assets/console/", $name)),
            immutable: $immutable,
        }
    };
}

const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8", false),
    asset!("console.css", "text/css; charset=utf-8", false),
    asset!("sign.js", "text/javascript; charset=utf-8", false),
    asset!("api.js", "text/javascript; charset=utf-8", false),
    asset!("views.js", "text/javascript; charset=utf-8", false),
    asset!("player.js", "text/javascript; charset=utf-8", false),
    asset!("console.js", "text/javascript; charset=utf-8", false),
    asset!("hls-1.7.4.min.js", "text/javascript; charset=utf-8", true),
    asset!(
        "dash-5.2.1.all.min.js",
        "text/javascript; charset=utf-8",
        true
    ),
    asset!("LICENSE-hls.js.txt", "text/plain; charset=utf-8", false),
    asset!("LICENSE-dash.js.txt", "text/plain; charset=utf-8", false),
];

/// Only the console's own scripts and styles run; players fetch media from the delivery
/// port (another origin) and hls.js/dash.js feed it through blob: URLs and workers.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self' http: https:; \
     media-src 'self' blob: http: https:; worker-src 'self' blob:; frame-ancestors 'none'";

/// The console's routes; they sit outside the API's token check.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(|| async { Redirect::to("/console/") }))
        .route("/console", get(|| async { Redirect::to("/console/") }))
        .route("/console/", get(|| async { serve("index.html") }))
        .route(
            "/console/{name}",
            get(|Path(name): Path<String>| async move { serve(&name) }),
        )
}

fn serve(name: &str) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.name == name) else {
        return (StatusCode::NOT_FOUND, "no such console file").into_response();
    };
    let cache = if asset.immutable {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let mut response = (
        [
            (header::CONTENT_TYPE, asset.content_type),
            (header::CACHE_CONTROL, cache),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        asset.body,
    )
        .into_response();
    if asset.name == "index.html" {
        response.headers_mut().insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_the_page_loads_is_embedded() {
        let page = std::str::from_utf8(
            ASSETS
                .iter()
                .find(|a| a.name == "index.html")
                .map(|a| a.body)
                .unwrap_or_default(),
        )
        .unwrap_or_default();
        for reference in page.split(['"', '\'']).filter(|s| {
            (s.ends_with(".js") || s.ends_with(".css")) && !s.contains('/') && !s.contains(' ')
        }) {
            assert!(
                ASSETS.iter().any(|a| a.name == reference),
                "index.html loads {reference}, which is not embedded"
            );
        }
        assert!(page.contains("hls-1.7.4.min.js") && page.contains("dash-5.2.1.all.min.js"));
    }

    #[test]
    fn unknown_names_are_404_and_players_are_cacheable() {
        assert_eq!(serve("../Cargo.toml").status(), StatusCode::NOT_FOUND);
        let hls = serve("hls-1.7.4.min.js");
        assert_eq!(hls.status(), StatusCode::OK);
        assert_eq!(
            hls.headers()[header::CACHE_CONTROL],
            "public, max-age=31536000, immutable"
        );
        let page = serve("index.html");
        assert_eq!(page.headers()[header::CACHE_CONTROL], "no-cache");
        assert!(page.headers().contains_key(header::CONTENT_SECURITY_POLICY));
    }
}
