//! Passwords out of error messages: a refused rules file quotes the URL it refuses
//! (`RtmpPullSources[0].url: expected ..., got "rtsp://admin:hunter2@cam/..."`), and the
//! message travels to the log and to the management API's answer, where a password has
//! no business. Every `scheme://user:password@host` in a message becomes
//! `scheme://user:***@host`.
//!
//! Only `std`: the fuzz target `config_files` compiles this module by path.

/// `text` with the password of every URL's userinfo replaced by `***`.
pub fn redact_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        // `icecast://hackme@host`: a userinfo without ':' is the password alone there.
        let icecast = before.to_ascii_lowercase().ends_with("icecast://");
        // The authority ends where a path, query, fragment, quote or space starts.
        let end = after
            .find(|c: char| {
                matches!(c, '/' | '?' | '#' | '"' | '\'' | '\\' | '`') || c.is_whitespace()
            })
            .unwrap_or(after.len());
        let authority = &after[..end];
        match authority.rfind('@') {
            // Brackets never appear in a userinfo: this is a template such as
            // `rtsp://[user:pass@]host`, not a URL.
            Some(at) if !authority[..at].contains(['[', ']']) => {
                let userinfo = &authority[..at];
                match userinfo.split_once(':') {
                    Some((user, _password)) => {
                        out.push_str(user);
                        out.push_str(":***");
                    }
                    None if icecast => out.push_str("***"),
                    None => out.push_str(userinfo),
                }
                out.push_str(&authority[at..]);
            }
            _ => out.push_str(authority),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_starred_and_the_rest_kept() {
        assert_eq!(
            redact_passwords(r#"got "rtsp://admin:hunter2@192.0.2.1:554/Streaming/101": bad port"#),
            r#"got "rtsp://admin:***@192.0.2.1:554/Streaming/101": bad port"#
        );
        assert_eq!(
            redact_passwords("a rtmp://u:p@h/x and srt://h:9000?passphrase=x and rtsp://u@h/"),
            "a rtmp://u:***@h/x and srt://h:9000?passphrase=x and rtsp://u@h/"
        );
        // A password with '@' or ':' in it (unencoded): all of it goes.
        assert_eq!(
            redact_passwords("rtsp://u:p@ss:w@h:554"),
            "rtsp://u:***@h:554"
        );
        assert_eq!(redact_passwords("no url here"), "no url here");
        assert_eq!(
            redact_passwords("icecast://hackme@h/r"),
            "icecast://***@h/r"
        );
        let template = "expected icecast://[user:]password@host[:port]/mount";
        assert_eq!(redact_passwords(template), template);
        assert_eq!(redact_passwords("ends with ://"), "ends with ://");
    }
}
