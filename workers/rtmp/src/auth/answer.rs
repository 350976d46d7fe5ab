//! The publish handler's answer (`{"PublishAuthResponse":[{"seq":..,"status":..}]}`, see
//! [`super::handler`]), read sans-io: whatever the handler's HTTP server sends is
//! untrusted bytes. Uses only `serde` and `serde_json`: the fuzz target `client_replies`
//! compiles this file by path.

use serde::Deserialize;

/// The largest answer read from the handler.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

#[derive(Deserialize)]
struct Answer {
    #[serde(rename = "PublishAuthResponse")]
    items: Vec<AnswerItem>,
}

#[derive(Deserialize)]
struct AnswerItem {
    seq: u64,
    status: String,
}

/// `Ok(())` when `answer` approves the request numbered `seq`; the error says why not.
pub fn verdict(answer: &[u8], seq: u64) -> Result<(), String> {
    let answer: Answer = serde_json::from_slice(answer)
        .map_err(|e| format!("handler answer not understood: {e}"))?;
    match answer.items.iter().find(|item| item.seq == seq) {
        Some(item) if item.status == "success" => Ok(()),
        Some(item) => Err(format!("handler said {:?}", item.status)),
        None => Err("handler answer lacks our seq".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::verdict;

    #[test]
    fn only_success_for_our_seq_approves() {
        let answer =
            br#"{"PublishAuthResponse":[{"seq":6,"status":"fail"},{"seq":7,"status":"success"}]}"#;
        assert_eq!(verdict(answer, 7), Ok(()));
        assert!(verdict(answer, 6).unwrap_err().contains("fail"));
        assert!(verdict(answer, 8).unwrap_err().contains("lacks our seq"));
        assert!(verdict(b"{}", 7).is_err());
        assert!(verdict(b"\xff", 7).is_err());
    }
}
