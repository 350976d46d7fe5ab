//! Applying changed configuration to running workers: rules (SIGHUP, `reload_config`,
//! `sync_panel_settings`), DRM settings and TLS certificates.
//!
//! Everything is read and validated before anything is applied: a broken file leaves the
//! server running on what it had, and the error says why. Only the workers a change
//! concerns hear about it; listeners that did not change keep their sockets.

use crate::config::error::ConfigError;
use crate::config::instance::InstanceConfig;
use crate::config::{drm, rules as rules_file};
use crate::listeners::{self, BindError};
use crate::state::SupervisorState;
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use strom_ipc::WorkerKind;
use strom_ipc::messages::{TlsMaterial, WorkerReply, WorkerRequest};
use strom_ipc::rules::Rules;
use strom_ipc::sync::locked;
use thiserror::Error;

/// Largest rules document accepted from the control panel.
const MAX_PANEL_BYTES: usize = 4 * 1024 * 1024;
const PANEL_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Error)]
pub enum ReloadError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Bind(#[from] BindError),
    #[error(
        "strom.conf sets no ssl_certificate and ssl_certificate_key (nor management_ssl_certificate and management_ssl_certificate_key)"
    )]
    TlsNotConfigured,
    #[error("TLS certificate rejected, keeping the old one: {0}")]
    Tls(String),
    #[error("strom.conf sets no panel_url to sync from")]
    PanelNotConfigured,
    /// Built by [`panel_error`], which takes the password out of a quoted `panel_url`.
    #[error("fetching panel settings failed: {0}")]
    Panel(String),
    #[error("internal error: {0}")]
    Internal(String),
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ReloadError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ReloadError::Internal(e.to_string()))
}

/// Said when `drm=true` is asked of a server without a DRM file: deployed clients treat
/// an error answer as a failed reload, yet there is simply nothing to re-read.
pub const NO_DRM_NOTE: &str = "strom.conf sets no drm_settings_path: no DRM settings to reload";
/// Said when certificates are reloaded on a server that uses none (same reason).
pub const NO_TLS_NOTE: &str = "strom.conf sets no ssl_certificate and ssl_certificate_key (nor management_ssl_certificate and management_ssl_certificate_key): no certificates to reload";

/// Re-reads `rules.conf` (and with `drm` the DRM settings) and applies it. Answers a note
/// when part of the request had nothing to act on (`drm` without a DRM file).
pub async fn reload_rules(
    state: &SupervisorState,
    drm: bool,
) -> Result<Option<&'static str>, ReloadError> {
    let _one_at_a_time = state.reload_lock.lock().await;
    let path = state.instance.rules_path.clone();
    let rules = blocking(move || rules_file::load(&path)).await??;
    let mut note = None;
    let drm_settings = match (drm, state.instance.drm_settings_path.clone()) {
        (true, Some(path)) => Some(blocking(move || drm::load(&path)).await??),
        (true, None) => {
            note = Some(NO_DRM_NOTE);
            None
        }
        (false, _) => None,
    };
    apply_rules(state, rules).await?;
    if let Some(settings) = drm_settings {
        state.set_drm(settings.clone());
        tell(state, WorkerKind::Packager, WorkerRequest::SetDrm(settings)).await;
    }
    tracing::info!(path = %state.instance.rules_path.display(), drm, "configuration reloaded");
    Ok(note)
}

/// Fetches rules from the control panel, stores them as `rules.conf` and applies them.
pub async fn sync_panel(state: &SupervisorState) -> Result<(), ReloadError> {
    let url = state
        .instance
        .panel_url
        .clone()
        .ok_or(ReloadError::PanelNotConfigured)?;
    let _one_at_a_time = state.reload_lock.lock().await;
    let text = fetch_panel(&url).await?;
    // Errors name the document by its URL, without the password it may carry.
    let shown = crate::config::redact::redact_passwords(&url);
    let rules = rules_file::parse(&text, Path::new(&shown))?;
    let path = state.instance.rules_path.clone();
    let temporary = path.with_extension("conf.tmp");
    let writing_failed = |e: std::io::Error| {
        ReloadError::Internal(format!(
            "writing {}: {e}",
            state.instance.rules_path.display()
        ))
    };
    // Written before anything changes (a full disk refuses the document), but put in
    // place only once applied: a document that could not be applied must not become
    // what the next SIGHUP or restart reads.
    let staged = temporary.clone();
    blocking(move || std::fs::write(&staged, text.as_bytes()))
        .await?
        .map_err(writing_failed)?;
    if let Err(e) = apply_rules(state, rules).await {
        let _ = std::fs::remove_file(&temporary);
        return Err(e);
    }
    blocking(move || std::fs::rename(&temporary, &path))
        .await?
        .map_err(writing_failed)?;
    tracing::info!(url = %shown, "rules synced from the panel");
    Ok(())
}

