//! Low-Latency HLS requests (draft-pantos-hls-rfc8216bis §6.2.5-6), for streams whose
//! outputs include `LLHLS`:
//!
//! - blocking playlist reloads: `chunks_fmp4.m3u8?_HLS_msn=N[&_HLS_part=M]` is held until
//!   the playlist holds segment N (part M of segment N, or a later part), answered 400 at
//!   once when N (or M) is too far ahead, and 503 after 3 target durations;
//! - a part named by `#EXT-X-PRELOAD-HINT` (`part_<msn>_<index>.m4s`) that does not exist
//!   yet is held until it does (then served), or until 3 target durations pass (then 404);
//!   when a keyframe ends its segment first, the hinted part is the next segment's first
//!   part, and that is what the request waits for and gets;
//! - a plain playlist request (no `_HLS_msn`) is answered when the next part is out (at
//!   most about one part target later), so that the first playlist a player reads is not
//!   most of a part old: players place their live edge from it;
//! - `#EXT-X-RENDITION-REPORT`s of the other renditions of the stream's ABR groups.
//!
//! Nothing polls: a held request waits on the stream's version ([`HlsStream`] bumps it at
//! every segment and part), and a held request is one connection among those the
//! connection caps (`http_max_connections[_per_ip]`) already bound.
//!
//! [`HlsStream`]: crate::store::HlsStream

use super::{Context, error};
use crate::store::LlPosition;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use std::time::Duration;
use strom_media::hls::low_latency::rendition_report;

/// How far past the last part a blocking request may ask (the draft's Advance Part
/// Limit).
const ADVANCE_PART_LIMIT: usize = 3;

/// What to do with a held request now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hold {
    /// Answer it (what it waits for is there, or will never come).
    Ready,
    Wait,
    /// 400: further ahead than the server lets a client wait.
    TooFar,
}

/// Parts listed of segment `msn`.
fn parts_of(position: &LlPosition, msn: u64) -> usize {
    match position.last_part {
        Some((last, index)) if last == msn => index + 1,
        _ => 0,
    }
}

/// A blocking playlist reload for segment `msn` (and part `part` of it).
///
/// A part past the last one of a segment that ended is answered with a later part (the
/// draft's "or later"): asking for part 5 of a finished 5-part segment waits for the
/// first part (or the whole) of the next segment, which is what comes next.
pub(super) fn playlist_hold(position: &LlPosition, msn: u64, part: Option<usize>) -> Hold {
    let complete = |msn: u64| position.last_segment.is_some_and(|last| last >= msn);
    if position.closed {
        return Hold::Ready;
    }
    let Some(part) = part else {
        if complete(msn) {
            return Hold::Ready;
        }
        // The last segment in the playlist is the one being built: up to two past it.
        return if msn > position.building.saturating_add(1) {
            Hold::TooFar
        } else {
            Hold::Wait
        };
    };
    let reached = position
        .last_part
        .is_some_and(|(last, index)| last > msn || (last == msn && index >= part));
    if reached || complete(msn.saturating_add(1)) {
        return Hold::Ready;
    }
    if msn > position.building.saturating_add(1) {
        return Hold::TooFar;
    }
    // Parts of a segment that ended wait for the next part; ahead of the segment being
    // built, only as far as the Advance Part Limit.
    let listed = if msn == position.building {
        parts_of(position, msn)
    } else {
        0
    };
    if msn >= position.building && part >= listed + ADVANCE_PART_LIMIT {
        return Hold::TooFar;
    }
    Hold::Wait
}

/// A plain playlist request that found `first_seen` as the latest part: answered once a
/// newer part (or the end) is out.
pub(super) fn fresh_playlist_hold(position: &LlPosition, first_seen: Option<(u64, usize)>) -> Hold {
    if position.closed || position.last_part != first_seen {
        Hold::Ready
    } else {
        Hold::Wait
    }
}

/// A request for part `index` of segment `msn`: held while it may still come.
pub(super) fn part_hold(position: &LlPosition, msn: u64, index: usize) -> Hold {
    let exists = position
        .last_part
        .is_some_and(|(last, last_index)| last > msn || (last == msn && last_index >= index));
    // A segment that ended has all the parts it will have.
    if exists || position.closed || msn < position.building {
        return Hold::Ready;
    }
    let listed = if msn == position.building {
        parts_of(position, msn)
    } else {
        0
    };
    if msn > position.building.saturating_add(1) || index >= listed + ADVANCE_PART_LIMIT {
        return Hold::Ready;
    }
    Hold::Wait
}

/// `_HLS_msn`, `_HLS_part` and `_HLS_skip=YES` of a playlist query.
#[derive(Debug)]
pub(super) struct Directives {
    pub msn: Option<u64>,
    pub part: Option<usize>,
    pub skip: bool,
}

