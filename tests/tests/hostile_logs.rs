//! Log amplification (issue 31 item 10): a UDP sender that flips its PMT version with
//! every packet, and a client that keeps failing Icecast source logins, each get a
//! bounded number of log lines (the rest are counted as `suppressed`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Server, free_port, wait_for};
use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::time::{Duration, Instant};

const SOON: Duration = Duration::from_secs(40);

/// CRC-32/MPEG-2 of a PSI section.
fn crc32_mpeg2(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for byte in data {
        crc ^= u32::from(*byte) << 24;
        for _ in 0..8 {
            crc = if crc & 0x8000_0000 != 0 {
                (crc << 1) ^ 0x04C1_1DB7
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// One TS packet on `pid` carrying `section` (pointer field 0, stuffed with 0xFF).
fn psi_packet(pid: u16, counter: u8, section: &[u8]) -> [u8; 188] {
    let mut packet = [0xFFu8; 188];
    packet[0] = 0x47;
    packet[1] = 0x40 | (pid >> 8) as u8;
    packet[2] = pid as u8;
    packet[3] = 0x10 | (counter & 0x0F);
    packet[4] = 0;
    packet[5..5 + section.len()].copy_from_slice(section);
    packet
}

/// A section: `table_id`, `id` (table id extension), `version`, `body`, CRC.
fn section(table_id: u8, id: u16, version: u8, body: &[u8]) -> Vec<u8> {
    let length = 5 + body.len() + 4;
    let mut s = vec![
        table_id,
        0xB0 | (length >> 8) as u8,
        length as u8,
        (id >> 8) as u8,
        id as u8,
        0xC1 | ((version & 0x1F) << 1),
        0,
        0,
    ];
    s.extend_from_slice(body);
    let crc = crc32_mpeg2(&s);
    s.extend_from_slice(&crc.to_be_bytes());
    s
}

/// PAT (program 1 on PMT PID 0x1000) and a PMT of `version` (H.264 on PID 0x100).
fn pat_and_pmt(version: u8, counter: u8) -> Vec<u8> {
    let pat = section(0x00, 1, 0, &[0x00, 0x01, 0xF0, 0x00]);
    let pmt = section(
        0x02,
        1,
        version,
        &[0xE1, 0x00, 0xF0, 0x00, 0x1B, 0xE1, 0x00, 0xF0, 0x00],
    );
    let mut datagram = psi_packet(0, counter, &pat).to_vec();
    datagram.extend_from_slice(&psi_packet(0x1000, counter, &pmt));
    datagram
}

fn lines_with(log: &str, text: &str) -> usize {
    log.lines().filter(|l| l.contains(text)).count()
}

#[test]
fn pmt_version_flips_and_failed_icecast_logins_get_bounded_log_lines() {
    let udp_port = free_port();
    let server = Server::start("");
    server.apply_rules(&format!(
        r#"{{"RtmpSettings": {{"interfaces": [{{"ip": "127.0.0.1", "port": {}}}]}},
 "Delivery": {{"outputs": ["HLS", "ICECAST"]}},
 "IcecastSources": [{{"app": "radio", "password": "right-password"}}],
 "Cameras": [{{"id": "cam", "ip": "127.0.0.1", "port": {udp_port}, "protocol": "udp", "app": "live", "stream": "cam"}}]}}"#,
        server.ports.rtmp
    ));

    // PMT flips: 200 datagrams a second for 12 s, past one log window (10 s), so that a
    // line reports what was held back.
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let started = Instant::now();
    let mut sent = 0u32;
    while started.elapsed() < Duration::from_secs(12) {
        let datagram = pat_and_pmt((sent % 32) as u8, sent as u8);
        sender.send_to(&datagram, ("127.0.0.1", udp_port)).unwrap();
        sent += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    let limited = wait_for(SOON, "a program line reporting suppressed ones", || {
        let log = server.log();
        log.lines()
            .any(|l| l.contains("MPEG-TS program") && !l.contains("suppressed=0"))
            .then_some(log)
    });
    let log = server.log();
    let lines = lines_with(&log, "MPEG-TS program");
    assert!(
        limited.is_some() && lines <= 50,
        "{lines} program lines for {sent} PMT flips; log tail:\n{}",
        log.lines().rev().take(20).collect::<Vec<_>>().join("\n")
    );

    // Failed Icecast source logins.
    let before = lines_with(&server.log(), "icecast source refused");
    for _ in 0..300 {
        let mut stream = TcpStream::connect(("127.0.0.1", server.ports.http)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        // "source:wrong" in Basic.
        stream
            .write_all(
                b"PUT /radio/x HTTP/1.1\r\nAuthorization: Basic c291cmNlOndyb25n\r\n\
                  Content-Type: audio/mpeg\r\n\r\n",
            )
            .unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        assert!(
            answer.starts_with(b"HTTP/1.0 401"),
            "{}",
            String::from_utf8_lossy(&answer)
        );
    }
    let refused = lines_with(&server.log(), "icecast source refused") - before;
    assert!(
        refused <= 60,
        "{refused} log lines for 300 failed source logins"
    );
}
