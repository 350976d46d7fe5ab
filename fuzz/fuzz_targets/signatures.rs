//! Publish and playback credentials as clients send them in URLs and query strings:
//! `publishsign` ([`strom_worker_runtime::publish_sign::verify`]), `wmsAuthSign`
//! ([`play_signature::query_value`], [`play_signature::percent_decode`],
//! [`play_signature::verify`] with its date parsing), and the rtmp worker's parsing of
//! `app?query` / `stream?query` (`auth::split_query`) with the Adobe challenge
//! (`auth::adobe::AdobeAuth::check`) on the parameters.
//!
//! The input is text, lines: the query (or `name?query`), then app, stream, password /
//! key, client address, and the clock (Unix seconds) and allowed skew; missing lines take
//! defaults. The rtmp worker's `auth` files are compiled by path (see
//! `rtmp_server_input.rs` for why). Seeds: `fuzz/corpus/signatures` (signatures made by
//! the signing functions themselves: `cargo run --example make_seeds`).
#![no_main]

#[path = "../../workers/rtmp/src/auth"]
mod auth {
    pub mod adobe;
    mod query;
    pub use query::{param, split_query};
}

use auth::adobe::{AdobeAuth, Verdict};
use libfuzzer_sys::fuzz_target;
use std::net::{IpAddr, Ipv4Addr};
use strom_worker_runtime::{play_signature, publish_sign};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let mut next = |default: &'static str| lines.next().unwrap_or(default).to_owned();
    let query = next("");
    let app = next("live");
    let stream = next("cam");
    let password = next("secret");
    let address = next("10.0.0.1");
    let now: i64 = next("1795000000").trim().parse().unwrap_or(1_795_000_000);
    let skew: u32 = next("30").trim().parse().unwrap_or(30);
    let client_ip: IpAddr = address
        .trim()
        .parse()
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));

    // The rtmp worker: `app?query` and `stream?query` of connect and publish/play.
    let (name, params) = auth::split_query(&query);
    assert!(query.starts_with(name));
    let adobe = AdobeAuth::default();
    for login in ["", "bob", app.as_str()] {
        if let Verdict::Reject(description) = adobe.check(&params, login, &password) {
            assert!(!description.is_empty());
        }
    }
    let sign = auth::param(&params, "publishsign");
    let _ = publish_sign::verify(sign, &app, &stream, &password, &address);
    let _ = publish_sign::verify(Some(&query), &app, &stream, &password, &address);

    // Playback: the RTMP form (a parameter, percent-decoded) and the HTTP form (the
    // query string).
    let keys = [password.clone(), String::from("defaultpassword")];
    let path = format!("{app}/{stream}");
    let check = play_signature::SignatureCheck {
        keys: &keys,
        client_ip,
        stream: &path,
        now_unix: now,
        skew_secs: i64::from(skew),
    };
    let rtmp = auth::param(&params, "wmsAuthSign").map(play_signature::percent_decode);
    let _ = play_signature::verify(rtmp.as_deref(), &check);
    let http = play_signature::query_value(&query, "wmsAuthSign");
    let _ = play_signature::verify(http.as_deref(), &check);
    let _ = play_signature::verify(Some(&query), &check);
    let decoded = play_signature::percent_decode(&query);
    assert!(decoded.len() <= query.len() * 3);
});
