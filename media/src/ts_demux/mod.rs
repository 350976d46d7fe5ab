//! Sans-io MPEG-TS demuxing (ISO/IEC 13818-1) into protocol-neutral [`Frame`]s, for
//! TS ingest over UDP/SRT/RTP.
//!
//! [`TsDemuxer::push`] takes bytes in any chunking (packets split across pushes,
//! leading garbage: it locks on a 0x47 sync byte confirmed by the next packet's);
//! frames come out of [`TsDemuxer::next_frame`], diagnostics out of
//! [`TsDemuxer::next_event`] (see [`DemuxEvent`]) and [`TsDemuxer::state`].
//!
//! - **Programs**: the PAT and PMT (CRC-checked) select one program, by number or
//!   the first; a new PMT version keeps unchanged streams and resets the others.
//! - **Timestamps**: PTS/DTS are unwrapped per program onto one continuous `i64`
//!   90 kHz timeline starting at the first timestamp's value (see [`clock`]);
//!   jumps of more than [`MAX_STEP`] are re-based and reported.
//! - **H.264 / H.265** (0x1B, 0x24): one PES = one access unit, rewritten to 4-byte
//!   length-prefixed NAL units without AUDs and parameter sets; an `avcC`/`hvcC`
//!   config frame precedes the first sample and follows every parameter set change.
//! - **AAC** (0x0F, ADTS): one frame per AAC frame without its ADTS header, times
//!   interpolated at 1024 samples per frame; an AudioSpecificConfig config frame
//!   first and on change. ADTS frames split across PES packets are dropped.
//! - **MPEG audio** (0x03, 0x04) as `Mp3` and **AC-3** (0x81, or 0x06 with an AC-3
//!   descriptor) as `Ac3`: one frame per PES, payload passed through.
//! - **SCTE-35** (0x86): every CRC-valid section is a `Track::Data` frame whose
//!   payload is the whole section. Its `dts`/`pts` is the latest time of the
//!   program's timeline when the section completes (the last PES timestamp of any
//!   stream): an arrival mark, not the splice time, which the section carries itself.
//! - **Bounds**: PES at most [`MAX_PES`] bytes, sections at most 4096, at most
//!   [`MAX_STREAMS`] streams, at most [`MAX_EVENTS`] undrained events. Frames are
//!   bounded by the input of a push: drain them after each push.
//!
//! Per packet nothing is allocated; PES buffers are reused and payloads are
//! zero-copy [`Bytes`] slices of them, except video, which is rewritten once.

pub(crate) mod adts;
pub mod clock;
mod crc;
mod packet;
mod pes;
mod psi;
mod rtp;
mod section;
mod stream;
pub(crate) mod video;

#[cfg(test)]
mod ffmpeg_tests;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use bytes::Bytes;

use crate::frame::{Codec, Frame, SourceForm, Track};
use adts::{FRAME_SAMPLES, parse_adts};
use clock::{MAX_STEP, Timeline, signed_delta};
use packet::Packet;
use pes::{PesHeader, Pushed};
use psi::{PAT_TABLE_ID, PMT_TABLE_ID, Section, parse_pmt, pat_programs};
use section::{SectionAssembler, sections};
use stream::{Stream, StreamKind};

pub use pes::MAX_PES;
pub use psi::{EsInfo, MAX_STREAMS};
pub use rtp::strip_rtp;

pub const PACKET_SIZE: usize = 188;
pub const SYNC_BYTE: u8 = 0x47;
/// Events kept until read; later ones are counted in [`TsDemuxer::dropped_events`].
pub const MAX_EVENTS: usize = 1024;
/// Packets after sync without a PAT before [`DemuxEvent::NoPat`] is reported.
pub const NO_PAT_PACKETS: u32 = 1000;

const SCTE35_TABLE_ID: u8 = 0xfc;

