//! Stage "report": the sticky pull-request comment bot (octocrab, with our own retries).
//!
//! `context` resolves where the comment goes, `body` frames and limits it, `client` talks to
//! GitHub, `sticky` finds and creates-or-updates the one comment per pull request and key.

pub mod body;
pub(crate) mod client;
pub mod context;
pub(crate) mod error;
pub(crate) mod retry;
pub(crate) mod sticky;

pub use body::{MAX_COMMENT_BYTES, compose, marker};
pub use client::{Client, Comment};
pub use context::{Repo, Token};
pub use error::GithubError;
pub use retry::RetryPolicy;
pub use sticky::{Action, upsert};
