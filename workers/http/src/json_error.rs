//! The JSON error answer of the delivery port (`{"status":"...","error":"..."}`, the
//! shape every strom error has), shared by the HTTP routes and the WebRTC signaling
//! proxy.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};

/// An error answer with `status` and a fixed message.
pub(crate) fn error(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let body = Bytes::from(format!(
        "{{\"status\":\"{}\",\"error\":\"{text}\"}}",
        status
            .canonical_reason()
            .unwrap_or("Error")
            .replace(' ', "")
    ));
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
