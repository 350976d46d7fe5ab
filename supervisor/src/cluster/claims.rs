//! Claiming and releasing stream names in etcd, each one transaction:
//! - a claim creates `streams/<app>/<stream>` under this server's lease only if the key
//!   does not exist (`create_revision == 0`), and otherwise reads who holds it; a key
//!   this server wrote under an earlier lease of its own (still alive after a
//!   reconnection) is moved to the current lease by compare-and-swap on that lease;
//! - a release deletes the key only while it is still under this server's lease, so a
//!   late release never deletes the next holder's claim.

use super::keys;
use etcd_client::{Client, Compare, CompareOp, PutOptions, Txn, TxnOp, TxnOpResponse};
use std::time::Duration;

/// Longest one etcd request may take before the session counts etcd as unreachable.
pub(super) const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// A claim's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Claim {
    Ours,
    /// Another server holds the name.
    Held(String),
}

pub(super) struct Claimer {
    pub client: Client,
    pub prefix: String,
    pub id: String,
    pub lease: i64,
}

impl Claimer {
    pub async fn claim(&self, app: &str, stream: &str) -> anyhow::Result<Claim> {
        let key = keys::stream(&self.prefix, app, stream);
        let mut client = self.client.clone();
        let put = TxnOp::put(
            key.clone(),
            self.id.clone(),
            Some(PutOptions::new().with_lease(self.lease)),
        );
        let txn = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
            .and_then([put.clone()])
            .or_else([TxnOp::get(key.clone(), None)]);
        let answer = tokio::time::timeout(REQUEST_TIMEOUT, client.txn(txn)).await??;
        if answer.succeeded() {
            return Ok(Claim::Ours);
        }
        let held = answer.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Get(get) => get
                .kvs()
                .first()
                .map(|kv| (String::from_utf8_lossy(kv.value()).into_owned(), kv.lease())),
            _ => None,
        });
        let Some((holder, lease)) = held else {
            // Released between the compare and the read: claim again next time.
            anyhow::bail!("{key} changed during its claim");
        };
        if holder != self.id {
            return Ok(Claim::Held(holder));
        }
        if lease == self.lease {
            return Ok(Claim::Ours);
        }
        // Ours under an earlier lease: move it, unless that changed meanwhile.
        let txn = Txn::new()
            .when([
                Compare::value(key.clone(), CompareOp::Equal, self.id.clone()),
                Compare::lease(key.clone(), CompareOp::Equal, lease),
            ])
            .and_then([put]);
        let moved = tokio::time::timeout(REQUEST_TIMEOUT, client.txn(txn)).await??;
        if moved.succeeded() {
            Ok(Claim::Ours)
        } else {
            anyhow::bail!("{key} changed during its claim")
        }
    }

    pub async fn release(&self, app: &str, stream: &str) -> anyhow::Result<()> {
        let key = keys::stream(&self.prefix, app, stream);
        let txn = Txn::new()
            .when([Compare::lease(key.clone(), CompareOp::Equal, self.lease)])
            .and_then([TxnOp::delete(key, None)]);
        let mut client = self.client.clone();
        tokio::time::timeout(REQUEST_TIMEOUT, client.txn(txn)).await??;
        Ok(())
    }

    /// Writes `servers/<id>` with the advertised URLs under the lease, unless another
    /// live server uses this id.
    pub async fn announce(&self, advertise: &[String]) -> anyhow::Result<()> {
        let key = keys::server(&self.prefix, &self.id);
        let value = serde_json::to_vec(advertise)?;
        let put = TxnOp::put(
            key.clone(),
            value,
            Some(PutOptions::new().with_lease(self.lease)),
        );
        let txn = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
            .and_then([put.clone()])
            .or_else([TxnOp::get(key.clone(), None)]);
        let mut client = self.client.clone();
        let answer = tokio::time::timeout(REQUEST_TIMEOUT, client.txn(txn)).await??;
        if answer.succeeded() {
            return Ok(());
        }
        let lease = answer.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Get(get) => get.kvs().first().map(|kv| kv.lease()),
            _ => None,
        });
        let Some(lease) = lease else {
            anyhow::bail!("{key} changed while it was written");
        };
        if lease == self.lease {
            return Ok(());
        }
        // Our own key from an earlier lease, or another server with our id: only the
        // first is ours to move, and a live lease cannot tell them apart; the key of a
        // dead earlier session expires within its TTL, so waiting is always right.
        anyhow::bail!(
            "{key} exists under another lease ({lease:x}): another server uses server_id {:?}, or this server's previous lease has not expired yet",
            self.id
        )
    }
}
