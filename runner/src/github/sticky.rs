//! Stage "report" (PR comment bot): one comment per pull request and key, created once and
//! updated on every later run.
//!
//! The comment is found by its hidden marker on any page of the conversation. A create whose
//! answer was lost (5xx or no answer after sending) may still have been applied, so the next
//! attempt lists again before it creates: there is never a second comment for one key.

use super::body::{is_sticky, marker, validate_key};
use super::client::{Client, Comment};
use super::context::Repo;
use super::error::GithubError;

/// What `upsert` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// A new comment was posted.
    Created { id: u64, url: Option<String> },
    /// The existing comment got the new body.
    Updated { id: u64, url: Option<String> },
    /// The existing comment already had this exact body; nothing was sent.
    Unchanged { id: u64, url: Option<String> },
    /// `--only-on-change`, everything passed and there was no comment: nothing was posted.
    Skipped,
}

impl Action {
    /// One line for the log, e.g. `updated comment 12 (https://...)`.
    pub fn describe(&self) -> String {
        let (verb, id, url) = match self {
            Action::Created { id, url } => ("created", id, url),
            Action::Updated { id, url } => ("updated", id, url),
            Action::Unchanged { id, url } => ("left unchanged", id, url),
            Action::Skipped => {
                return "posted nothing: every job passed and no comment exists yet \
                        (--only-on-change)"
                    .to_string();
            }
        };
        match url {
            Some(u) => format!("{verb} comment {id} ({u})"),
            None => format!("{verb} comment {id}"),
        }
    }
}

/// Creates or updates the sticky comment for `key` on pull request `pr`.
///
/// `body` is the finished comment ([`super::body::compose`]); the marker is put in front
/// when it is missing. With `only_on_change`, a run where `all_passed` posts nothing new,
/// but an existing comment is still updated so it no longer shows an old failure.
pub async fn upsert(
    client: &Client,
    repo: &Repo,
    pr: u64,
    key: &str,
    body: &str,
    only_on_change: bool,
    all_passed: bool,
) -> Result<Action, GithubError> {
    validate_key(key)?;
    let body = if is_sticky(body, key) {
        body.to_string()
    } else {
        format!("{}\n{body}", marker(key))
    };
    let attempts = client.policy().create_attempts.max(1);
    let mut sent_blind = false;
    let mut attempt = 0;
    loop {
        if let Some(existing) = find(client, repo, pr, key).await? {
            return update(client, repo, existing, &body, sent_blind).await;
        }
        if only_on_change && all_passed && !sent_blind {
            return Ok(Action::Skipped);
        }
        match client.create_comment(repo, pr, &body).await {
            Ok(c) => {
                return Ok(Action::Created {
                    id: c.id,
                    url: c.html_url,
                });
            }
            Err(e) if e.maybe_applied() && attempt + 1 < attempts => {
                sent_blind = true;
                tokio::time::sleep(client.policy().backoff(attempt)).await;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The oldest comment carrying the marker for `key`, over all pages.
async fn find(
    client: &Client,
    repo: &Repo,
    pr: u64,
    key: &str,
) -> Result<Option<Comment>, GithubError> {
    let comments = client.list_comments(repo, pr).await?;
    Ok(comments
        .into_iter()
        .find(|c| c.body.as_deref().is_some_and(|b| is_sticky(b, key))))
}

/// Brings an existing comment to `body`. `sent_blind`: an earlier create of ours may be this
/// very comment, so an identical body means "created".
async fn update(
    client: &Client,
    repo: &Repo,
    existing: Comment,
    body: &str,
    sent_blind: bool,
) -> Result<Action, GithubError> {
    if existing.body.as_deref() == Some(body) {
        let (id, url) = (existing.id, existing.html_url);
        return Ok(if sent_blind {
            Action::Created { id, url }
        } else {
            Action::Unchanged { id, url }
        });
    }
    let c = client.update_comment(repo, existing.id, body).await?;
    Ok(Action::Updated {
        id: c.id,
        url: c.html_url,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_describe_themselves() {
        let a = Action::Updated {
            id: 5,
            url: Some("https://x/5".into()),
        };
        assert_eq!(a.describe(), "updated comment 5 (https://x/5)");
        assert_eq!(
            Action::Created { id: 1, url: None }.describe(),
            "created comment 1"
        );
        assert!(Action::Skipped.describe().contains("--only-on-change"));
    }
}
