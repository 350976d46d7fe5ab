//! SRT connection statistics: [`SrtStats`], the fields of libsrt's
//! `SRT_TRACEBSTATS` the worker reports, and their JSON shapes (receiver and sender
//! entries) exactly as deployed clients parse them.

use super::ffi::SRT_TRACEBSTATS;
use serde_json::{Value, json};

/// The statistics of one SRT socket (`srt_bistats`, not cleared, instantaneous).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SrtStats {
    pub ms_time_stamp: i64,
    pub pkt_flow_window: i32,
    pub pkt_congestion_window: i32,
    pub pkt_flight_size: i32,
    pub ms_rtt: f64,
    pub mbps_bandwidth: f64,
    pub mbps_max_bw: f64,
    pub pkt_recv_total: i64,
    /// libsrt 1.5.1 has no `pktRcvRetransTotal`: this is `pktRcvRetrans`, which
    /// counts since the connection started because the stats are never cleared.
    pub pkt_rcv_retrans_total: i32,
    pub pkt_rcv_loss_total: i32,
    pub pkt_rcv_drop_total: i32,
    pub pkt_rcv_belated: i64,
    pub pkt_sent_nak_total: i32,
    pub byte_recv_total: u64,
    pub byte_rcv_loss_total: u64,
    pub byte_rcv_drop_total: u64,
    pub mbps_recv_rate: f64,
    pub byte_sent_total: u64,
    pub byte_retrans_total: u64,
    pub byte_snd_drop_total: u64,
    pub mbps_send_rate: f64,
    pub pkt_recv_nak_total: i32,
    pub pkt_sent_total: i64,
}

impl SrtStats {
    pub(super) fn from_raw(raw: &SRT_TRACEBSTATS) -> Self {
        SrtStats {
            ms_time_stamp: raw.msTimeStamp,
            pkt_flow_window: raw.pktFlowWindow,
            pkt_congestion_window: raw.pktCongestionWindow,
            pkt_flight_size: raw.pktFlightSize,
            ms_rtt: raw.msRTT,
            mbps_bandwidth: raw.mbpsBandwidth,
            mbps_max_bw: raw.mbpsMaxBW,
            pkt_recv_total: raw.pktRecvTotal,
            pkt_rcv_retrans_total: raw.pktRcvRetrans,
            pkt_rcv_loss_total: raw.pktRcvLossTotal,
            pkt_rcv_drop_total: raw.pktRcvDropTotal,
            pkt_rcv_belated: raw.pktRcvBelated,
            pkt_sent_nak_total: raw.pktSentNAKTotal,
            byte_recv_total: raw.byteRecvTotal,
            byte_rcv_loss_total: raw.byteRcvLossTotal,
            byte_rcv_drop_total: raw.byteRcvDropTotal,
            mbps_recv_rate: raw.mbpsRecvRate,
            byte_sent_total: raw.byteSentTotal,
            byte_retrans_total: raw.byteRetransTotal,
            byte_snd_drop_total: raw.byteSndDropTotal,
            mbps_send_rate: raw.mbpsSendRate,
            pkt_recv_nak_total: raw.pktRecvNAKTotal,
            pkt_sent_total: raw.pktSentTotal,
        }
    }

    /// The receiver entry:
    /// `{"id", "state", "stats": {"time", "window": {"flow", "congestion", "flight"},
    /// "link": {"rtt", "mbpsBandwidth", "mbpsMaxBandwidth"}, "recv": {"packetsReceived",
    /// "packetsReceivedRetransmitted", "packetsLost", "packetsDropped",
    /// "packetsBelated", "NAKsSent", "bytesReceived", "bytesLost", "bytesDropped",
    /// "mbpsRate"}}}`. Rates and `rtt` are always JSON floats, everything else integers
    /// (`mbpsMaxBandwidth` is the ceiling truncated to whole Mb/s).
    pub fn receiver_json(&self, id: &str, state: &str) -> Value {
        let mut stats = self.common_json();
        stats["recv"] = json!({
            "packetsReceived": self.pkt_recv_total,
            "packetsReceivedRetransmitted": self.pkt_rcv_retrans_total,
            "packetsLost": self.pkt_rcv_loss_total,
            "packetsDropped": self.pkt_rcv_drop_total,
            "packetsBelated": self.pkt_rcv_belated,
            "NAKsSent": self.pkt_sent_nak_total,
            "bytesReceived": clamp_u64(self.byte_recv_total),
            "bytesLost": clamp_u64(self.byte_rcv_loss_total),
            "bytesDropped": clamp_u64(self.byte_rcv_drop_total),
            "mbpsRate": float(self.mbps_recv_rate),
        });
        json!({"id": id, "state": state, "stats": stats})
    }

    /// The sender entry: the same `time`/`window`/`link`, and `"send": {"bytesSent",
    /// "bytesRetransmitted", "bytesDropped", "packetsSent", "mbpsRate" (float),
    /// "NAKsReceived"}`.
    pub fn sender_json(&self, id: &str, state: &str) -> Value {
        let mut stats = self.common_json();
        stats["send"] = json!({
            "bytesSent": clamp_u64(self.byte_sent_total),
            "bytesRetransmitted": clamp_u64(self.byte_retrans_total),
            "bytesDropped": clamp_u64(self.byte_snd_drop_total),
            "packetsSent": self.pkt_sent_total,
            "mbpsRate": float(self.mbps_send_rate),
            "NAKsReceived": self.pkt_recv_nak_total,
        });
        json!({"id": id, "state": state, "stats": stats})
    }

    fn common_json(&self) -> Value {
        json!({
            "time": self.ms_time_stamp,
            "window": {
                "flow": self.pkt_flow_window,
                "congestion": self.pkt_congestion_window,
                "flight": self.pkt_flight_size,
            },
            "link": {
                "rtt": float(self.ms_rtt),
                "mbpsBandwidth": float(self.mbps_bandwidth),
                "mbpsMaxBandwidth": whole(self.mbps_max_bw),
            },
        })
    }
}

/// A JSON float: NaN and infinities (which serde_json would write as `null`) become 0.0.
fn float(value: f64) -> f64 {
    if value.is_finite() { value } else { 0.0 }
}

/// A float as a JSON integer (truncated, saturating; NaN gives 0).
fn whole(value: f64) -> i64 {
    value as i64
}

/// Byte counters as signed JSON integers (clients read i64).
fn clamp_u64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