/// Something the caller may log or show; none of them stops the demuxer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DemuxEvent {
    /// Locked onto the packet grid (first time, or again after losing it).
    Synced,
    /// A packet did not start with the sync byte: searching again.
    SyncLost,
    /// [`NO_PAT_PACKETS`] packets went by without a PAT (reported once).
    NoPat,
    /// The PAT does not list the program asked for.
    ProgramNotFound { program_number: u16 },
    /// A (new version of the) PMT of the selected program.
    ProgramChanged(ProgramInfo),
    /// A stream removed or changed by a new PMT version: its state was dropped.
    StreamReset { pid: u16 },
    /// A stream type this demuxer does not handle (reported when it appears).
    UnknownStreamType { pid: u16, stream_type: u8 },
    /// Packets were lost or reordered; the PES in progress was dropped.
    ContinuityError { pid: u16, expected: u8, got: u8 },
    /// A PSI or SCTE-35 section failed its CRC or did not parse.
    BadSection { pid: u16 },
    /// A PES outgrew [`MAX_PES`] and was dropped.
    PesTooLarge { pid: u16 },
    /// A PES without a valid header was dropped.
    MalformedPes { pid: u16 },
    /// A timestamp jumped by more than [`MAX_STEP`]: the timeline was re-based
    /// and continues at `dts`.
    TimestampJump { pid: u16, dts: i64 },
}

/// The selected program as its latest PMT describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramInfo {
    /// program_number.
    pub number: u16,
    pub pmt_pid: u16,
    /// PMT version_number.
    pub version: u8,
    pub pcr_pid: u16,
    /// The elementary streams, at most [`MAX_STREAMS`], in PMT order.
    pub streams: Vec<EsInfo>,
}

/// How far the demuxer got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemuxState {
    /// No packet grid found yet.
    NoSync,
    /// Packets, but no valid PAT yet.
    NoPat,
    /// A PAT, but not the program asked for.
    NoProgram,
    /// The program is known, its PMT not yet.
    NoPmt,
    /// Demuxing the program's streams.
    Ready,
}

/// The MPEG-TS demuxer for one input; see the module docs.
#[derive(Debug)]
pub struct TsDemuxer {
    wanted: Option<u16>,
    /// Bytes of an incomplete or unconfirmed packet from the previous push.
    carry: Vec<u8>,
    synced: bool,
    ever_synced: bool,
    pat: SectionAssembler,
    pat_seen: bool,
    /// (program_number, PMT PID) of the selected program.
    program: Option<(u16, u16)>,
    not_found_reported: bool,
    pmt: SectionAssembler,
    pmt_version: Option<u8>,
    streams: Vec<Stream>,
    scratch: Vec<EsInfo>,
    timeline: Timeline,
    packets_without_pat: u32,
    frames: VecDeque<Frame>,
    events: VecDeque<DemuxEvent>,
    dropped_events: u64,
}

impl TsDemuxer {
    /// A demuxer for `program` (a program_number), or the first program of the PAT.
    pub fn new(program: Option<u16>) -> Self {
        Self {
            wanted: program,
            carry: Vec::with_capacity(2 * PACKET_SIZE),
            synced: false,
            ever_synced: false,
            pat: SectionAssembler::default(),
            pat_seen: false,
            program: None,
            not_found_reported: false,
            pmt: SectionAssembler::default(),
            pmt_version: None,
            streams: Vec::new(),
            scratch: Vec::new(),
            timeline: Timeline::default(),
            packets_without_pat: 0,
            frames: VecDeque::new(),
            events: VecDeque::new(),
            dropped_events: 0,
        }
    }

    /// Feeds transport stream bytes, in any chunking.
    pub fn push(&mut self, mut input: &[u8]) {
        // Finish the packet the previous push left incomplete, with enough
        // bytes to confirm it by the next sync byte.
        while !self.carry.is_empty() && !input.is_empty() {
            let take = (PACKET_SIZE + 1 - self.carry.len().min(PACKET_SIZE + 1)).min(input.len());
            let (head, tail) = input.split_at(take);
            self.carry.extend_from_slice(head);
            input = tail;
            let carry = std::mem::take(&mut self.carry);
            let used = self.step(&carry);
            self.carry = carry;
            self.carry.drain(..used.min(self.carry.len()));
            if used == 0 {
                break;
            }
        }
        if self.carry.is_empty() {
            loop {
                let used = self.step(input);
                if used == 0 {
                    break;
                }
                input = input.get(used..).unwrap_or_default();
            }
        }
        self.carry.extend_from_slice(input);
    }

