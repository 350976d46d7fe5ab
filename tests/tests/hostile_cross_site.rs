//! The management API against browsers used by someone else, end to end with the real
//! binary on the shipped setting (no `management_token`): a page on another origin that
//! posts `no-cors` `text/plain` bodies (a re-publishing rule forwarding a live stream away, a
//! drain, deny ids) is refused with 403 and nothing changes; `Sec-Fetch-Site:
//! cross-site` is refused too; a `Host` that does not name the server (DNS rebinding) is
//! refused with 421, reads included. The listener's own address, `localhost`, configured
//! names and origins, and requests without `Origin` (curl, servers) are served.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Server, curl, curl_raw};
use serde_json::{Value, json};

/// The rule an attacking page would post: a `live` stream forwarded to its server.
fn stealing_rule() -> String {
    json!({
        "src_app": "live",
        "src_stream": "cam",
        "dest_addr": "203.0.113.66",
        "dest_port": "1935",
        "dest_app": "stolen",
        "dest_stream": "x",
    })
    .to_string()
}

/// A POST with `headers`, as a browser's `fetch(..., {mode: "no-cors"})` sends it.
fn post_as(server: &Server, path: &str, body: &str, headers: &[&str]) -> (u16, Value) {
    let url = server.url(path);
    let mut args = vec![
        "-X",
        "POST",
        "-H",
        "Content-Type: text/plain",
        "--data-binary",
        body,
    ];
    for header in headers {
        args.extend(["-H", header]);
    }
    args.push(&url);
    curl(&args)
}

fn rule_count(server: &Server) -> usize {
    let (code, body) = server.get("/manage/rtmp/republish");
    assert_eq!(code, 200, "{body}");
    body["rules"].as_array().unwrap().len()
}

fn health(server: &Server) -> (u16, Value) {
    curl(&[&format!(
        "http://127.0.0.1:{}/health",
        server.ports.management
    )])
}

#[test]
fn cross_site_posts_are_refused_and_change_nothing() {
    let server = Server::start("");
    server.wait_ready();
    let evil = "Origin: http://evil.example";
    let cross = "Sec-Fetch-Site: cross-site";

    let (code, body) = post_as(
        &server,
        "/manage/rtmp/republish",
        &stealing_rule(),
        &[evil, cross],
    );
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["status"], "Forbidden", "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("evil.example"),
        "{body}"
    );
    let (code, _) = post_as(&server, "/manage/drain", "", &[evil]);
    assert_eq!(code, 403);
    let deny = r#"{"PublishControlDenyRequest":["pub-1"]}"#;
    let (code, _) = post_as(&server, "/manage/publish_control/deny", deny, &[evil]);
    assert_eq!(code, 403);
    // `Origin: null` (sandboxed frames, file: pages) is not the API's origin either.
    let (code, _) = post_as(&server, "/manage/drain", "", &["Origin: null"]);
    assert_eq!(code, 403);
    // No Origin, but the browser says the request is cross-site (a form or navigation).
    let (code, body) = post_as(&server, "/manage/drain", "", &[cross]);
    assert_eq!(code, 403, "{body}");
    // Reads are refused too: a page allowed to read through CORS would leak them.
    let url = server.url("/manage/server_status");
    let (code, _) = curl(&["-H", evil, &url]);
    assert_eq!(code, 403);

    // Nothing changed.
    assert_eq!(rule_count(&server), 0);
    assert_eq!(health(&server), (200, json!({"status": "ok"})));

    // One WARN line for the refusals (rate-limited), naming the origin.
    let log = server.log();
    let lines = log
        .lines()
        .filter(|line| line.contains("management request refused: cross-site request"))
        .count();
    // Seven refusals above: rate limiting keeps them to a line or two (a second one when
    // a slow machine spreads them over the 10 s window).
    assert!((1..=2).contains(&lines), "{lines} lines: {log}");

    // The same requests without Origin (curl, a panel's server) work as before.
    let (code, body) = post_as(&server, "/manage/rtmp/republish", &stealing_rule(), &[]);
    assert_eq!(code, 200, "{body}");
    assert_eq!(rule_count(&server), 1);
    // From the API's own origin (the web console's fetch): served.
    let own = format!("Origin: http://127.0.0.1:{}", server.ports.management);
    let (code, body) = post_as(
        &server,
        "/manage/drain",
        "",
        &[&own, "Sec-Fetch-Site: same-origin"],
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(health(&server).0, 503, "the console's drain took effect");
}

