//! The Adobe RTMP authentication challenge (`authmod=adobe`) that ffmpeg and OBS perform
//! by themselves when the publish URL carries `user:pass@`.
//!
//! 1. Plain connect → reject `code=403 need auth; authmod=adobe`.
//! 2. Connect with `?authmod=adobe&user=U` → reject `?reason=needauth&user=U&salt=S&challenge=C&opaque=O`.
//! 3. Connect with `...&challenge=CC&response=R&opaque=O` → accept when
//!    `R = base64(md5(base64(md5(U + S + password)) + O + CC))`.
//!
//! The salt is derived from the user and a per-process secret (nothing to store); each
//! opaque is a single-use nonce kept for a short time in a bounded table.
//!
//! The fuzz target `signatures` compiles this file by path (with `query.rs`).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use md5::{Digest, Md5};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use strom_worker_runtime::sync::locked;
use subtle::ConstantTimeEq;

/// How long a client has between step 2 and step 3.
const NONCE_LIFETIME: Duration = Duration::from_secs(60);
/// Outstanding challenges at most; beyond that the oldest are forgotten.
const MAX_NONCES: usize = 10_000;

/// What the server answers to a connect that must authenticate.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Accept,
    /// Reject with this `description` (the client reads its parameters and retries).
    Reject(String),
}

pub struct AdobeAuth {
    secret: [u8; 16],
    nonces: Mutex<HashMap<String, Instant>>,
}

impl Default for AdobeAuth {
    fn default() -> Self {
        Self {
            secret: rand::random(),
            nonces: Mutex::new(HashMap::new()),
        }
    }
}

fn md5_base64(parts: &[&[u8]]) -> String {
    let mut md5 = Md5::new();
    for part in parts {
        md5.update(part);
    }
    STANDARD.encode(md5.finalize())
}

/// `response` as the client computes it.
pub fn expected_response(
    user: &str,
    salt: &str,
    password: &str,
    opaque: &str,
    client_challenge: &str,
) -> String {
    let first = md5_base64(&[user.as_bytes(), salt.as_bytes(), password.as_bytes()]);
    md5_base64(&[
        first.as_bytes(),
        opaque.as_bytes(),
        client_challenge.as_bytes(),
    ])
}

impl AdobeAuth {
    fn salt_for(&self, user: &str) -> String {
        let digest = md5_base64(&[&self.secret, user.as_bytes()]);
        digest
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .take(8)
            .collect()
    }

    fn new_nonce(&self) -> String {
        let nonce = format!("{:016x}", rand::random::<u64>());
        let mut nonces = locked(&self.nonces);
        let now = Instant::now();
        nonces.retain(|_, issued| now.duration_since(*issued) < NONCE_LIFETIME);
        if nonces.len() >= MAX_NONCES
            && let Some(oldest) = nonces
                .iter()
                .min_by_key(|(_, t)| **t)
                .map(|(k, _)| k.clone())
        {
            nonces.remove(&oldest);
        }
        nonces.insert(nonce.clone(), now);
        nonce
    }

    fn take_nonce(&self, nonce: &str) -> bool {
        locked(&self.nonces)
            .remove(nonce)
            .is_some_and(|issued| issued.elapsed() < NONCE_LIFETIME)
    }

    /// Decides a connect from its app query parameters against the configured login.
    pub fn check(&self, params: &[(String, String)], login: &str, password: &str) -> Verdict {
        use super::param;
        if param(params, "authmod") != Some("adobe") {
            return Verdict::Reject(
                "[ AccessManager.Reject ] : [ code=403 need auth; authmod=adobe ] : ".to_owned(),
            );
        }
        let Some(user) = param(params, "user") else {
            return Verdict::Reject(
                "[ AccessManager.Reject ] : [ authmod=adobe ] : ?reason=nosuchuser".to_owned(),
            );
        };
        let salt = self.salt_for(user);
        match (
            param(params, "response"),
            param(params, "challenge"),
            param(params, "opaque"),
        ) {
            (Some(response), Some(client_challenge), Some(opaque)) => {
                let expected = expected_response(login, &salt, password, opaque, client_challenge);
                let user_ok = bool::from(user.as_bytes().ct_eq(login.as_bytes()));
                let response_ok = bool::from(expected.as_bytes().ct_eq(response.as_bytes()));
                // Consume the nonce whatever the outcome: each challenge answers once.
                let nonce_ok = self.take_nonce(opaque);
                if user_ok && response_ok && nonce_ok {
                    Verdict::Accept
                } else {
                    Verdict::Reject(
                        "[ AccessManager.Reject ] : [ authmod=adobe ] : ?reason=authfailed"
                            .to_owned(),
                    )
                }
            }
            _ => {
                let nonce = self.new_nonce();
                Verdict::Reject(format!(
                    "[ AccessManager.Reject ] : [ authmod=adobe ] : ?reason=needauth&user={user}&salt={salt}&challenge={nonce}&opaque={nonce}"
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::split_query;

    fn params_of(description: &str) -> Vec<(String, String)> {
        let query = description
            .rsplit_once('?')
            .map(|(_, q)| q)
            .unwrap_or_default();
        split_query(&format!("x?{query}")).1
    }

    #[test]
    fn the_three_step_challenge_accepts_the_right_password_once() {
        let auth = AdobeAuth::default();
        let Verdict::Reject(first) = auth.check(&[], "bob", "pw") else {
            panic!()
        };
        assert!(first.contains("code=403 need auth; authmod=adobe"));
        let step2 = split_query("live?authmod=adobe&user=bob").1;
        let Verdict::Reject(challenge) = auth.check(&step2, "bob", "pw") else {
            panic!()
        };
        let p = params_of(&challenge);
        let salt = crate::auth::param(&p, "salt").unwrap().to_owned();
        let opaque = crate::auth::param(&p, "opaque").unwrap().to_owned();
        let response = expected_response("bob", &salt, "pw", &opaque, "c0ffee00");
        let step3 = split_query(&format!(
            "live?authmod=adobe&user=bob&challenge=c0ffee00&response={response}&opaque={opaque}"
        ))
        .1;
        assert_eq!(auth.check(&step3, "bob", "pw"), Verdict::Accept);
        // Replaying the same answer fails: the opaque was used.
        assert_ne!(auth.check(&step3, "bob", "pw"), Verdict::Accept);
    }

    #[test]
    fn a_wrong_password_is_rejected() {
        let auth = AdobeAuth::default();
        let Verdict::Reject(challenge) =
            auth.check(&split_query("a?authmod=adobe&user=bob").1, "bob", "pw")
        else {
            panic!()
        };
        let p = params_of(&challenge);
        let salt = crate::auth::param(&p, "salt").unwrap();
        let opaque = crate::auth::param(&p, "opaque").unwrap();
        let response = expected_response("bob", salt, "wrong", opaque, "1");
        let step3 = split_query(&format!(
            "a?authmod=adobe&user=bob&challenge=1&response={response}&opaque={opaque}"
        ))
        .1;
        let Verdict::Reject(why) = auth.check(&step3, "bob", "pw") else {
            panic!()
        };
        assert!(why.contains("authfailed"));
    }
}