    /// Ends the input: finishes the PES packets still open (unbounded video PES
    /// end only at the next unit start).
    pub fn flush(&mut self) {
        for i in 0..self.streams.len() {
            if self
                .streams
                .get(i)
                .is_some_and(|s| s.pes.active && !s.pes.buf.is_empty())
            {
                self.finish_pes(i);
            }
        }
    }

    /// The next demuxed frame, in the order they completed.
    pub fn next_frame(&mut self) -> Option<Frame> {
        self.frames.pop_front()
    }

    /// The next diagnostic event.
    pub fn next_event(&mut self) -> Option<DemuxEvent> {
        self.events.pop_front()
    }

    /// Events dropped because [`MAX_EVENTS`] were waiting.
    pub fn dropped_events(&self) -> u64 {
        self.dropped_events
    }

    pub fn state(&self) -> DemuxState {
        if !self.ever_synced {
            DemuxState::NoSync
        } else if !self.pat_seen {
            DemuxState::NoPat
        } else if self.program.is_none() {
            DemuxState::NoProgram
        } else if self.pmt_version.is_none() {
            DemuxState::NoPmt
        } else {
            DemuxState::Ready
        }
    }

    /// The selected program's number and its streams (empty before its PMT).
    pub fn program(&self) -> Option<(u16, impl Iterator<Item = &EsInfo>)> {
        let (number, _) = self.program?;
        Some((number, self.streams.iter().map(|s| &s.info)))
    }

    fn event(&mut self, event: DemuxEvent) {
        if self.events.len() < MAX_EVENTS {
            self.events.push_back(event);
        } else {
            self.dropped_events += 1;
        }
    }

    /// Consumes from the start of `data`: one packet, or garbage before a sync
    /// byte. 0 when more bytes are needed.
    fn step(&mut self, data: &[u8]) -> usize {
        if self.synced {
            let Some(packet) = data.first_chunk::<PACKET_SIZE>() else {
                return 0;
            };
            if packet[0] == SYNC_BYTE {
                self.packet(packet);
                return PACKET_SIZE;
            }
            self.synced = false;
            self.event(DemuxEvent::SyncLost);
        }
        // Searching: a sync byte confirmed by the one a packet later.
        let mut from = 0;
        while let Some(offset) = data
            .get(from..)
            .and_then(|d| d.iter().position(|&b| b == SYNC_BYTE))
        {
            let at = from + offset;
            match data.get(at + PACKET_SIZE) {
                None => return at, // wait for the confirming byte
                Some(&SYNC_BYTE) => {
                    if at > 0 {
                        return at;
                    }
                    self.synced = true;
                    self.ever_synced = true;
                    self.event(DemuxEvent::Synced);
                    return self.step(data);
                }
                Some(_) => from = at + 1,
            }
        }
        data.len()
    }

    fn packet(&mut self, bytes: &[u8; PACKET_SIZE]) {
        let Some(p) = Packet::parse(bytes) else {
            return;
        };
        if p.pid == 0 {
            if p.has_payload {
                self.pat.push(p.payload, p.unit_start);
                self.handle_pat();
            }
            return;
        }
        if !self.pat_seen && self.packets_without_pat < NO_PAT_PACKETS {
            self.packets_without_pat += 1;
            if self.packets_without_pat == NO_PAT_PACKETS {
                self.event(DemuxEvent::NoPat);
            }
        }
        if self.program.is_some_and(|(_, pmt_pid)| pmt_pid == p.pid) {
            if p.has_payload {
                self.pmt.push(p.payload, p.unit_start);
                self.handle_pmt(p.pid);
            }
            return;
        }
        let Some(i) = self.streams.iter().position(|s| s.info.pid == p.pid) else {
            return;
        };
        if !p.has_payload {
            return;
        }
        let Some(stream) = self.streams.get_mut(i) else {
            return;
        };
        if let Some(last) = stream.cc.filter(|_| !p.discontinuity) {
            let expected = (last + 1) & 0x0f;
            if p.cc == last {
                return; // a duplicate packet
            }
            if p.cc != expected {
                stream.pes.reset();
                stream.sections.reset();
                stream.cc = Some(p.cc);
                self.event(DemuxEvent::ContinuityError {
                    pid: p.pid,
                    expected,
                    got: p.cc,
                });
                return self.payload(i, p);
            }
        }
        stream.cc = Some(p.cc);
        self.payload(i, p);
    }

