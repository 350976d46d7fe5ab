//! The gate's side of the cluster registry: a copy update from the supervisor
//! ([`strom_ipc::messages::WorkerRequest::Cluster`]) that says another server holds a
//! name this worker's client publishes ends that publisher. It lost the name: two
//! publishes raced on two servers, or it was admitted while etcd was unreachable and the
//! registry, back, kept the other claim. Refusing new publishes of held names is
//! [`super::Gate::publish`]'s. (The supervisor counts the lost claim; the kick is only
//! logged here.)

use super::Gate;
use strom_ipc::cluster::ClusterUpdate;

impl Gate {
    /// Applies a registry copy update and kicks the client publishers of names it says
    /// another server holds (not the streams of edge apps, which this server pulls
    /// from their holder).
    pub fn apply_cluster(&self, update: ClusterUpdate) {
        let rules = self.rules();
        for (key, holder) in self.hub.cluster().apply(update) {
            if rules.edge_for(&key.app).is_some() {
                continue;
            }
            let Some(publisher) = self.hub.get(&key).and_then(|stream| stream.publisher()) else {
                continue;
            };
            if publisher.relayed_from.is_some() || publisher.session_id == 0 {
                // A relay's producer kicks its own; the operator's own producers (pulls,
                // playlists, configured inputs) are left to the operator.
                continue;
            }
            if let Some(entry) = self.sessions.end(publisher.session_id) {
                tracing::warn!(
                    session = entry.id,
                    protocol = entry.protocol,
                    peer = %entry.client_ip,
                    "publisher kicked: {holder} holds {key} in the cluster"
                );
            }
        }
    }
}