/// The delivery directives of a playlist query; `Err` (answered 400, as
/// draft-pantos-hls-rfc8216bis §6.2.5.2 requires) for an `_HLS_msn` or `_HLS_part` that
/// is not a decimal integer, or an `_HLS_part` without `_HLS_msn`.
pub(super) fn directives(query: Option<&str>) -> Result<Directives, &'static str> {
    let mut directives = Directives {
        msn: None,
        part: None,
        skip: false,
    };
    for pair in query.unwrap_or_default().split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "_HLS_msn" => {
                directives.msn = Some(value.parse().map_err(|_| "_HLS_msn is not a number")?);
            }
            "_HLS_part" => {
                directives.part = Some(value.parse().map_err(|_| "_HLS_part is not a number")?);
            }
            "_HLS_skip" => directives.skip = value == "YES" || value == "v2",
            _ => {}
        }
    }
    if directives.part.is_some() && directives.msn.is_none() {
        return Err("_HLS_part without _HLS_msn");
    }
    Ok(directives)
}

/// `part_<msn>_<index>.m4s`.
pub(super) fn part_name(file: &str) -> Option<(u64, usize)> {
    let (msn, index) = file
        .strip_prefix("part_")?
        .strip_suffix(".m4s")?
        .split_once('_')?;
    Some((msn.parse().ok()?, index.parse().ok()?))
}

impl Context {
    /// `#EXT-X-RENDITION-REPORT`s of the other LL-HLS renditions of the ABR groups
    /// `app/stream` is a member of (players switch renditions without a plain reload).
    pub(super) fn rendition_reports(&self, app: &str, stream: &str, sid: Option<u128>) -> String {
        let rules = self.packaging.rules();
        let query = sid.map(|id| format!("?sid={id}")).unwrap_or_default();
        let mut reports = String::new();
        let mut seen = Vec::new();
        let groups = rules.abr_groups_with(app, stream);
        for member in groups.iter().flat_map(|g| &g.streams) {
            if (member.app == app && member.stream == stream) || seen.contains(&member) {
                continue;
            }
            seen.push(member);
            let Some((msn, part)) = self
                .packaging
                .store
                .get(&member.app, &member.stream)
                .and_then(|hls| hls.ll_position())
                .and_then(|position| position.last_part)
            else {
                continue;
            };
            let uri = format!(
                "../../{}/{}/chunks_fmp4.m3u8{query}",
                member.app, member.stream
            );
            reports.push_str(&rendition_report(&uri, msn, part as u64));
        }
        reports
    }

