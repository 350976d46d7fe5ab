//! `GET /admin/metadata?mount=/<app>/<stream>&mode=updinfo&song=...` on the delivery
//! port: the title update Icecast encoders send beside their audio, with the source's
//! own credentials. Answered as Icecast 2.4 answers it (`<iceresponse>` XML).

use super::Sources;
use super::answer::authorized;
use strom_ipc::rules::Rules;
use strom_stream::StreamKey;

/// The longest query accepted.
const MAX_QUERY_BYTES: usize = 4096;

/// A title update to carry out, or the answer that refuses it.
#[derive(Debug, PartialEq, Eq)]
pub enum Update {
    Title {
        key: StreamKey,
        song: String,
        url: String,
    },
    Refused {
        status: u16,
        message: &'static str,
    },
}

impl Update {
    /// Reads the request: the query and the `Authorization` header.
    pub fn read(
        sources: &Sources,
        rules: &Rules,
        query: &str,
        authorization: Option<&str>,
    ) -> Self {
        let refused = |status, message| Update::Refused { status, message };
        if query.len() > MAX_QUERY_BYTES {
            return refused(400, "Query too long");
        }
        let (mut mount, mut mode, mut song, mut url) = (None, None, None, String::new());
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            match &*name {
                "mount" => mount = Some(value.into_owned()),
                "mode" => mode = Some(value.into_owned()),
                "song" => song = Some(value.into_owned()),
                "url" => url = value.into_owned(),
                _ => {}
            }
        }
        let Some(key) = mount.as_deref().and_then(super::mount_key) else {
            return refused(400, "No such mountpoint");
        };
        let Some(entry) = rules.icecast_source_for(&key.app, &key.stream) else {
            return refused(401, "Authentication required");
        };
        if !authorized(authorization, entry) {
            return refused(401, "Authentication required");
        }
        if mode.as_deref() != Some("updinfo") {
            return refused(400, "No such mode");
        }
        let Some(song) = song else {
            return refused(400, "No song given");
        };
        if sources.of_stream(&key).is_none() {
            return refused(400, "Source does not exist");
        }
        Update::Title { key, song, url }
    }
}

/// Icecast's XML answer.
pub fn iceresponse(message: &str, ok: bool) -> String {
    format!(
        "<?xml version=\"1.0\"?>\n<iceresponse><message>{message}</message><return>{}</return></iceresponse>\n",
        u8::from(ok)
    )
}
