//! Stage "report" (PR comment bot): one comment per pull request and key, created once and
//! updated on every later run.
//!
//! The comment is found by its hidden marker on any page of the conversation. A create whose
//! answer was lost (5xx or no answer after sending) may still have been applied, so the next
//! attempt lists again before it creates. Two runs that comment at the same moment (two
//! workflows of one push) may both create one; each lists again after its create, and the
//! oldest sticky comment of the key is the one kept: the newer is deleted and the oldest gets
//! the body. Stickies left over from an earlier race are deleted the same way when found.

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
        let mut stickies = find(client, repo, pr, key).await?;
        if !stickies.is_empty() {
            let existing = stickies.remove(0);
            delete_all(client, repo, &stickies).await?;
            return update(client, repo, existing, &body, sent_blind).await;
        }
        if only_on_change && all_passed && !sent_blind {
            return Ok(Action::Skipped);
        }
        match client.create_comment(repo, pr, &body).await {
            Ok(c) => return converge(client, repo, pr, key, c, &body).await,
            Err(e) if e.maybe_applied() && attempt + 1 < attempts => {
                sent_blind = true;
                tokio::time::sleep(client.policy().backoff(attempt)).await;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Every comment carrying the marker for `key`, over all pages, oldest (lowest id) first.
async fn find(
    client: &Client,
    repo: &Repo,
    pr: u64,
    key: &str,
) -> Result<Vec<Comment>, GithubError> {
    let mut found: Vec<Comment> = client
        .list_comments(repo, pr)
        .await?
        .into_iter()
        .filter(|c| c.body.as_deref().is_some_and(|b| is_sticky(b, key)))
        .collect();
    found.sort_by_key(|c| c.id);
    Ok(found)
}

/// After our create: lists again and keeps the oldest sticky. When a concurrent run created
/// one first, ours is deleted and theirs gets our body; newer duplicates are deleted.
async fn converge(
    client: &Client,
    repo: &Repo,
    pr: u64,
    key: &str,
    created: Comment,
    body: &str,
) -> Result<Action, GithubError> {
    let mut stickies = find(client, repo, pr, key).await?;
    // The list may not show our own comment yet; it is a sticky all the same.
    if !stickies.iter().any(|c| c.id == created.id) {
        stickies.push(created.clone());
        stickies.sort_by_key(|c| c.id);
    }
    let oldest = stickies.remove(0);
    delete_all(client, repo, &stickies).await?;
    if oldest.id == created.id {
        return Ok(Action::Created {
            id: created.id,
            url: created.html_url,
        });
    }
    update(client, repo, oldest, body, false).await
}

/// Deletes duplicate stickies (a concurrent run may delete them too).
async fn delete_all(client: &Client, repo: &Repo, dups: &[Comment]) -> Result<(), GithubError> {
    for dup in dups {
        client.delete_comment(repo, dup.id).await?;
    }
    Ok(())
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