    /// Holds a blocking playlist reload or a hinted part until it can be answered;
    /// `Some` for an answer given here (400, 503), `None` to answer it as usual.
    pub(super) async fn hold_low_latency(
        &self,
        request: &Request<Incoming>,
    ) -> Option<Response<Full<Bytes>>> {
        if request.method() != Method::GET && request.method() != Method::HEAD {
            return None;
        }
        let mut parts = request.uri().path().trim_start_matches('/').split('/');
        let (Some(app), Some(stream), Some(file), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        if file != "chunks_fmp4.m3u8" && part_name(file).is_none() {
            return None;
        }
        // `get` refuses names that fail the check.
        let hls = self.packaging.store.get(app, stream)?;
        // Only LL-HLS streams hold requests.
        let first = hls.ll_position()?;
        let playlist = file == "chunks_fmp4.m3u8";
        let mut fresh = false;
        let check: Box<dyn Fn(&LlPosition) -> Hold + Send> = if playlist {
            let directives = match directives(request.uri().query()) {
                Ok(directives) => directives,
                // Refused for LL-HLS streams only (others ignore the query).
                Err(why) => return Some(error(StatusCode::BAD_REQUEST, why)),
            };
            match directives.msn {
                Some(msn) => {
                    let part = directives.part;
                    Box::new(move |position| playlist_hold(position, msn, part))
                }
                None => {
                    fresh = true;
                    let first_seen = first.last_part;
                    Box::new(move |position| fresh_playlist_hold(position, first_seen))
                }
            }
        } else {
            let (msn, index) = part_name(file)?;
            let hinted = hls.clone();
            Box::new(move |position| {
                let (msn, index) = hinted.answering_part(msn, index);
                part_hold(position, msn, index)
            })
        };
        let mut version = hls.watch_version();
        // A plain request waits for one part at most (with room for a late one), then
        // gets the playlist as it is: it never fails for want of a new part.
        let wait = if fresh {
            Duration::from_secs_f64(first.part_target_secs.clamp(0.05, 5.0) * 1.5)
        } else {
            Duration::from_secs(3 * u64::from(first.target_duration))
        };
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let position = hls.ll_position()?;
            match check(&position) {
                Hold::Ready => return None,
                Hold::TooFar if playlist => {
                    return Some(error(
                        StatusCode::BAD_REQUEST,
                        "_HLS_msn or _HLS_part too far ahead",
                    ));
                }
                Hold::TooFar => return None,
                Hold::Wait => {}
            }
            tokio::select! {
                changed = version.changed() => if changed.is_err() {
                    return None;
                },
                () = tokio::time::sleep_until(deadline) => {
                    return (playlist && !fresh).then(|| {
                        error(StatusCode::SERVICE_UNAVAILABLE, "playlist not updated within 3 target durations")
                    });
                }
                () = self.shutdown.cancelled() => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Segments up to 9 complete, segment 10 being built with parts 0 and 1.
    fn position() -> LlPosition {
        LlPosition {
            last_segment: Some(9),
            building: 10,
            last_part: Some((10, 1)),
            target_duration: 2,
            part_target_secs: 0.5,
            closed: false,
        }
    }

    #[test]
    fn playlist_reloads_wait_for_what_they_name() {
        let p = position();
        assert_eq!(playlist_hold(&p, 9, None), Hold::Ready);
        assert_eq!(playlist_hold(&p, 10, None), Hold::Wait);
        assert_eq!(playlist_hold(&p, 11, None), Hold::Wait);
        assert_eq!(playlist_hold(&p, 12, None), Hold::TooFar);
        assert_eq!(playlist_hold(&p, 10, Some(1)), Hold::Ready);
        assert_eq!(playlist_hold(&p, 10, Some(2)), Hold::Wait);
        assert_eq!(playlist_hold(&p, 10, Some(4)), Hold::Wait);
        assert_eq!(playlist_hold(&p, 10, Some(5)), Hold::TooFar);
        assert_eq!(playlist_hold(&p, 11, Some(0)), Hold::Wait);
        let closed = LlPosition {
            closed: true,
            ..position()
        };
        assert_eq!(playlist_hold(&closed, 11, None), Hold::Ready);
        // Segment 10 ended with parts 0-4: part 5 of it means the next part to come.
        let ended = LlPosition {
            last_segment: Some(10),
            building: 11,
            last_part: Some((10, 4)),
            ..position()
        };
        assert_eq!(playlist_hold(&ended, 10, Some(4)), Hold::Ready);
        assert_eq!(playlist_hold(&ended, 10, Some(5)), Hold::Wait);
        assert_eq!(playlist_hold(&ended, 11, Some(0)), Hold::Wait);
        assert_eq!(playlist_hold(&ended, 10, None), Hold::Ready);
        let next = LlPosition {
            last_part: Some((11, 0)),
            ..ended
        };
        assert_eq!(playlist_hold(&next, 10, Some(5)), Hold::Ready);
    }

    #[test]
    fn a_plain_playlist_request_waits_for_the_next_part() {
        let p = position();
        assert_eq!(fresh_playlist_hold(&p, Some((10, 1))), Hold::Wait);
        assert_eq!(fresh_playlist_hold(&p, Some((10, 0))), Hold::Ready);
        let next_segment = LlPosition {
            last_part: Some((11, 0)),
            ..position()
        };
        assert_eq!(
            fresh_playlist_hold(&next_segment, Some((10, 1))),
            Hold::Ready
        );
        let closed = LlPosition {
            closed: true,
            ..position()
        };
        assert_eq!(fresh_playlist_hold(&closed, Some((10, 1))), Hold::Ready);
        assert_eq!(fresh_playlist_hold(&p, None), Hold::Ready);
    }

    #[test]
    fn hinted_parts_wait_while_they_may_come() {
        let p = position();
        assert_eq!(part_hold(&p, 10, 1), Hold::Ready);
        assert_eq!(part_hold(&p, 10, 2), Hold::Wait);
        assert_eq!(part_hold(&p, 11, 0), Hold::Wait);
        assert_eq!(part_hold(&p, 9, 7), Hold::Ready, "segment 9 ended");
        assert_eq!(part_hold(&p, 10, 9), Hold::Ready, "too far: 404");
    }

    #[test]
    fn query_directives_and_part_names() {
        let d = directives(Some("sid=4&_HLS_msn=12&_HLS_part=3&_HLS_skip=YES")).unwrap();
        assert_eq!((d.msn, d.part, d.skip), (Some(12), Some(3), true));
        let d = directives(None).unwrap();
        assert_eq!((d.msn, d.part, d.skip), (None, None, false));
        for bad in [
            "_HLS_part=2",
            "_HLS_msn=abc",
            "_HLS_msn=3&_HLS_part=x",
            "_HLS_msn=-1",
            "_HLS_msn",
        ] {
            assert!(directives(Some(bad)).is_err(), "{bad}");
        }
        assert_eq!(part_name("part_12_3.m4s"), Some((12, 3)));
        assert_eq!(part_name("part_12.m4s"), None);
        assert_eq!(part_name("seg_12.m4s"), None);
    }
}
