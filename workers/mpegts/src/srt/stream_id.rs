//! SRT `streamid`s in the access-control syntax (`#!::r=app/stream,m=publish` for
//! contributors, `m=request` for viewers): which stream a caller asks for.

use strom_stream::StreamKey;

/// `text` percent-decoded (ffmpeg sends the `streamid` of its URL without decoding it).
fn percent_decoded(text: &str) -> String {
    strom_worker_runtime::play_signature::percent_decode(text)
}

/// The value of key `key` in an access-control `streamid` (`#!::r=...,s=...`), if any.
pub fn value(stream_id: &str, key: &str) -> Option<String> {
    let decoded = percent_decoded(stream_id);
    let body = decoded.strip_prefix("#!::")?;
    body.split(',')
        .find_map(|pair| pair.split_once('=').filter(|(k, _)| *k == key))
        .map(|(_, v)| v.to_owned())
}

/// The stream a caller asks for with `streamid`: `#!::r=app/stream,m=<mode>` (keys in
/// any order; `m` defaults to `mode`; percent-encoded accepted). `None` when it names
/// none; `Err` for another mode or a bad name.
pub fn requested(stream_id: &str, mode: &str) -> Result<Option<StreamKey>, String> {
    let decoded = percent_decoded(stream_id);
    let Some(body) = decoded.strip_prefix("#!::") else {
        return Ok(None);
    };
    let mut resource = None;
    for pair in body.split(',') {
        match pair.split_once('=') {
            Some(("r", value)) => resource = Some(value),
            Some(("m", asked)) if asked == mode => {}
            None => {}
            Some(("m", asked)) => return Err(format!("mode {asked} is not served here")),
            Some(_) => {}
        }
    }
    let Some(resource) = resource else {
        return Ok(None);
    };
    let (app, stream) = resource
        .split_once('/')
        .ok_or_else(|| format!("resource {resource:?} is not app/stream"))?;
    strom_ipc::names::check_pair(app, stream).map_err(|e| e.to_string())?;
    Ok(Some(StreamKey::new(app, stream)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_ids_name_the_stream_or_leave_it_to_the_entry_in_their_mode() {
        assert_eq!(
            requested("#!::r=live/cam,m=publish", "publish"),
            Ok(Some(StreamKey::new("live", "cam")))
        );
        assert_eq!(
            requested("#!::m=publish,r=live/cam2", "publish"),
            Ok(Some(StreamKey::new("live", "cam2")))
        );
        assert_eq!(
            requested("%23%21%3A%3Ar%3Dlive%2Fcam%2Cm%3Dpublish", "publish"),
            Ok(Some(StreamKey::new("live", "cam"))),
            "as ffmpeg sends it from its URL"
        );
        assert_eq!(requested("%zz", "publish"), Ok(None));
        assert_eq!(requested("", "publish"), Ok(None));
        assert_eq!(requested("plain-name", "publish"), Ok(None));
        assert_eq!(requested("#!::u=alice", "publish"), Ok(None));
        assert!(requested("#!::r=live/cam,m=request", "publish").is_err());
        assert!(requested("#!::r=../etc", "publish").is_err());
        assert_eq!(
            requested("#!::r=live/tv,m=request", "request"),
            Ok(Some(StreamKey::new("live", "tv")))
        );
        assert!(requested("#!::r=live/tv,m=publish", "request").is_err());
        assert_eq!(
            value("#!::r=live/tv,m=request,s=c2VydmVy==", "s").as_deref(),
            Some("c2VydmVy==")
        );
        assert_eq!(value("#!::r=live/tv", "s"), None);
        assert!(requested("#!::r=live/../../x", "publish").is_err());
    }
}
