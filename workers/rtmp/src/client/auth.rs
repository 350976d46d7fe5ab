//! Answering the authentication challenges of RTMP ingest servers, for pushes: Adobe
//! (`authmod=adobe`: strom and NIMBLE, Akamai, Wowza) and Limelight (`authmod=llnw`), with
//! the responses computed as ffmpeg's `rtmpproto.c` (`do_adobe_auth`, `do_llnw_auth`) and
//! librtmp compute them.
//!
//! [`Login`] is the sans-io part: the auth query of the next `connect` and what a rejection
//! means. Like librtmp, the first `connect` already says `authmod=...&user=U` (a plain
//! `connect` carries no `type: nonprivate` from `rml_rtmp`, so servers that challenge only
//! publishers would accept it and refuse the publish instead); a `code=403 need auth`
//! rejection is handled too, as ffmpeg does. Then:
//!
//! - Adobe: `?reason=needauth&user=U&salt=S&challenge=C&opaque=O` is answered with
//!   `challenge=CC&response=base64(md5(base64(md5(U + S + password)) + (O or C) + CC))`.
//! - Limelight: `?reason=needauth&user=U&nonce=N` is answered with a digest:
//!   `HA1 = md5(U:live:password)`, `HA2 = md5(publish:/<app>)` (`/_definst_` added to an
//!   app without an instance), `response = md5(HA1:N:00000001:CN:auth:HA2)`, hex.
//!
//! The fuzz target `client_replies` compiles this file by path.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use md5::{Digest, Md5};
use strom_ipc::rules::AuthSchema;

/// Digest parameters fixed by the Limelight scheme.
const LLNW_REALM: &str = "live";
const LLNW_METHOD: &str = "publish";
const LLNW_QOP: &str = "auth";
const LLNW_NC: &str = "00000001";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Adobe,
    Llnw,
}

impl Scheme {
    fn authmod(self) -> &'static str {
        match self {
            Scheme::Adobe => "adobe",
            Scheme::Llnw => "llnw",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Sent `authmod=..&user=U`.
    Identified,
    /// Sent the response to a challenge.
    Answered,
}

/// The authentication of one push attempt.
#[derive(Debug)]
pub struct Login {
    scheme: Scheme,
    user: String,
    password: String,
    /// The destination app without its query (part of the Limelight digest).
    app: String,
    step: Step,
}

impl Login {
    /// `None` when `schema` needs no challenge (NONE, PERISCOPE) or no login is set.
    pub fn new(schema: AuthSchema, user: &str, password: &str, app: &str) -> Option<Self> {
        let scheme = match schema {
            AuthSchema::Native | AuthSchema::Akamai => Scheme::Adobe,
            AuthSchema::Limelight => Scheme::Llnw,
            AuthSchema::None | AuthSchema::Periscope => return None,
        };
        if user.is_empty() {
            return None;
        }
        Some(Self {
            scheme,
            user: user.to_owned(),
            password: password.to_owned(),
            app: app.to_owned(),
            step: Step::Identified,
        })
    }

    /// The auth query of the first `connect`: `authmod=<mod>&user=<user>`.
    pub fn first_query(&self) -> String {
        format!("authmod={}&user={}", self.scheme.authmod(), self.user)
    }

    /// What to send next after the server rejected a `connect` with `description`; the
    /// error says why authentication cannot succeed.
    pub fn on_rejection(&mut self, description: &str) -> Result<String, String> {
        if description.contains("?reason=authfailed") {
            return Err("wrong user or password (reason=authfailed)".to_owned());
        }
        if description.contains("?reason=nosuchuser") {
            return Err(format!("unknown user {:?} (reason=nosuchuser)", self.user));
        }
        if self.step == Step::Answered {
            return Err(format!(
                "rejected after answering the challenge: {description}"
            ));
        }
        if let Some((_, query)) = description.split_once("?reason=needauth") {
            let params = parse_params(query);
            self.step = Step::Answered;
            return Ok(self.answer(&params));
        }
        if description.contains("code=403 need auth") {
            return Ok(self.first_query());
        }
        Err(format!(
            "rejected without a known challenge: {description:?}"
        ))
    }

