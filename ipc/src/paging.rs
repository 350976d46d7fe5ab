//! Paged session lists: how a worker answers [`WorkerRequest::ListSessionsPage`].
//!
//! A worker may hold hundreds of thousands of sessions (HLS viewers); one reply with all
//! of them would be tens of MiB. The supervisor asks for a page at a time, each page the
//! sessions with ids above the last one it got, ascending, bounded both in count and in
//! bytes, so a reply stays far below the frame limit and the supervisor's memory per
//! answer stays small. Sessions that come and go between pages are seen or not, but no
//! session is listed twice.
//!
//! [`WorkerRequest::ListSessionsPage`]: crate::messages::WorkerRequest::ListSessionsPage

use crate::messages::WorkerReply;
use crate::status::SessionInfo;

/// Most sessions one page holds, whatever the request asks.
pub const MAX_PAGE_SESSIONS: u32 = 2_000;
/// A page stops growing once its sessions take about this many bytes.
pub const PAGE_BYTES: usize = 1024 * 1024;

/// Roughly the encoded size of `session` (strings plus fixed fields).
pub fn approximate_size(session: &SessionInfo) -> usize {
    64 + session.app.len()
        + session.stream.len()
        + session.protocol.len()
        + session.client_ip.len()
        + session.user_agent.len()
        + session.ppv_id.as_ref().map_or(0, String::len)
}

/// Builds the page of `entries` (each with its session id) after `after_id`: ascending
/// ids, at most `limit` (1 to [`MAX_PAGE_SESSIONS`]) and about [`PAGE_BYTES`]. Only the
/// entries on the page are rendered, so a worker can pass cheap references.
pub fn sessions_page<E>(
    entries: impl IntoIterator<Item = (u64, E)>,
    after_id: u64,
    limit: u32,
    mut render: impl FnMut(E) -> SessionInfo,
) -> WorkerReply {
    let limit = limit.clamp(1, MAX_PAGE_SESSIONS) as usize;
    let mut candidates: Vec<(u64, E)> = entries
        .into_iter()
        .filter(|(id, _)| *id > after_id)
        .collect();
    let mut more = false;
    if candidates.len() > limit {
        // The `limit` smallest ids end up in front, in no particular order.
        candidates.select_nth_unstable_by_key(limit, |(id, _)| *id);
        candidates.truncate(limit);
        more = true;
    }
    candidates.sort_unstable_by_key(|(id, _)| *id);
    let mut sessions = Vec::with_capacity(candidates.len());
    let mut bytes = 0;
    for (_, entry) in candidates {
        if bytes >= PAGE_BYTES {
            more = true;
            break;
        }
        let session = render(entry);
        bytes += approximate_size(&session);
        sessions.push(session);
    }
    WorkerReply::SessionsPage { sessions, more }
}

/// One page from two pages of sessions after the same id (a worker's tables, or the gate's
/// registry and a worker's own): ascending, at most `limit`. A source with more to give
/// bounds the page at its last id, so that none of its sessions is skipped by the next
/// page. A reply that is not a page (a failure) is the answer.
pub fn merge_pages(ours: WorkerReply, theirs: WorkerReply, limit: u32) -> WorkerReply {
    let WorkerReply::SessionsPage {
        sessions: theirs,
        more: theirs_more,
    } = theirs
    else {
        // The worker's failure is the answer: a page without its sessions would be wrong.
        return theirs;
    };
    let WorkerReply::SessionsPage {
        sessions: mut merged,
        more: ours_more,
    } = ours
    else {
        return ours;
    };
    let bound = |page: &[SessionInfo], more: bool| more.then(|| page.last().map_or(0, |s| s.id));
    let cut = [bound(&merged, ours_more), bound(&theirs, theirs_more)]
        .into_iter()
        .flatten()
        .min();
    merged.extend(theirs);
    merged.sort_by_key(|s| s.id);
    let mut more = ours_more || theirs_more;
    if let Some(cut) = cut {
        merged.retain(|s| s.id <= cut);
    }
    let limit = limit.clamp(1, MAX_PAGE_SESSIONS) as usize;
    if merged.len() > limit {
        merged.truncate(limit);
        more = true;
    }
    WorkerReply::SessionsPage {
        sessions: merged,
        more,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: u64, user_agent_len: usize) -> SessionInfo {
        SessionInfo {
            id,
            app: "live".into(),
            stream: "cam".into(),
            protocol: "HLS".into(),
            bytes_recv: 0,
            bytes_sent: 0,
            created: 0,
            last_access: 0,
            client_ip: "127.0.0.1".into(),
            user_agent: "u".repeat(user_agent_len),
            ppv_id: None,
            dropped_frames: None,
        }
    }

    fn page(ids: &[u64], after: u64, limit: u32, ua: usize) -> (Vec<u64>, bool) {
        let entries = ids.iter().map(|&id| (id, id));
        match sessions_page(entries, after, limit, |id| session(id, ua)) {
            WorkerReply::SessionsPage { sessions, more } => {
                (sessions.iter().map(|s| s.id).collect(), more)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn pages_walk_every_id_once_in_order() {
        let ids: Vec<u64> = (1..=10).rev().collect();
        assert_eq!(page(&ids, 0, 4, 0), (vec![1, 2, 3, 4], true));
        assert_eq!(page(&ids, 4, 4, 0), (vec![5, 6, 7, 8], true));
        assert_eq!(page(&ids, 8, 4, 0), (vec![9, 10], false));
        assert_eq!(page(&ids, 10, 4, 0), (vec![], false));
        assert_eq!(page(&ids, 0, 10, 0), ((1..=10).collect(), false));
        // A zero limit still makes progress; a huge one is capped.
        assert_eq!(page(&ids, 0, 0, 0), (vec![1], true));
        let many: Vec<u64> = (1..=5_000).collect();
        let (first, more) = page(&many, 0, u32::MAX, 0);
        assert_eq!((first.len(), more), (MAX_PAGE_SESSIONS as usize, true));
    }

    #[test]
    fn pages_are_bounded_in_bytes() {
        let ids: Vec<u64> = (1..=100).collect();
        // 100 sessions of 64 KiB user agents: a page holds about PAGE_BYTES of them.
        let (first, more) = page(&ids, 0, 100, 64 * 1024);
        assert!(more);
        assert_eq!(first.len(), 16);
        let (second, _) = page(&ids, *first.last().unwrap(), 100, 64 * 1024);
        assert_eq!(second.first(), Some(&17));
    }

    /// 200,000 sessions (the packager's most) walked page by page: every page encodes
    /// far below the frame limit.
    #[test]
    fn the_largest_session_table_pages_far_below_the_frame_limit() {
        let ids: Vec<u64> = (1..=200_000).collect();
        let (mut after, mut pages, mut seen) = (0, 0, 0);
        loop {
            let entries = ids.iter().map(|&id| (id, id));
            let reply = sessions_page(entries, after, MAX_PAGE_SESSIONS, |id| session(id, 200));
            let frame = crate::frame::encode(&reply, 0).unwrap();
            assert!(frame.len() < crate::frame::MAX_FRAME_SIZE / 8);
            let WorkerReply::SessionsPage { sessions, more } = reply else {
                unreachable!()
            };
            pages += 1;
            seen += sessions.len();
            after = sessions.last().map_or(after, |s| s.id);
            if !more {
                break;
            }
        }
        assert_eq!(seen, 200_000);
        assert_eq!(pages, 100);
    }
}
