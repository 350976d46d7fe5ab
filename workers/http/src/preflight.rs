//! The CORS preflight answer of the delivery port (`OPTIONS` with
//! `Access-Control-Request-Method`), shared by the media routes and the WebRTC
//! signaling proxy; each names the methods and request headers it takes.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};

/// Browsers may cache a preflight this long (seconds).
const MAX_AGE: &str = "86400";

/// `204` allowing `methods` with `headers` from any page.
pub(crate) fn preflight(methods: &'static str, headers: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::NO_CONTENT;
    let out = response.headers_mut();
    out.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(methods),
    );
    out.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(headers),
    );
    out.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static(MAX_AGE),
    );
    response
}
