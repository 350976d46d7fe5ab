//! The one-shot commands: `strom check-config` and `strom sign`.

use crate::auth::sign_url;
use crate::config::instance::{self, ListenAddress};
use crate::config::{drm, rules as rules_file};
use crate::reload;
use std::path::{Path, PathBuf};

/// Validates strom.conf and every file it names; prints the effective settings.
pub fn check_config(path: &Path) -> anyhow::Result<()> {
    let instance = instance::load(path)?;
    let rules = rules_file::load(&instance.rules_path)?;
    if let Some(drm_path) = &instance.drm_settings_path {
        drm::load(drm_path)?;
    }
    reload::load_delivery_tls(&instance, &rules)?;
    reload::load_management_tls(&instance)?;
    print!("{}", instance.effective_settings());
    println!(
        "# {}: {} RTMP interface(s), {} app(s), {} re-publishing rule(s), {} MPEG-TS input(s), {} MPEG-TS output(s), {} pulled source(s)",
        instance.rules_path.display(),
        rules.rtmp.interfaces.len(),
        rules.rtmp.apps.len(),
        rules.republish.len(),
        rules.cameras.len(),
        rules.ts_outputs.len(),
        rules.pull_sources.len()
    );
    println!("configuration OK");
    Ok(())
}

/// Prints a signed management URL; without a token, the plain URL (a server without
/// `management_token` serves every request, and the README's `curl "$(strom sign ...)"`
/// examples run on the shipped config, which sets none).
pub fn sign(
    token: Option<String>,
    config: Option<PathBuf>,
    base: Option<String>,
    salt: Option<u32>,
    path: &str,
) -> anyhow::Result<()> {
    let instance = config.as_deref().map(instance::load).transpose()?;
    let token = token.or_else(|| instance.as_ref().and_then(|i| i.management_token.clone()));
    let base = base.unwrap_or_else(|| match &instance {
        Some(instance) => {
            let host = match instance.management_listen_interfaces.as_deref() {
                Some([ListenAddress::Ip(ip), ..]) if !ip.is_unspecified() => ip.to_string(),
                _ => "127.0.0.1".to_owned(),
            };
            let scheme = match instance.management.ssl_certificate {
                Some(_) => "https",
                None => "http",
            };
            format!("{scheme}://{host}:{}", instance.management_port)
        }
        None => "http://127.0.0.1:8082".to_owned(),
    });
    if token.is_none() {
        eprintln!(
            "strom sign: no management_token (neither --token nor one in --config): printing the \
             URL unsigned, which a server without management_token accepts"
        );
    }
    let salt = salt.unwrap_or_else(|| rand::random_range(0..=1_000_000));
    println!("{}", management_url(&base, path, token.as_deref(), salt));
    Ok(())
}

/// The URL for `path` on `base`: signed with `token`, or plain without one.
fn management_url(base: &str, path: &str, token: Option<&str>, salt: u32) -> String {
    match token {
        Some(token) => sign_url(base, path, token, salt),
        None if path.starts_with('/') => format!("{}{path}", base.trim_end_matches('/')),
        None => format!("{}/{path}", base.trim_end_matches('/')),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_token_the_url_is_plain() {
        assert_eq!(
            management_url("http://127.0.0.1:8082/", "manage/server_status", None, 7),
            "http://127.0.0.1:8082/manage/server_status"
        );
        assert_eq!(
            management_url("http://h:1", "/manage/streams?x=1", None, 7),
            "http://h:1/manage/streams?x=1"
        );
    }

    #[test]
    fn with_a_token_the_url_is_signed() {
        let url = management_url("http://h:1", "/manage/server_status", Some("secret"), 12345);
        assert_eq!(
            url,
            sign_url("http://h:1", "/manage/server_status", "secret", 12345)
        );
        assert!(url.contains("salt=12345&hash="), "{url}");
    }
}
