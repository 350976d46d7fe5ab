//! The `Transport` header of a SETUP (RFC 2326 12.39) and the request URIs: which
//! stream and track a URI names, and how the client wants RTP delivered.

/// How a track's RTP and RTCP reach the player.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Interleaved on the RTSP connection, RTP on the first channel, RTCP on the second.
    Tcp { rtp_channel: u8, rtcp_channel: u8 },
    /// UDP unicast to the client's RTP and RTCP ports.
    Udp { rtp_port: u16, rtcp_port: u16 },
}

/// The first transport in `header` (a comma-separated list of alternatives) that the
/// server offers: unicast TCP interleaved or UDP; `None` when none is (multicast).
/// An interleaved request without channels gets `default_channel` and the one after.
pub fn choose(header: &str, default_channel: u8) -> Option<Transport> {
    header
        .split(',')
        .find_map(|spec| one(spec.trim(), default_channel))
}

fn one(spec: &str, default_channel: u8) -> Option<Transport> {
    let mut params = spec.split(';').map(str::trim);
    let protocol = params.next()?.to_ascii_uppercase();
    let params: Vec<&str> = params.collect();
    if params.iter().any(|p| p.eq_ignore_ascii_case("multicast")) {
        return None;
    }
    let value = |name: &str| {
        params.iter().find_map(|p| {
            let (key, value) = p.split_once('=')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then_some(value.trim())
        })
    };
    match protocol.as_str() {
        "RTP/AVP/TCP" => {
            let (rtp_channel, rtcp_channel) = match value("interleaved") {
                Some(range) => pair::<u8>(range)?,
                None => (default_channel, default_channel.checked_add(1)?),
            };
            Some(Transport::Tcp {
                rtp_channel,
                rtcp_channel,
            })
        }
        "RTP/AVP" | "RTP/AVP/UDP" => {
            let (rtp_port, rtcp_port) = pair::<u16>(value("client_port")?)?;
            (rtp_port != 0).then_some(Transport::Udp {
                rtp_port,
                rtcp_port,
            })
        }
        _ => None,
    }
}

/// `a-b`, or `a` alone meaning `a-(a+1)`.
fn pair<T: std::str::FromStr + Copy + TryFrom<u32> + Into<u32>>(range: &str) -> Option<(T, T)> {
    match range.split_once('-') {
        Some((a, b)) => Some((a.trim().parse().ok()?, b.trim().parse().ok()?)),
        None => {
            let a: T = range.trim().parse().ok()?;
            let b = T::try_from(a.into().checked_add(1)?).ok()?;
            Some((a, b))
        }
    }
}

/// What a request URI names: `rtsp://host[:port]/<app>/<stream>[/trackID=<n>]` (or
/// `rtsps://`), with any query string ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub app: String,
    pub stream: String,
    pub track: Option<usize>,
}

/// The stream (and track) `uri` names; `None` when it names none.
pub fn target(uri: &str) -> Option<Target> {
    let scheme_end = uri.find("://")?;
    if !matches!(&*uri[..scheme_end].to_ascii_lowercase(), "rtsp" | "rtsps") {
        return None;
    }
    let rest = &uri[scheme_end + 3..];
    let path = rest.split_once('/').map_or("", |(_, path)| path);
    let path = path.split(['?', '#']).next().unwrap_or("");
    let mut segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let track = match segments.last().and_then(|s| s.strip_prefix("trackID=")) {
        Some(n) => {
            let n = n.parse().ok()?;
            segments.pop();
            Some(n)
        }
        None => None,
    };
    let [app, stream] = segments.as_slice() else {
        return None;
    };
    strom_ipc::names::check_pair(app, stream).ok()?;
    Some(Target {
        app: (*app).to_owned(),
        stream: (*stream).to_owned(),
        track,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transports_are_chosen_from_the_alternatives() {
        assert_eq!(
            choose("RTP/AVP/TCP;unicast;interleaved=2-3", 0),
            Some(Transport::Tcp {
                rtp_channel: 2,
                rtcp_channel: 3
            })
        );
        assert_eq!(
            choose(
                "RTP/AVP;multicast, RTP/AVP;unicast;client_port=5000-5001",
                0
            ),
            Some(Transport::Udp {
                rtp_port: 5000,
                rtcp_port: 5001
            })
        );
        assert_eq!(
            choose("RTP/AVP/TCP;unicast", 4),
            Some(Transport::Tcp {
                rtp_channel: 4,
                rtcp_channel: 5
            })
        );
        assert_eq!(
            choose("RTP/AVP/UDP;unicast;client_port=6000", 0),
            Some(Transport::Udp {
                rtp_port: 6000,
                rtcp_port: 6001
            })
        );
        assert_eq!(choose("RTP/AVP;unicast", 0), None, "UDP needs client ports");
        assert_eq!(choose("RTP/AVP/TCP;interleaved=255", 0), None);
        assert_eq!(choose("RAW/RAW/UDP;unicast;client_port=1-2", 0), None);
        assert_eq!(choose("", 0), None);
    }

    #[test]
    fn uris_name_a_stream_and_a_track() {
        assert_eq!(
            target("rtsp://127.0.0.1:8554/live/cam/trackID=1"),
            Some(Target {
                app: "live".into(),
                stream: "cam".into(),
                track: Some(1)
            })
        );
        assert_eq!(
            target("rtsp://host/live/cam?token=x"),
            Some(Target {
                app: "live".into(),
                stream: "cam".into(),
                track: None
            })
        );
        assert_eq!(
            target("rtsps://host:322/live/cam"),
            target("RTSP://host/live/cam"),
            "rtsps:// names streams the same way"
        );
        assert!(target("rtsps://host/live/cam").is_some());
        assert_eq!(target("rtsp://host/live"), None);
        assert_eq!(target("rtsp://host/a/b/c"), None);
        assert_eq!(target("http://host/live/cam"), None);
        assert_eq!(target("rtsp://host/live/cam/trackID=x"), None);
        assert_eq!(target("rtsp://host/live/.."), None);
    }
}