    fn payload(&mut self, i: usize, p: Packet<'_>) {
        let Some(stream) = self.streams.get_mut(i) else {
            return;
        };
        match stream.kind {
            StreamKind::Ignored => {}
            StreamKind::Scte35 => {
                stream.sections.push(p.payload, p.unit_start);
                self.handle_scte35(i);
            }
            _ => {
                let pushed = if p.unit_start {
                    if stream.pes.active && !stream.pes.buf.is_empty() {
                        self.finish_pes(i);
                    }
                    match self.streams.get_mut(i) {
                        Some(stream) => stream.pes.start(p.payload),
                        None => return,
                    }
                } else {
                    stream.pes.push(p.payload)
                };
                match pushed {
                    Pushed::Complete => self.finish_pes(i),
                    Pushed::TooLarge => self.event(DemuxEvent::PesTooLarge { pid: p.pid }),
                    Pushed::Pending => {}
                }
            }
        }
    }

    fn handle_pat(&mut self) {
        let ready = self.pat.take_ready();
        for raw in sections(&ready) {
            let Ok(section) = Section::parse(raw) else {
                self.event(DemuxEvent::BadSection { pid: 0 });
                continue;
            };
            if section.table_id != PAT_TABLE_ID || !section.current {
                continue;
            }
            self.pat_seen = true;
            let chosen = pat_programs(section.body)
                .find(|&(number, _)| self.wanted.is_none_or(|w| w == number));
            match chosen {
                None => {
                    if let Some(program_number) = self.wanted
                        && !self.not_found_reported
                    {
                        self.not_found_reported = true;
                        self.event(DemuxEvent::ProgramNotFound { program_number });
                    }
                }
                Some(program) if Some(program) != self.program => {
                    self.not_found_reported = false;
                    self.program = Some(program);
                    self.pmt.reset();
                    self.pmt_version = None;
                    let old = std::mem::take(&mut self.streams);
                    for stream in old {
                        self.event(DemuxEvent::StreamReset {
                            pid: stream.info.pid,
                        });
                    }
                }
                Some(_) => {}
            }
        }
        self.pat.give_back(ready);
    }

    fn handle_pmt(&mut self, pid: u16) {
        let ready = self.pmt.take_ready();
        for raw in sections(&ready) {
            let Some((number, pmt_pid)) = self.program else {
                break;
            };
            let Ok(section) = Section::parse(raw) else {
                self.event(DemuxEvent::BadSection { pid });
                continue;
            };
            if section.table_id != PMT_TABLE_ID || !section.current || section.id != number {
                continue;
            }
            if self.pmt_version == Some(section.version) {
                continue;
            }
            let mut scratch = std::mem::take(&mut self.scratch);
            let Ok(pcr_pid) = parse_pmt(section.body, &mut scratch) else {
                self.scratch = scratch;
                self.event(DemuxEvent::BadSection { pid });
                continue;
            };
            scratch.retain(|es| es.pid != 0 && es.pid != pmt_pid && es.pid != 0x1fff);
            scratch.dedup_by_key(|es| es.pid);
            self.pmt_version = Some(section.version);
            let mut old = std::mem::take(&mut self.streams);
            for es in &scratch {
                if let Some(at) = old.iter().position(|s| s.info == *es) {
                    self.streams.push(old.swap_remove(at));
                    continue;
                }
                let stream = Stream::new(*es);
                if stream.kind == StreamKind::Ignored {
                    self.event(DemuxEvent::UnknownStreamType {
                        pid: es.pid,
                        stream_type: es.stream_type,
                    });
                }
                self.streams.push(stream);
            }
            for stream in old {
                self.event(DemuxEvent::StreamReset {
                    pid: stream.info.pid,
                });
            }
            self.event(DemuxEvent::ProgramChanged(ProgramInfo {
                number,
                pmt_pid,
                version: section.version,
                pcr_pid,
                streams: scratch.clone(),
            }));
            self.scratch = scratch;
        }
        self.pmt.give_back(ready);
    }

