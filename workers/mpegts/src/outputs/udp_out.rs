//! UDP outputs: the stream as MPEG-TS datagrams of 7 packets to `ip:port`, unicast or
//! multicast (`ttl`, `interface`), either as frames arrive or, with `mux_rate`, as a
//! constant-bitrate transport stream ([`ConstantRate`]: null packets fill the gaps, PCRs
//! follow the output position) for IPTV gear that needs one.
//!
//! A constant-rate output whose stream carries more than the mux rate cannot keep up:
//! at [`MAX_BACKLOG`] of waiting media it drops what waits, logs it, and starts again at
//! the next keyframe.

use super::source;
use crate::shared::MpegTsShared;
use bytes::BytesMut;
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strom_ipc::rules::TsOutputSettings;
use strom_media::ts::cbr::ConstantRate;
use strom_stream::{FrameReceiver, TsFeed};
use tokio::net::UdpSocket;
use tokio_util::sync::CancellationToken;

const PACKET: usize = 188;
const DATAGRAM: usize = 7 * PACKET;
/// How often a constant-rate output sends what it owes.
const TICK: Duration = Duration::from_millis(2);
/// Media waiting in a constant-rate output at most: two seconds at the mux rate.
const MAX_BACKLOG_SECS: u64 = 2;
/// Owed packets beyond this (the task was stalled that long) restart the schedule; a
/// shorter stall is caught up in a burst, so the rate over seconds stays exact.
const MAX_CATCH_UP: Duration = Duration::from_secs(1);

/// Runs the output until `stop`.
pub async fn run(output: TsOutputSettings, shared: Arc<MpegTsShared>, stop: CancellationToken) {
    let socket = match open(&output) {
        Ok(socket) => socket,
        Err(e) => {
            tracing::error!(output = %output.id, error = %e, "UDP output not started");
            return;
        }
    };
    let destination = SocketAddr::new(
        output
            .ip
            .parse()
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        output.port,
    );
    let key = source(&output);
    let reader = (shared.hub).own_reader(&key, strom_stream::Queue, shared.ids.next_id());
    let mux_rate = output
        .parameter("mux_rate")
        .and_then(|v| v.parse::<u64>().ok());
    tracing::info!(output = %output.id, %destination, stream = %key, ?mux_rate, "UDP output started");
    let sending = Sending {
        socket,
        destination,
        shared: &shared,
        output: &output,
    };
    match mux_rate {
        Some(rate) => sending.constant_rate(reader.frames, rate, &stop).await,
        None => sending.as_frames_arrive(reader.frames, &stop).await,
    }
    tracing::info!(output = %output.id, "UDP output stopped");
}

/// A socket for the output: bound to the `interface` address (port chosen by the
/// system) or the unspecified address, with `ttl` for unicast and multicast.
fn open(output: &TsOutputSettings) -> std::io::Result<UdpSocket> {
    let interface: Option<Ipv4Addr> = output.parameter("interface").and_then(|v| v.parse().ok());
    let ttl: Option<u32> = output.parameter("ttl").and_then(|v| v.parse().ok());
    let local = SocketAddr::new(IpAddr::V4(interface.unwrap_or(Ipv4Addr::UNSPECIFIED)), 0);
    let socket = std::net::UdpSocket::bind(local)?;
    socket.set_nonblocking(true)?;
    if let Some(ttl) = ttl {
        socket.set_ttl(ttl)?;
        socket.set_multicast_ttl_v4(ttl)?;
    }
    if let Some(interface) = interface {
        socket2::SockRef::from(&socket).set_multicast_if_v4(&interface)?;
    }
    UdpSocket::from_std(socket)
}

struct Sending<'a> {
    socket: UdpSocket,
    destination: SocketAddr,
    shared: &'a MpegTsShared,
    output: &'a TsOutputSettings,
}

impl Sending<'_> {
    async fn send(&self, datagram: &[u8]) {
        match self.socket.send_to(datagram, self.destination).await {
            Ok(sent) => self.shared.counters.add_sent(sent as u64),
            // A refused unicast destination (ICMP) is not worth more than a debug line.
            Err(e) => tracing::debug!(output = %self.output.id, error = %e, "UDP send failed"),
        }
    }

    async fn as_frames_arrive(&self, mut frames: FrameReceiver, stop: &CancellationToken) {
        let mut feed = TsFeed::new();
        let mut packets = BytesMut::with_capacity(64 * 1024);
        loop {
            let frame = tokio::select! {
                () = stop.cancelled() => return,
                frame = frames.recv() => frame,
            };
            let Some(frame) = frame else { return };
            if feed.push(&frame, &mut packets) == 0 {
                continue;
            }
            for datagram in packets.chunks(DATAGRAM) {
                self.send(datagram).await;
            }
            packets.clear();
        }
    }

    async fn constant_rate(
        &self,
        mut frames: FrameReceiver,
        rate_bps: u64,
        stop: &CancellationToken,
    ) {
        let mut feed = TsFeed::new();
        let mut packets = BytesMut::with_capacity(64 * 1024);
        let mut backlog: VecDeque<u8> = VecDeque::new();
        let max_backlog = (rate_bps / 8 * MAX_BACKLOG_SECS) as usize;
        let mut schedule = ConstantRate::new(rate_bps);
        // Starts with the first media packet.
        let mut started: Option<Instant> = None;
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut datagram = Vec::with_capacity(DATAGRAM);
        let mut packet = [0u8; PACKET];
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                frame = frames.recv() => {
                    let Some(frame) = frame else { return };
                    feed.push(&frame, &mut packets);
                    if backlog.len() + packets.len() > max_backlog {
                        tracing::warn!(output = %self.output.id, rate_bps, "UDP output: the stream exceeds the mux rate; waiting media dropped, restarting at a keyframe");
                        backlog.clear();
                        feed.restart();
                    } else {
                        backlog.extend(packets.iter());
                    }
                    packets.clear();
                    if started.is_none() && !backlog.is_empty() {
                        started = Some(Instant::now());
                    }
                }
                _ = tick.tick() => {
                    let Some(start) = started else { continue };
                    let mut due = schedule.due(start.elapsed());
                    if due > schedule.rate_bps() * MAX_CATCH_UP.as_millis() as u64 / (1000 * 8 * PACKET as u64) {
                        // Stalled: start the schedule again from now.
                        schedule = ConstantRate::new(rate_bps);
                        started = Some(Instant::now());
                        due = 0;
                    }
                    while due > 0 {
                        let media = (backlog.len() >= PACKET).then(|| {
                            for (slot, byte) in packet.iter_mut().zip(backlog.drain(..PACKET)) {
                                *slot = byte;
                            }
                            &packet[..]
                        });
                        schedule.emit(media, &mut datagram);
                        due -= 1;
                        if datagram.len() == DATAGRAM {
                            self.send(&datagram).await;
                            datagram.clear();
                        }
                    }
                }
            }
        }
    }
}