async fn fetch_panel(url: &str) -> Result<String, ReloadError> {
    let client = reqwest::Client::builder()
        .timeout(PANEL_TIMEOUT)
        .build()
        .map_err(|e| panel_error(e.to_string()))?;
    let mut response = client
        .get(url)
        .send()
        .await
        .map_err(|e| panel_error(e.to_string()))?;
    if !response.status().is_success() {
        return Err(panel_error(format!("{url} answered {}", response.status())));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| panel_error(e.to_string()))?
    {
        if body.len() + chunk.len() > MAX_PANEL_BYTES {
            return Err(panel_error(format!(
                "document larger than {MAX_PANEL_BYTES} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    String::from_utf8(body).map_err(|_| panel_error("document is not UTF-8"))
}

/// A panel failure; reqwest's messages quote the URL, which may carry a login.
fn panel_error(message: impl AsRef<str>) -> ReloadError {
    ReloadError::Panel(crate::config::redact::redact_passwords(message.as_ref()))
}

/// Whether a worker of `kind` needs to hear about the change from `old` to `new`.
/// Ad insertion concerns every producer (which takes cues) and the packager (its tags);
/// playback protection every worker that delivers.
fn concerns(kind: WorkerKind, old: &Rules, new: &Rules) -> bool {
    let ads = old.ad_insertion != new.ad_insertion || old.protection != new.protection;
    match kind {
        WorkerKind::Rtmp => {
            old.rtmp != new.rtmp
                || old.republish != new.republish
                || old.pull_sources != new.pull_sources
                || old.edges != new.edges
                || ads
        }
        WorkerKind::Ingest => {
            old.cameras != new.cameras
                || old.ts_outputs != new.ts_outputs
                || ads
                // Every reload re-reads the server playlist file.
                || old.server_playlists.is_some()
                || new.server_playlists.is_some()
        }
        WorkerKind::Packager => {
            old.delivery != new.delivery
                || old.edges != new.edges
                || old.icecast_sources != new.icecast_sources
                || old.icecast_pushes != new.icecast_pushes
                // The WHEP/WHIP proxy answers 404 (off) and 413 (over `max_sdp_bytes`)
                // itself, from these settings.
                || old.webrtc != new.webrtc
                || ads
        }
        WorkerKind::Dvr => old != new,
        // Publishers' credentials and publish control live in `RtmpSettings`.
        WorkerKind::Rtsp => {
            old.rtsp != new.rtsp || old.rtmp != new.rtmp || old.pull_sources != new.pull_sources
        }
        // Its ladders; the gate's copy of the rules is only for stream-scoped requests.
        WorkerKind::Transcoder => old.transcoding != new.transcoding,
        // Publishers' credentials, playback protection and the edges that start pulls.
        WorkerKind::WebRtc => {
            old.webrtc != new.webrtc
                || old.access != new.access
                || old.protection != new.protection
                || old.pull_sources != new.pull_sources
                || old.edges != new.edges
        }
    }
}

/// Makes `new` the rules in force: listeners first (the only step that can fail), then
/// the workers the change concerns.
pub async fn apply_rules(state: &SupervisorState, new: Rules) -> Result<(), ReloadError> {
    let old = state.rules();
    rtsps_certificate(state, &new).await?;
    let wanted = listeners::plan(&state.instance, &new);
    let relisten = locked(&state.listeners).reconcile(&wanted)?;
    state.set_rules(Arc::new(new.clone()));
    for worker in state.workers.all() {
        let kind = worker.kind;
        if relisten.contains(&kind) {
            let handed = locked(&state.listeners).for_worker(kind);
            match handed {
                Ok((specs, fds)) => {
                    let borrowed: Vec<_> = fds.iter().map(|fd| fd.as_fd()).collect();
                    let answer = worker
                        .request_with(
                            WorkerRequest::SetListeners(specs),
                            &borrowed,
                            Duration::from_secs(3),
                        )
                        .await;
                    report(kind, "listeners", answer);
                }
                Err(e) => {
                    tracing::error!(worker = %kind, error = %e, "could not hand over listeners")
                }
            }
        }
        if concerns(kind, &old, &new) {
            tell(
                state,
                kind,
                WorkerRequest::ApplyRules(Box::new(new.clone())),
            )
            .await;
        }
    }
    // A worker that has just become a subscriber (the ingest worker with its first
    // `TsOutputs` entry, the packager with its first packaged output) gets the live
    // streams now rather than at the next publish.
    let before = crate::state::bus_subscribers(&old);
    if crate::state::bus_subscribers(&new)
        .iter()
        .any(|kind| !before.contains(kind))
    {
        state.registry_changed();
    }
    Ok(())
}

/// The first rtsps listener of a server without HTTPS needs the delivery certificate
/// loaded (and handed to the rtsp worker before its listener): rules that ask for rtsps
/// without a certificate in `strom.conf` are refused.
async fn rtsps_certificate(state: &SupervisorState, new: &Rules) -> Result<(), ReloadError> {
    if new.rtsp.tls_interfaces.is_empty() || state.has_tls() {
        return Ok(());
    }
    let instance = Arc::clone(&state.instance);
    let rules = new.clone();
    let Some(material) = blocking(move || load_delivery_tls(&instance, &rules)).await?? else {
        return Ok(());
    };
    state.set_tls(material.clone());
    tell(state, WorkerKind::Rtsp, WorkerRequest::SetTls(material)).await;
    Ok(())
}

async fn tell(state: &SupervisorState, kind: WorkerKind, request: WorkerRequest) {
    let answer = state.workers.get(kind).request(request).await;
    report(kind, "update", answer);
}

fn report(kind: WorkerKind, what: &str, answer: Result<WorkerReply, crate::process::RequestError>) {
    match answer {
        Ok(WorkerReply::Done) => tracing::debug!(worker = %kind, what, "worker updated"),
        Ok(other) => tracing::error!(worker = %kind, what, ?other, "worker refused the update"),
        // A worker that is restarting gets the current state with its hello.
        Err(e) => {
            tracing::warn!(worker = %kind, what, error = %e, "worker will be updated when it starts")
        }
    }
}

/// Whether the delivery certificate is needed: HTTPS (`ssl_port`) or rtsps listeners
/// (`RtspSettings.tls_interfaces`) serve it.
pub fn wants_delivery_tls(instance: &InstanceConfig, rules: &Rules) -> bool {
    instance.ssl_port.is_some() || !rules.rtsp.tls_interfaces.is_empty()
}

/// The delivery certificate when HTTPS or rtsps needs it. strom.conf cannot require
/// one without `ssl_port`, so rtsps without a certificate is an error of the rules.
pub fn load_delivery_tls(
    instance: &InstanceConfig,
    rules: &Rules,
) -> Result<Option<TlsMaterial>, ReloadError> {
    if !wants_delivery_tls(instance, rules) {
        return Ok(None);
    }
    match load_tls(instance) {
        Err(ReloadError::TlsNotConfigured) => Err(ReloadError::Config(ConfigError::Invalid {
            path: instance.rules_path.clone(),
            field: "RtspSettings.tls_interfaces".to_owned(),
            message: "rtsps needs ssl_certificate and ssl_certificate_key in strom.conf".to_owned(),
        })),
        loaded => loaded.map(Some),
    }
}

/// Reads and validates the configured certificate and key.
pub fn load_tls(instance: &InstanceConfig) -> Result<TlsMaterial, ReloadError> {
    let (Some(certificate), Some(key)) = (&instance.ssl_certificate, &instance.ssl_certificate_key)
    else {
        return Err(ReloadError::TlsNotConfigured);
    };
    read_certificate(certificate, key).map(|(material, _)| material)
}

/// Reads and validates the management API's certificate and key; `None` when the API
/// speaks plain HTTP.
pub fn load_management_tls(
    instance: &InstanceConfig,
) -> Result<Option<Arc<rustls::sign::CertifiedKey>>, ReloadError> {
    let management = &instance.management;
    let (Some(certificate), Some(key)) =
        (&management.ssl_certificate, &management.ssl_certificate_key)
    else {
        return Ok(None);
    };
    read_certificate(certificate, key).map(|(_, certified)| Some(certified))
}

fn read_certificate(
    certificate: &Path,
    key: &Path,
) -> Result<(TlsMaterial, Arc<rustls::sign::CertifiedKey>), ReloadError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|e| ReloadError::Tls(format!("{}: {e}", path.display())))
    };
    let material = TlsMaterial {
        certificate_chain_pem: read(certificate)?,
        private_key_pem: read(key)?,
    };
    let certified = strom_tls::certified_key(&material).map_err(ReloadError::Tls)?;
    certified.keys_match().map_err(|e| {
        ReloadError::Tls(format!("certificate and key do not belong together: {e}"))
    })?;
    Ok((material, certified))
}

/// Re-reads the certificate files: the management API's (used for its new handshakes at
/// once) and the delivery one (handed to the packager). Both are read and checked before
/// either is used. Answers a note when the server uses no certificate at all.
pub async fn reload_certificates(
    state: &SupervisorState,
) -> Result<Option<&'static str>, ReloadError> {
    let instance = Arc::clone(&state.instance);
    let rules = state.rules();
    let (management, delivery) = blocking(move || {
        let management = load_management_tls(&instance)?;
        let delivery = load_delivery_tls(&instance, &rules)?;
        Ok::<_, ReloadError>((management, delivery))
    })
    .await??;
    if management.is_none() && delivery.is_none() {
        return Ok(Some(NO_TLS_NOTE));
    }
    if let Some(certified) = management {
        state.management_certificate.replace(certified);
        tracing::info!("management API certificate reloaded");
    }
    let Some(material) = delivery else {
        return Ok(None);
    };
    let answer = state
        .workers
        .get(WorkerKind::Packager)
        .request(WorkerRequest::SetTls(material.clone()))
        .await;
    if let Ok(WorkerReply::Failed(why) | WorkerReply::Error { message: why, .. }) = answer {
        return Err(ReloadError::Tls(why));
    }
    report(WorkerKind::Packager, "certificate", answer);
    // Kept only once accepted, so a restarted packager never gets a refused certificate.
    state.set_tls(material.clone());
    // The packager validated the same material: the rtsp worker takes it too.
    tell(state, WorkerKind::Rtsp, WorkerRequest::SetTls(material)).await;
    tracing::info!("TLS certificates reloaded");
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strom_ipc::rules::{CameraSettings, TsOutputSettings};

    #[test]
    fn panel_failures_quote_the_url_without_its_password() {
        let error =
            panel_error("error sending request for url (https://sync:pa55@panel.example/rules)");
        let text = error.to_string();
        assert!(!text.contains("pa55"), "{text}");
        assert!(
            text.contains("https://sync:***@panel.example/rules"),
            "{text}"
        );
    }

    #[test]
    fn only_concerned_workers_hear_about_a_change() {
        let old = Rules::default();
        let mut new = old.clone();
        new.cameras.push(CameraSettings {
            id: "cam".into(),
            ip: "127.0.0.1".into(),
            port: 1234,
            protocol: "udp".into(),
            receive_mode: String::new(),
            parameters: Vec::new(),
            app: "live".into(),
            stream: "cam".into(),
        });
        assert!(concerns(WorkerKind::Ingest, &old, &new));
        assert!(!concerns(WorkerKind::Rtmp, &old, &new));
        assert!(!concerns(WorkerKind::Packager, &old, &new));
        assert!(!concerns(WorkerKind::Ingest, &old, &old));

        let mut outputs = old.clone();
        outputs.ts_outputs.push(TsOutputSettings {
            id: "ts-1".into(),
            protocol: "srt".into(),
            mode: "listen".into(),
            ip: "0.0.0.0".into(),
            port: 9100,
            parameters: Vec::new(),
            app: String::new(),
            stream: String::new(),
        });
        assert!(concerns(WorkerKind::Ingest, &old, &outputs));
        assert!(!concerns(WorkerKind::Rtmp, &old, &outputs));
        assert!(!concerns(WorkerKind::Packager, &old, &outputs));
    }
}
