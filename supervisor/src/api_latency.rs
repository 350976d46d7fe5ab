//! Latency of management API requests: a histogram per method, route and status code,
//! recorded by [`record_api_latency`], a middleware on the management router, and
//! rendered by every scrape of `/metrics`.
//!
//! The route label is the router's path template (`/manage/dvr_status/{app}/{stream}`),
//! never the requested path, so clients cannot grow the label set; requests that match
//! no route share `route="unmatched"`. The histogram lives for the whole process (a
//! static), so the API can record without knowing whether metrics are served.

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use std::sync::LazyLock;
use std::time::Instant;

/// `method`, `route`, `code`.
pub type Labels = Vec<(&'static str, String)>;

/// The histogram family, keyed by [`Labels`].
pub type Latencies = Family<Labels, Histogram, fn() -> Histogram>;

/// Bucket upper bounds in seconds: answers from cached state take well under a
/// millisecond, fan-outs to workers a few milliseconds, and a worker that does not answer
/// costs `management_worker_timeout` (1-60 s).
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

fn histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

static API_LATENCIES: LazyLock<Latencies> =
    LazyLock::new(|| Family::new_with_constructor(histogram as fn() -> Histogram));

/// The process-wide management API latencies (a cheap handle: families share their
/// storage when cloned).
pub fn api_latencies() -> Latencies {
    API_LATENCIES.clone()
}

/// Standard methods by name; anything else a client invents is `other`, so it cannot
/// grow the label set either.
fn method_label(method: &axum::http::Method) -> &'static str {
    match method.as_str() {
        "GET" => "GET",
        "POST" => "POST",
        "DELETE" => "DELETE",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "HEAD" => "HEAD",
        "OPTIONS" => "OPTIONS",
        _ => "other",
    }
}

/// Middleware for the management router: times the handler (up to the response head)
/// and records it under the matched route.
pub async fn record_api_latency(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(request.method()).to_owned();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    let response = next.run(request).await;
    let labels = vec![
        ("method", method),
        ("route", route),
        ("code", response.status().as_u16().to_string()),
    ];
    API_LATENCIES
        .get_or_create(&labels)
        .observe(started.elapsed().as_secs_f64());
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::routing::get;
    use tower::ServiceExt;

    /// Observations recorded under `route` with status 200, read from the exposition.
    fn count(route: &str) -> u64 {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register("latency", "test", api_latencies());
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let series = format!("latency_count{{method=\"GET\",route=\"{route}\",code=\"200\"}} ");
        text.lines()
            .find_map(|line| line.strip_prefix(&series))
            .map_or(0, |value| value.parse().unwrap())
    }

    /// Requests are recorded under the route template, not the path that was asked for.
    #[tokio::test]
    async fn records_the_route_template_and_status() {
        let router = Router::new()
            .route("/test_latency/{name}", get(|| async { "ok" }))
            .layer(axum::middleware::from_fn(record_api_latency));
        let before = count("/test_latency/{name}");
        for path in ["/test_latency/a", "/test_latency/b"] {
            let request = Request::builder().uri(path).body(Body::empty()).unwrap();
            let response = router.clone().oneshot(request).await.unwrap();
            assert_eq!(response.status(), 200);
        }
        assert_eq!(count("/test_latency/{name}"), before + 2);
        assert_eq!(count("/test_latency/a"), 0);
        assert_eq!(method_label(&axum::http::Method::POST), "POST");
        let invented = axum::http::Method::from_bytes(b"BREW").unwrap();
        assert_eq!(method_label(&invented), "other");
    }
}
