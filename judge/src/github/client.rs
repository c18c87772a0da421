//! Stage "report" (PR comment bot): the four GitHub calls the bot makes (list, create, update
//! and delete issue comments) over octocrab's raw requests, with our own retry loop so that
//! status codes and rate-limit headers stay visible.
//!
//! Requests go out with a path only; octocrab joins it to the base URL (keeping a GitHub
//! Enterprise `/api/v3` prefix) and adds the token. Every text that comes back from the
//! network is redacted before it can reach an error message.

use std::fmt;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use octocrab::Octocrab;
use serde::Deserialize;

use super::context::{Repo, Token};
use super::error::GithubError;
use super::retry::{Outcome, RetryPolicy, classify, has_next_page};

/// Comments per page when listing (GitHub's maximum).
const PER_PAGE: usize = 100;
/// A pull request with more comments than this many pages is not searched further.
const MAX_PAGES: u32 = 1000;
/// Headers kept from an answer: the retry rules and pagination need these.
const KEPT_HEADERS: [&str; 4] = [
    "retry-after",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "link",
];

/// One issue comment, as much of it as the bot needs.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Comment {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub html_url: Option<String>,
}

#[derive(Clone, Copy, Debug)]
enum Method {
    Get,
    Post,
    Patch,
    Delete,
}

/// One answer: status, the headers in [`KEPT_HEADERS`], the body text.
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
    }
}

/// A GitHub API client for one token and base URL.
pub struct Client {
    octo: Octocrab,
    policy: RetryPolicy,
    secret: String,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Builds a client. Must run inside a Tokio runtime (octocrab spawns its service there).
    pub fn new(api_base: &str, token: &Token, policy: RetryPolicy) -> Result<Client, GithubError> {
        let secret = token.expose().to_string();
        let setup = |e: octocrab::Error| GithubError::Setup {
            message: redact(&e, &secret),
        };
        let octo = Octocrab::builder()
            .base_uri(api_base)
            .map_err(setup)?
            .personal_token(secret.clone())
            .set_connect_timeout(Some(policy.request_timeout))
            .set_read_timeout(Some(policy.request_timeout))
            .set_write_timeout(Some(policy.request_timeout))
            .build()
            .map_err(setup)?;
        Ok(Client {
            octo,
            policy,
            secret,
        })
    }

    /// The retry policy this client was built with.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// Every comment of the pull request's conversation, following all pages in order.
    pub async fn list_comments(&self, repo: &Repo, pr: u64) -> Result<Vec<Comment>, GithubError> {
        let op = format!("listing comments on {repo}#{pr}");
        let mut all = Vec::new();
        for page in 1..=MAX_PAGES {
            let path = format!(
                "/repos/{}/{}/issues/{pr}/comments?per_page={PER_PAGE}&page={page}",
                repo.owner, repo.name
            );
            let reply = self.request(Method::Get, &path, None, &op, true).await?;
            let items: Vec<Comment> = self.decode(&reply, &op)?;
            let more = match reply.header("link") {
                Some(link) => has_next_page(Some(&link)),
                None => items.len() == PER_PAGE,
            };
            all.extend(items);
            if !more {
                return Ok(all);
            }
        }
        Err(GithubError::TooManyPages {
            op,
            pages: MAX_PAGES,
        })
    }

    /// Posts a new comment. Not retried after a 5xx or a lost answer: the caller lists first.
    pub async fn create_comment(
        &self,
        repo: &Repo,
        pr: u64,
        body: &str,
    ) -> Result<Comment, GithubError> {
        let op = format!("creating a comment on {repo}#{pr}");
        let path = format!("/repos/{}/{}/issues/{pr}/comments", repo.owner, repo.name);
        let payload = serde_json::json!({ "body": body });
        let reply = self
            .request(Method::Post, &path, Some(&payload), &op, false)
            .await?;
        self.decode(&reply, &op)
    }

    /// Replaces a comment's body (idempotent, so retried like a read).
    pub async fn update_comment(
        &self,
        repo: &Repo,
        id: u64,
        body: &str,
    ) -> Result<Comment, GithubError> {
        let op = format!("updating comment {id} on {repo}");
        let path = format!("/repos/{}/{}/issues/comments/{id}", repo.owner, repo.name);
        let payload = serde_json::json!({ "body": body });
        let reply = self
            .request(Method::Patch, &path, Some(&payload), &op, true)
            .await?;
        self.decode(&reply, &op)
    }