    fn handle_scte35(&mut self, i: usize) {
        let Some(stream) = self.streams.get_mut(i) else {
            return;
        };
        let pid = stream.info.pid;
        let ready = stream.sections.take_ready();
        let time = self.timeline.latest();
        for section in sections(&ready) {
            let valid = section.first() == Some(&SCTE35_TABLE_ID)
                && section.len() >= 4
                && crc::crc32_mpeg2(section) == 0;
            if !valid {
                self.event(DemuxEvent::BadSection { pid });
                continue;
            }
            self.frames.push_back(frame(
                Track::Data,
                Codec::Scte35,
                time,
                time,
                Bytes::copy_from_slice(section),
            ));
        }
        if let Some(stream) = self.streams.get_mut(i) {
            stream.sections.give_back(ready);
        }
    }

    /// Turns the complete PES of stream `i` into frames.
    fn finish_pes(&mut self, i: usize) {
        let Some(stream) = self.streams.get_mut(i) else {
            return;
        };
        stream.pes.active = false;
        let pid = stream.info.pid;
        let data = stream.pes.buf.split().freeze();
        let Some(header) = PesHeader::parse(&data) else {
            self.event(DemuxEvent::MalformedPes { pid });
            return;
        };
        let payload = data.slice(header.payload_start.min(data.len())..);
        let (dts, pts) = match header.dts.or(header.pts) {
            Some(raw) => {
                let (dts, jumped) = self.timeline.place(raw);
                if jumped {
                    self.event(DemuxEvent::TimestampJump { pid, dts });
                }
                let offset = header.pts.map_or(0, |pts| signed_delta(pts, raw));
                let pts = if offset.abs() > MAX_STEP {
                    dts
                } else {
                    dts + offset
                };
                (dts, pts)
            }
            None => {
                let last = self.streams.get(i).map_or(0, |s| s.last_dts);
                (last, last)
            }
        };
        let Some(stream) = self.streams.get_mut(i) else {
            return;
        };
        stream.last_dts = dts;
        let codec = stream.kind.codec().unwrap_or(Codec::Unknown);
        match stream.kind {
            StreamKind::Video(nal_codec) => {
                let converted = stream.video.convert(nal_codec, &payload);
                if let Some(record) = converted.config {
                    let mut config = frame(Track::Video, codec, dts, dts, record);
                    config.config = true;
                    self.frames.push_back(config);
                }
                if let Some((sample, keyframe)) = converted.sample {
                    let mut sample = frame(Track::Video, codec, dts, pts, sample);
                    sample.keyframe = keyframe;
                    self.frames.push_back(sample);
                }
            }
            StreamKind::Aac => {
                let mut offset = 0;
                let mut samples = 0u64;
                while let Some(adts) = payload.get(offset..).and_then(parse_adts) {
                    if stream.asc != Some(adts.asc) {
                        stream.asc = Some(adts.asc);
                        let record = Bytes::copy_from_slice(&adts.asc);
                        let mut config = frame(Track::Audio, codec, pts, pts, record);
                        config.config = true;
                        self.frames.push_back(config);
                    }
                    let at = (samples.saturating_mul(90_000) / u64::from(adts.sampling_frequency))
                        as i64;
                    let time = pts.saturating_add(at);
                    let body = payload.slice(offset + adts.start..offset + adts.end);
                    self.frames
                        .push_back(frame(Track::Audio, codec, time, time, body));
                    samples += FRAME_SAMPLES * u64::from(adts.blocks);
                    offset += adts.end;
                }
            }
            StreamKind::Mp3 | StreamKind::Ac3 => {
                if !payload.is_empty() {
                    self.frames
                        .push_back(frame(Track::Audio, codec, pts, pts, payload));
                }
            }
            StreamKind::Scte35 | StreamKind::Ignored => {}
        }
    }
}

fn frame(track: Track, codec: Codec, dts: i64, pts: i64, payload: Bytes) -> Frame {
    Frame {
        track,
        codec,
        dts,
        pts,
        keyframe: false,
        config: false,
        control: false,
        payload,
        form: SourceForm::Neutral,
    }
}
