//! The SRTP keying material of a viewer's DTLS handshake, handed to strom's own RTP send
//! path (srtp_send.rs). str0m 0.24 derives its SRTP contexts from the handshake and keeps
//! them to itself; its crypto provider is pluggable, so a viewer's `Rtc` gets a DTLS
//! provider that wraps str0m's own and copies the keying material into the session's
//! [`KeySlot`] as the handshake yields it. Everything else passes through unchanged.
//!
//! The slot reaches the DTLS instance through a thread-local set around `Rtc` creation
//! ([`build_with_keys`]): str0m creates the instance inside `RtcConfig::build`, on the
//! calling thread, and the provider has no other per-session argument.

use std::cell::RefCell;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;
use str0m::crypto::dtls::{
    DtlsCert, DtlsImplError, DtlsInstance, DtlsOutput, DtlsProvider, DtlsVersion, ProtocolVersion,
    SrtpProfile,
};
use str0m::crypto::{CryptoError, CryptoProvider, SrtpProvider};
use str0m::{Rtc, RtcConfig};
use strom_worker_runtime::sync::locked;

/// What the handshake exported: the keying material (client key, server key, client
/// salt, server salt), the profile, and whether this side was the DTLS client.
#[derive(Clone)]
pub struct Keys {
    pub material: Vec<u8>,
    pub profile: SrtpProfile,
    pub active: bool,
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key bytes, not even in a debug log.
        f.debug_struct("Keys")
            .field("profile", &self.profile)
            .field("active", &self.active)
            .finish_non_exhaustive()
    }
}

/// Where one session's keys land once its handshake has them.
#[derive(Default, Debug)]
pub struct KeySlot(Mutex<Option<Keys>>);

impl KeySlot {
    /// The keys, once (a later handshake would put new ones).
    pub fn take(&self) -> Option<Keys> {
        locked(&self.0).take()
    }
}

thread_local! {
    /// The slot of the `Rtc` being built on this thread.
    static BUILDING: RefCell<Option<Arc<KeySlot>>> = const { RefCell::new(None) };
}

/// Builds an `Rtc` whose DTLS handshake copies its SRTP keying material into the
/// returned slot.
pub fn build_with_keys(config: RtcConfig, now: Instant) -> (Rtc, Arc<KeySlot>) {
    let slot = Arc::new(KeySlot::default());
    BUILDING.with(|building| *building.borrow_mut() = Some(Arc::clone(&slot)));
    let rtc = config.set_crypto_provider(Arc::clone(&PROVIDER)).build(now);
    BUILDING.with(|building| building.borrow_mut().take());
    (rtc, slot)
}

/// The SRTP ciphers of str0m's provider of this build (srtp_send.rs seals with them).
pub fn srtp_provider() -> &'static dyn SrtpProvider {
    PROVIDER.srtp_provider
}

/// str0m's provider of this build, with the DTLS part wrapped.
static PROVIDER: LazyLock<Arc<CryptoProvider>> = LazyLock::new(|| {
    let mut provider = str0m::crypto::from_feature_flags();
    let inner = provider.dtls_provider;
    let wrapped: &'static KeyCopyingDtls = Box::leak(Box::new(KeyCopyingDtls { inner }));
    provider.dtls_provider = wrapped;
    Arc::new(provider)
});

/// str0m's DTLS provider, whose instances copy the keying material out.
#[derive(Debug)]
struct KeyCopyingDtls {
    inner: &'static dyn DtlsProvider,
}

impl DtlsProvider for KeyCopyingDtls {
    fn generate_certificate(&self) -> Option<DtlsCert> {
        self.inner.generate_certificate()
    }

    fn new_dtls(
        &self,
        cert: &DtlsCert,
        now: Instant,
        dtls_version: DtlsVersion,
        mtu: Option<usize>,
    ) -> Result<Box<dyn DtlsInstance>, CryptoError> {
        let inner = self.inner.new_dtls(cert, now, dtls_version, mtu)?;
        let slot = BUILDING.with(|building| building.borrow().clone());
        Ok(Box::new(KeyCopyingInstance { inner, slot }))
    }

    fn is_test(&self) -> bool {
        self.inner.is_test()
    }
}

struct KeyCopyingInstance {
    inner: Box<dyn DtlsInstance>,
    slot: Option<Arc<KeySlot>>,
}

impl fmt::Debug for KeyCopyingInstance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyCopyingInstance")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl DtlsInstance for KeyCopyingInstance {
    fn set_active(&mut self, active: bool) {
        self.inner.set_active(active);
    }

    fn handle_packet(&mut self, packet: &[u8]) -> Result<(), DtlsImplError> {
        self.inner.handle_packet(packet)
    }

    fn poll_output<'a>(&mut self, buf: &'a mut [u8]) -> DtlsOutput<'a> {
        let output = self.inner.poll_output(buf);
        if let (DtlsOutput::KeyingMaterial(material, profile), Some(slot)) = (&output, &self.slot) {
            *locked(&slot.0) = Some(Keys {
                material: material.to_vec(),
                profile: *profile,
                active: self.inner.is_active(),
            });
        }
        output
    }

    fn handle_timeout(&mut self, now: Instant) -> Result<(), DtlsImplError> {
        self.inner.handle_timeout(now)
    }

    fn send_application_data(&mut self, data: &[u8]) -> Result<(), DtlsImplError> {
        self.inner.send_application_data(data)
    }

    fn is_active(&self) -> bool {
        self.inner.is_active()
    }

    fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.inner.protocol_version()
    }

    fn is_closing(&self) -> bool {
        self.inner.is_closing()
    }

    fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    fn close(&mut self) -> Result<(), DtlsImplError> {
        self.inner.close()
    }
}
