//! What plays in a playout, whatever it is: a file or a live stream ([`Feed`]), the
//! role it has (the scheduled source or the default stream), and switching a live source
//! in at its latest place to start.

use super::file_feed::{FileFeed, FileItem};
use super::live_feed::{LiveFeed, LiveItem};
use super::output::Output;
use strom_media::frame::Frame;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Main,
    Default,
}

pub enum Feed {
    File(FileFeed),
    Live(LiveFeed),
}

pub enum Item {
    Frame { frame: Frame, restarted: bool },
    End(Option<String>),
    Down,
}

impl Feed {
    pub async fn next(&mut self) -> Item {
        match self {
            Feed::File(file) => match file.next().await {
                FileItem::Frame(frame) => Item::Frame {
                    frame,
                    restarted: false,
                },
                FileItem::End(error) => Item::End(error),
            },
            Feed::Live(live) => match live.next().await {
                LiveItem::Frame { frame, restarted } => Item::Frame { frame, restarted },
                LiveItem::Down => Item::Down,
            },
        }
    }

    /// Whether the feed is read now: the active one, and live ones waiting to take over.
    pub fn polled(&self, role: Role, active: Option<Role>) -> bool {
        match self {
            Feed::File(file) => active == Some(role) && !file.ended(),
            Feed::Live(_) => active == Some(role) || role == Role::Main || active.is_none(),
        }
    }
}

impl Feed {
    /// The feed's configuration frames.
    pub fn configs(&self) -> Vec<Frame> {
        match self {
            Feed::File(file) => file.configs(),
            Feed::Live(live) => live.configs(),
        }
    }
}

/// Whether a live source that is not playing takes over at `frame` or at a later
/// place to start that is queued already; then it began on the output, and `frame` went
/// out (or the queued frames follow from [`LiveFeed::next`]).
pub fn take_over(live: &mut LiveFeed, out: &mut Output, frame: Frame) -> bool {
    live.drain();
    if live.buffered_start() {
        out.begin(live.configs());
        return true;
    }
    if !live.starts_at(&frame) {
        live.clear_buffered();
        return false;
    }
    out.begin(live.configs());
    out.push(frame);
    true
}