    fn answer(&self, params: &[(&str, &str)]) -> String {
        let get = |key: &str| params.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        // ffmpeg answers as the user the server names.
        let user = get("user").filter(|u| !u.is_empty()).unwrap_or(&self.user);
        let client_nonce = format!("{:08x}", rand::random::<u32>());
        match self.scheme {
            Scheme::Adobe => {
                let opaque = get("opaque");
                let response = adobe_response(
                    user,
                    get("salt").unwrap_or_default(),
                    &self.password,
                    opaque.or(get("challenge")).unwrap_or_default(),
                    &client_nonce,
                );
                let mut query = format!(
                    "authmod=adobe&user={user}&challenge={client_nonce}&response={response}"
                );
                if let Some(opaque) = opaque {
                    query.push_str("&opaque=");
                    query.push_str(opaque);
                }
                query
            }
            Scheme::Llnw => {
                let nonce = get("nonce").unwrap_or_default();
                let response = llnw_response(user, &self.password, &self.app, nonce, &client_nonce);
                format!(
                    "authmod=llnw&user={user}&nonce={nonce}&cnonce={client_nonce}&nc={LLNW_NC}&response={response}"
                )
            }
        }
    }
}

/// `key=value&...` up to the first whitespace.
fn parse_params(query: &str) -> Vec<(&str, &str)> {
    let query = query.split_whitespace().next().unwrap_or_default();
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .collect()
}

fn md5_base64(parts: &[&str]) -> String {
    let mut md5 = Md5::new();
    for part in parts {
        md5.update(part.as_bytes());
    }
    STANDARD.encode(md5.finalize())
}

fn md5_hex(parts: &[&str]) -> String {
    let mut md5 = Md5::new();
    for part in parts {
        md5.update(part.as_bytes());
    }
    md5.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Adobe: `base64(md5(base64(md5(user + salt + password)) + opaque_or_challenge + client_challenge))`.
pub fn adobe_response(
    user: &str,
    salt: &str,
    password: &str,
    opaque_or_challenge: &str,
    client_challenge: &str,
) -> String {
    let first = md5_base64(&[user, salt, password]);
    md5_base64(&[&first, opaque_or_challenge, client_challenge])
}

/// Limelight: the HTTP-digest-like response of ffmpeg's `do_llnw_auth`.
pub fn llnw_response(user: &str, password: &str, app: &str, nonce: &str, cnonce: &str) -> String {
    let ha1 = md5_hex(&[user, ":", LLNW_REALM, ":", password]);
    let instance = if app.contains('/') { "" } else { "/_definst_" };
    let ha2 = md5_hex(&[LLNW_METHOD, ":/", app, instance]);
    md5_hex(&[
        &ha1, ":", nonce, ":", LLNW_NC, ":", cnonce, ":", LLNW_QOP, ":", &ha2,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::adobe::{AdobeAuth, Verdict, expected_response};
    use crate::auth::split_query;

    fn server_params(app_with_query: &str) -> Vec<(String, String)> {
        split_query(app_with_query).1
    }

    #[test]
    fn adobe_response_is_what_the_server_expects() {
        assert_eq!(
            adobe_response("bob", "s4lt", "pw", "0paque", "c0ffee00"),
            expected_response("bob", "s4lt", "pw", "0paque", "c0ffee00")
        );
    }

    #[test]
    fn the_adobe_challenge_against_strom_s_own_server_side() {
        let server = AdobeAuth::default();
        let mut login = Login::new(AuthSchema::Native, "bob", "pw", "live").unwrap();
        let first = format!("live?{}", login.first_query());
        assert_eq!(first, "live?authmod=adobe&user=bob");
        let Verdict::Reject(challenge) = server.check(&server_params(&first), "bob", "pw") else {
            panic!("the server must challenge")
        };
        let answer = format!("live?{}", login.on_rejection(&challenge).unwrap());
        assert!(answer.contains("&opaque="), "{answer}");
        assert_eq!(
            server.check(&server_params(&answer), "bob", "pw"),
            Verdict::Accept
        );
        // A second rejection after answering is final.
        assert!(login.on_rejection(&challenge).is_err());
    }

    #[test]
    fn a_plain_connect_rejection_leads_to_the_challenge() {
        let server = AdobeAuth::default();
        let mut login = Login::new(AuthSchema::Akamai, "bob", "pw", "live").unwrap();
        let Verdict::Reject(need_auth) = server.check(&[], "bob", "pw") else {
            panic!()
        };
        let identify = login.on_rejection(&need_auth).unwrap();
        assert_eq!(identify, "authmod=adobe&user=bob");
        let Verdict::Reject(challenge) =
            server.check(&server_params(&format!("live?{identify}")), "bob", "pw")
        else {
            panic!()
        };
        let answer = login.on_rejection(&challenge).unwrap();
        assert_eq!(
            server.check(&server_params(&format!("live?{answer}")), "bob", "pw"),
            Verdict::Accept
        );
    }

    #[test]
    fn a_wrong_password_fails_with_the_reason() {
        let server = AdobeAuth::default();
        let mut login = Login::new(AuthSchema::Native, "bob", "wrong", "live").unwrap();
        let first = format!("live?{}", login.first_query());
        let Verdict::Reject(challenge) = server.check(&server_params(&first), "bob", "pw") else {
            panic!()
        };
        let answer = format!("live?{}", login.on_rejection(&challenge).unwrap());
        let Verdict::Reject(failed) = server.check(&server_params(&answer), "bob", "pw") else {
            panic!("a wrong password must not be accepted")
        };
        let why = login.on_rejection(&failed).unwrap_err();
        assert!(why.contains("authfailed"), "{why}");
    }

    #[test]
    fn no_challenge_without_credentials_or_for_schemes_without_them() {
        assert!(Login::new(AuthSchema::None, "u", "p", "live").is_none());
        assert!(Login::new(AuthSchema::Periscope, "u", "p", "live").is_none());
        assert!(Login::new(AuthSchema::Native, "", "", "live").is_none());
    }

    /// Computed independently from ffmpeg's `do_llnw_auth`:
    /// HA1 = md5("user:live:pass") = fe153d35273a9f3c3733762e44c58f38,
    /// HA2 = md5("publish:/live/_definst_") = a2d981c976a6851bc5ed3f2beab823c8,
    /// md5(HA1 + ":N0nce:00000001:1a2b3c4d:auth:" + HA2).
    #[test]
    fn llnw_response_matches_ffmpeg() {
        assert_eq!(
            llnw_response("user", "pass", "live", "N0nce", "1a2b3c4d"),
            "a6344d53fe4ac5950d0c28383201618b"
        );
        // An app that names its instance is used as it is.
        assert_eq!(
            llnw_response("user", "pass", "live/inst", "N0nce", "1a2b3c4d"),
            "fafc94e5c9368b74be80b21b0d44d797"
        );
    }

    #[test]
    fn the_llnw_challenge_is_answered_with_the_digest() {
        let mut login = Login::new(AuthSchema::Limelight, "user", "pass", "live").unwrap();
        assert_eq!(login.first_query(), "authmod=llnw&user=user");
        let answer = login
            .on_rejection("[ AccessManager.Reject ] : [ authmod=llnw ] : ?reason=needauth&user=user&nonce=N0nce")
            .unwrap();
        let params = parse_params(&answer);
        let get = |k: &str| {
            params
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| *v)
                .unwrap()
        };
        assert_eq!(
            (get("authmod"), get("nonce"), get("nc")),
            ("llnw", "N0nce", "00000001")
        );
        assert_eq!(
            get("response"),
            llnw_response("user", "pass", "live", "N0nce", get("cnonce"))
        );
    }
}