    /// Deletes a comment; one already gone (a concurrent run deleted it) is not an error.
    /// Idempotent, so retried like a read.
    pub async fn delete_comment(&self, repo: &Repo, id: u64) -> Result<(), GithubError> {
        let op = format!("deleting comment {id} on {repo}");
        let path = format!("/repos/{}/{}/issues/comments/{id}", repo.owner, repo.name);
        match self.request(Method::Delete, &path, None, &op, true).await {
            Ok(_) | Err(GithubError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn decode<T: serde::de::DeserializeOwned>(
        &self,
        reply: &Reply,
        op: &str,
    ) -> Result<T, GithubError> {
        serde_json::from_str(&reply.body).map_err(|e| GithubError::BadResponse {
            op: op.to_string(),
            message: self.clean(&e.to_string()),
        })
    }

    /// Sends until a final answer or the budget is spent. `retry_unsafe`: whether 5xx and lost
    /// answers may be retried (false for POST: it may have been applied).
    async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<&serde_json::Value>,
        op: &str,
        retry_unsafe: bool,
    ) -> Result<Reply, GithubError> {
        let start = Instant::now();
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let (err, wait) = match self.attempt(method, path, body).await {
                Err(message) => {
                    let err = GithubError::Transport {
                        op: op.to_string(),
                        message,
                        attempts,
                    };
                    (err, retry_unsafe.then(|| self.policy.backoff(attempts - 1)))
                }
                Ok(reply) => match classify(reply.status, &|h| reply.header(h), now_epoch()) {
                    Outcome::Success => return Ok(reply),
                    Outcome::Refused => return Err(self.refusal(&reply, op)),
                    Outcome::ServerError => {
                        let seconds = start.elapsed().as_secs_f64();
                        let err = GithubError::Server {
                            op: op.to_string(),
                            status: reply.status,
                            attempts,
                            seconds,
                        };
                        (err, retry_unsafe.then(|| self.policy.backoff(attempts - 1)))
                    }
                    Outcome::RateLimited { wait, detail } => {
                        let err = GithubError::RateLimited {
                            op: op.to_string(),
                            detail,
                        };
                        (
                            err,
                            Some(wait.unwrap_or_else(|| self.policy.backoff(attempts - 1))),
                        )
                    }
                },
            };
            match wait {
                Some(w) if start.elapsed() + w <= self.policy.budget => tokio::time::sleep(w).await,
                _ => return Err(err),
            }
        }
    }

    /// One HTTP exchange; `Err` is a transport failure (message already redacted).
    async fn attempt(
        &self,
        method: Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<Reply, String> {
        let exchange = async {
            let response = match method {
                Method::Get => self.octo._get(path).await,
                Method::Post => self.octo._post(path, body).await,
                Method::Patch => self.octo._patch(path, body).await,
                Method::Delete => self.octo._delete(path, body).await,
            }
            .map_err(|e| redact(&e, &self.secret))?;
            let status = response.status().as_u16();
            let headers = KEPT_HEADERS
                .iter()
                .filter_map(|&name| {
                    let value = response.headers().get(name)?.to_str().ok()?;
                    Some((name, value.to_string()))
                })
                .collect();
            let body = self
                .octo
                .body_to_string(response)
                .await
                .map_err(|e| redact(&e, &self.secret))?;
            Ok(Reply {
                status,
                headers,
                body,
            })
        };
        match tokio::time::timeout(self.policy.request_timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "no answer within {:?}",
                self.policy.request_timeout
            )),
        }
    }

    /// The error for a final refusal, with GitHub's own message where it gave one.
    fn refusal(&self, reply: &Reply, op: &str) -> GithubError {
        let op = op.to_string();
        let message = serde_json::from_str::<serde_json::Value>(&reply.body)
            .ok()
            .and_then(|v| {
                v.get("message")
                    .and_then(|m| m.as_str())
                    .map(|m| self.clean(m))
            })
            .unwrap_or_else(|| format!("status {}", reply.status));
        match reply.status {
            401 => GithubError::Unauthorized { op },
            403 => GithubError::Forbidden { op, message },
            404 => GithubError::NotFound { op },
            status => GithubError::Unexpected {
                op,
                status,
                message,
            },
        }
    }

    /// Network text made safe for an error message: no token, one line, bounded length.
    fn clean(&self, text: &str) -> String {
        scrub(text, &self.secret)
    }
}

/// An octocrab error as one redacted line, with its causes (octocrab's own `Display` can
/// append a backtrace on later lines).
fn redact(err: &octocrab::Error, secret: &str) -> String {
    let mut parts = Vec::new();
    let mut cur: Option<&dyn std::error::Error> = Some(err);
    while let Some(e) = cur {
        let line = e.to_string();
        let first = line.lines().next().unwrap_or_default().trim().to_string();
        if !first.is_empty() && !parts.contains(&first) {
            parts.push(first);
        }
        cur = e.source();
    }
    scrub(&parts.join(": "), secret)
}

fn scrub(text: &str, secret: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let safe = if secret.is_empty() {
        one_line
    } else {
        one_line.replace(secret, "***")
    };
    match safe.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &safe[..cut]),
        None => safe,
    }
}

fn now_epoch() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_removes_the_token_and_flattens() {
        let s = scrub("bad\ncredentials ghp_abc for ghp_abc", "ghp_abc");
        assert_eq!(s, "bad credentials *** for ***");
        let long = "x".repeat(400);
        assert_eq!(scrub(&long, "tok").chars().count(), 301);
    }

    #[tokio::test]
    async fn client_builds_with_rustls_and_system_roots() {
        let token = Token::new("t").unwrap();
        let client = Client::new("https://api.github.com", &token, RetryPolicy::default());
        assert!(client.is_ok(), "{:?}", client.err());
        let dbg = format!("{:?}", client.unwrap());
        assert!(!dbg.contains("\"t\""), "{dbg}");
    }
}