#[test]
fn hosts_that_do_not_name_the_server_are_refused() {
    let server = Server::start("");
    server.wait_ready();
    let url = server.url("/manage/server_status");
    let port = server.ports.management;

    for host in ["evil.example", &format!("evil.example:{port}"), "127.0.0.2"] {
        let (code, body) = curl(&["-H", &format!("Host: {host}"), &url]);
        assert_eq!(code, 421, "{host}: {body}");
        assert_eq!(body["status"], "MisdirectedRequest", "{body}");
    }
    let (code, _) = post_as(&server, "/manage/drain", "", &["Host: evil.example"]);
    assert_eq!(code, 421);
    assert_eq!(health(&server).0, 200, "the drain was not started");

    // The listener's address with or without the port, and localhost on loopback.
    for host in [
        format!("127.0.0.1:{port}"),
        "127.0.0.1".to_owned(),
        format!("localhost:{port}"),
    ] {
        let (code, body) = curl(&["-H", &format!("Host: {host}"), &url]);
        assert_eq!(code, 200, "{host}: {body}");
    }
    assert!(
        server
            .log()
            .contains("management request refused: Host \"evil.example\""),
        "{}",
        server.log()
    );
}

#[test]
fn configured_hosts_and_origins_are_served_with_a_token_too() {
    let server = Server::start(
        "management_token = s3cret\n\
         management_allowed_hosts = media.example.com\n\
         management_allowed_origins = https://panel.example.com",
    );
    server.wait_ready();
    let url = server.url("/manage/server_status");

    let (code, body) = curl(&["-H", "Host: media.example.com:8443", &url]);
    assert_eq!(code, 200, "{body}");
    let (code, _) = curl(&["-H", "Host: other.example.com", &url]);
    assert_eq!(code, 421);

    // A panel on the allowed origin reads the answer (CORS) and may post.
    let (code, answer) = curl_raw(&["-H", "Origin: https://panel.example.com", &url]);
    assert_eq!(code, 200, "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("access-control-allow-origin: https://panel.example.com"),
        "{answer}"
    );
    let (code, answer) = curl_raw(&[
        "-X",
        "OPTIONS",
        "-H",
        "Origin: https://panel.example.com",
        "-H",
        "Access-Control-Request-Method: POST",
        &server.url("/manage/drain"),
    ]);
    assert_eq!(code, 204, "{answer}");
    let panel = [
        "Origin: https://panel.example.com",
        "Sec-Fetch-Site: cross-site",
    ];
    let (code, body) = post_as(&server, "/manage/rtmp/republish", &stealing_rule(), &panel);
    assert_eq!(code, 200, "{body}");

    // A valid signature does not make another origin's request acceptable: the page
    // may have taken it from the console's URL.
    let (code, _) = post_as(
        &server,
        "/manage/drain",
        "",
        &["Origin: https://evil.example"],
    );
    assert_eq!(code, 403);
    assert_eq!(health(&server).0, 200);
    assert_eq!(rule_count(&server), 1);
}

/// The attack as it was found, in a real browser: a page on another origin (the shipped
/// setting, no token) posts `no-cors` bodies to the API. Chromium sends them; strom
/// refuses them, nothing changes, and the page cannot read an answer.
#[test]
fn a_page_on_another_origin_in_chromium_changes_nothing() {
    common::browser::require_browser(&[]);
    let server = Server::start("");
    server.wait_ready();
    let page = common::browser::webrtc_page();
    let base = format!("http://127.0.0.1:{}", server.ports.management);
    let result =
        common::browser::run_script("cross_site.mjs", &[&page, &base, &stealing_rule()], 60)
            .unwrap_or_else(|e| panic!("{e}\nlog:\n{}", server.log()));
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["sent"], 3, "the browser let the posts out: {result}");
    assert!(result["read"].is_null(), "no answer was readable: {result}");
    assert_eq!(rule_count(&server), 0, "no republish rule was created");
    assert_eq!(health(&server), (200, json!({"status": "ok"})), "no drain");
    let log = server.log();
    assert!(
        log.contains("management request refused: cross-site request"),
        "{log}"
    );
}
