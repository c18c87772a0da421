//! Stage "report" (PR comment bot): what can go wrong while talking to GitHub, and the exit
//! code each failure maps to.
//!
//! No variant ever holds the token: text that comes back from the network goes through
//! [`crate::github::client`]'s redaction before it lands here.

use std::path::PathBuf;

/// The permission the bot needs, named by every "GitHub said no" error.
const WRITE_PERMISSION: &str = "`permissions: pull-requests: write` (or `issues: write`)";

/// Errors of the PR comment bot.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum GithubError {
    #[error("GITHUB_TOKEN is not set")]
    #[diagnostic(help(
        "pass the token in the step's environment: `env: GITHUB_TOKEN: ${{{{ secrets.GITHUB_TOKEN }}}}`, \
         or use --dry-run to print the comment"
    ))]
    MissingToken,

    #[error("GITHUB_TOKEN holds characters that cannot go into an HTTP header")]
    #[diagnostic(help(
        "the token must be printable ASCII without spaces; check how it is exported"
    ))]
    BadToken,

    #[error("no repository given")]
    #[diagnostic(help("pass --repo OWNER/NAME or set GITHUB_REPOSITORY"))]
    MissingRepo,

    #[error("repository `{0}` is not of the form OWNER/NAME")]
    #[diagnostic(help("for example --repo goldgate/goldgate"))]
    BadRepo(String),

    #[error("comment key `{0}` is not allowed")]
    #[diagnostic(help(
        "a key is 1 to 100 characters of letters, digits and `._:/+-`, without `--`"
    ))]
    BadKey(String),

    #[error("API base `{url}` is not an http(s) URL")]
    #[diagnostic(help("GITHUB_API_URL looks like https://api.github.com or https://HOST/api/v3"))]
    BadApiUrl { url: String },

    #[error("no pull request number given")]
    #[diagnostic(help(
        "pass --pr N, or run inside a pull_request, issue_comment or workflow_run event \
         (GITHUB_EVENT_PATH)"
    ))]
    MissingPr,

    #[error("cannot read the event file {}", path.display())]
    EventRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{}:{line}:{column}: the event file is not valid JSON: {message}", path.display())]
    EventJson {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },

    #[error("the event in {} names no pull request", path.display())]
    #[diagnostic(help(
        "expected `pull_request.number`, `issue.number` or `workflow_run.pull_requests[0].number`; \
         a workflow_run from a fork lists no pull request, so pass --pr N there"
    ))]
    EventWithoutPr { path: PathBuf },

    #[error("cannot set up the HTTP client: {message}")]
    #[diagnostic(help(
        "TLS needs the system's CA certificates (Debian/Ubuntu: `ca-certificates`)"
    ))]
    Setup { message: String },

    #[error("GitHub refused the token (401 Unauthorized) while {op}")]
    #[diagnostic(help(
        "the token is missing, expired or revoked; the job needs GITHUB_TOKEN with {WRITE_PERMISSION}"
    ))]
    Unauthorized { op: String },

    #[error("GitHub denied access (403 Forbidden) while {op}: {message}")]
    #[diagnostic(help(
        "give the job {WRITE_PERMISSION}; a pull request from a fork gets a read-only token, \
         so comment from a separate `workflow_run` workflow"
    ))]
    Forbidden { op: String, message: String },

    #[error("GitHub answered 404 Not Found while {op}")]
    #[diagnostic(help(
        "check the repository and pull request number; on a private repository a token \
         without {WRITE_PERMISSION} also gets 404"
    ))]
    NotFound { op: String },

    #[error("GitHub's rate limit stopped {op} ({detail})")]
    #[diagnostic(help("wait for the limit to reset and re-run the job"))]
    RateLimited { op: String, detail: String },

    #[error("GitHub answered {status} while {op} ({attempts} attempt(s) over {seconds:.1}s)")]
    #[diagnostic(help("GitHub may be degraded (https://www.githubstatus.com); re-run the job"))]
    Server {
        op: String,
        status: u16,
        attempts: u32,
        seconds: f64,
    },

    #[error("no answer from GitHub while {op}: {message} ({attempts} attempt(s))")]
    #[diagnostic(help("check the runner's network and GITHUB_API_URL"))]
    Transport {
        op: String,
        message: String,
        attempts: u32,
    },

    #[error("GitHub answered {status} while {op}: {message}")]
    Unexpected {
        op: String,
        status: u16,
        message: String,
    },

    #[error("GitHub's answer to {op} is not what the API documents: {message}")]
    BadResponse { op: String, message: String },

    #[error("the comments of {op} span more than {pages} pages")]
    TooManyPages { op: String, pages: u32 },
}

impl GithubError {
    /// Whether the request may have reached GitHub although no answer says so: a 5xx or a
    /// lost connection after sending. A create that fails like this must list before retrying.
    pub fn maybe_applied(&self) -> bool {
        matches!(
            self,
            GithubError::Server { .. } | GithubError::Transport { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lost_answers_may_have_been_applied() {
        let op = String::from("creating");
        let server = GithubError::Server {
            op: op.clone(),
            status: 502,
            attempts: 1,
            seconds: 0.0,
        };
        assert!(server.maybe_applied());
        assert!(
            !GithubError::Forbidden {
                op,
                message: String::new()
            }
            .maybe_applied()
        );
    }
}
