//! Stage "report" (PR comment bot): where the comment goes, from flags and GitHub Actions'
//! environment (`GITHUB_TOKEN`, `GITHUB_API_URL`, `GITHUB_REPOSITORY`, `GITHUB_EVENT_PATH`,
//! `GITHUB_SERVER_URL`, `GITHUB_RUN_ID`).
//!
//! Every function takes the environment as a lookup closure so tests need not touch the
//! process environment.

use std::fmt;
use std::path::{Path, PathBuf};

use super::error::GithubError;

/// GitHub's API base when `GITHUB_API_URL` is not set.
const DEFAULT_API_URL: &str = "https://api.github.com";

/// A GitHub token. It has no `Display` and its `Debug` hides the value, so it cannot end up
/// in output by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Validates a token: printable ASCII without spaces (surrounding whitespace is trimmed,
    /// since tokens read from files often end in a newline).
    pub fn new(raw: &str) -> Result<Token, GithubError> {
        let t = raw.trim();
        if t.is_empty() {
            return Err(GithubError::MissingToken);
        }
        if !t.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(GithubError::BadToken);
        }
        Ok(Token(t.to_string()))
    }

    /// The secret itself, for the HTTP client and for redaction only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

/// A repository, `OWNER/NAME`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repo {
    pub owner: String,
    pub name: String,
}

impl Repo {
    /// Parses `OWNER/NAME`; both parts are GitHub's name characters (letters, digits, `-_.`).
    pub fn parse(text: &str) -> Result<Repo, GithubError> {
        let bad = || GithubError::BadRepo(text.to_string());
        let (owner, name) = text.split_once('/').ok_or_else(bad)?;
        let ok = |s: &str| {
            !s.is_empty()
                && s.len() <= 100
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        };
        if !ok(owner) || !ok(name) || name == "." || name == ".." {
            return Err(bad());
        }
        Ok(Repo {
            owner: owner.to_string(),
            name: name.to_string(),
        })
    }
}

impl fmt::Display for Repo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// The API base URL, from `GITHUB_API_URL` or the public default. A path prefix
/// (GitHub Enterprise Server's `/api/v3`) is kept; a trailing slash is dropped.
pub fn api_base(env: &dyn Fn(&str) -> Option<String>) -> Result<String, GithubError> {
    let url = env("GITHUB_API_URL")
        .map(|u| u.trim().to_string())
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| DEFAULT_API_URL.to_string());
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    match rest {
        Some(r) if !r.is_empty() && !r.starts_with('/') && !url.contains(['?', '#', ' ']) => {
            Ok(url.trim_end_matches('/').to_string())
        }
        _ => Err(GithubError::BadApiUrl { url }),
    }
}

/// The token from `GITHUB_TOKEN`.
pub fn token(env: &dyn Fn(&str) -> Option<String>) -> Result<Token, GithubError> {
    Token::new(&env("GITHUB_TOKEN").ok_or(GithubError::MissingToken)?)
}

/// The repository: the flag, else `GITHUB_REPOSITORY`.
pub fn repo(flag: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> Result<Repo, GithubError> {
    match flag
        .map(str::to_string)
        .or_else(|| env("GITHUB_REPOSITORY"))
    {
        Some(r) => Repo::parse(r.trim()),
        None => Err(GithubError::MissingRepo),
    }
}

/// The pull request: the flag, else the number in the event file at `GITHUB_EVENT_PATH`.
pub fn pr_number(
    flag: Option<u64>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<u64, GithubError> {
    if let Some(n) = flag {
        return Ok(n);
    }
    match env("GITHUB_EVENT_PATH").filter(|p| !p.is_empty()) {
        Some(path) => pr_from_event_file(Path::new(&path)),
        None => Err(GithubError::MissingPr),
    }
}

/// Reads the pull request number out of a GitHub Actions event payload:
/// `pull_request.number`, else `issue.number` (issue_comment on a PR), else
/// `workflow_run.pull_requests[0].number`.
fn pr_from_event_file(path: &Path) -> Result<u64, GithubError> {
    // GitHub's event payloads are at most a few MiB.
    let text = goldgate_core::fsio::read_text(path, 64 << 20).map_err(|source| {
        GithubError::EventRead {
            path: path.to_path_buf(),
            source,
        }
    })?;
    let event: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| GithubError::EventJson {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
    let candidates = [
        event.pointer("/pull_request/number"),
        event.pointer("/issue/number"),
        event.pointer("/workflow_run/pull_requests/0/number"),
    ];
    candidates
        .into_iter()
        .flatten()
        .find_map(serde_json::Value::as_u64)
        .filter(|n| *n > 0)
        .ok_or_else(|| GithubError::EventWithoutPr {
            path: PathBuf::from(path),
        })
}

/// The link to the workflow run the comment reports on: `GOLDGATE_RUN_URL` when set (a
/// `workflow_run` comment job points at the tested run, not at itself), else this run from
/// `GITHUB_SERVER_URL`, `GITHUB_REPOSITORY` and `GITHUB_RUN_ID`.
pub fn run_url(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(url) = env("GOLDGATE_RUN_URL")
        .map(|u| u.trim().to_string())
        .filter(|u| !u.is_empty())
    {
        return Some(url);
    }
    let server = env("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".to_string());
    let repo = Repo::parse(env("GITHUB_REPOSITORY")?.trim()).ok()?;
    let run = env("GITHUB_RUN_ID")?;
    if run.is_empty() || !run.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(format!(
        "{}/{repo}/actions/runs/{run}",
        server.trim_end_matches('/')
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn enterprise_api_base_keeps_its_path() {
        let env = env_of(&[("GITHUB_API_URL", "https://ghe.example.com/api/v3/")]);
        assert_eq!(api_base(&env).unwrap(), "https://ghe.example.com/api/v3");
        assert_eq!(api_base(&env_of(&[])).unwrap(), DEFAULT_API_URL);
        let bad = env_of(&[("GITHUB_API_URL", "ftp://x")]);
        assert!(matches!(api_base(&bad), Err(GithubError::BadApiUrl { .. })));
    }

    #[test]
    fn token_is_trimmed_validated_and_hidden_from_debug() {
        let t = Token::new("ghp_secret123\n").unwrap();
        assert_eq!(t.expose(), "ghp_secret123");
        assert!(!format!("{t:?}").contains("secret"));
        assert!(matches!(Token::new("a b"), Err(GithubError::BadToken)));
        assert!(matches!(Token::new("  "), Err(GithubError::MissingToken)));
    }

    #[test]
    fn repo_parsing() {
        assert_eq!(Repo::parse("o-1/n.x_y").unwrap().to_string(), "o-1/n.x_y");
        for bad in ["", "o", "o/", "/n", "o/n/x", "o/..", "o /n"] {
            assert!(Repo::parse(bad).is_err(), "{bad}");
        }
        let env = env_of(&[("GITHUB_REPOSITORY", "a/b")]);
        assert_eq!(repo(None, &env).unwrap().to_string(), "a/b");
        assert_eq!(repo(Some("c/d"), &env).unwrap().to_string(), "c/d");
        assert!(matches!(
            repo(None, &env_of(&[])),
            Err(GithubError::MissingRepo)
        ));
    }

    fn event(json: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("event.json");
        std::fs::write(&path, json).unwrap();
        (dir, path)
    }

    #[test]
    fn pr_number_from_each_event_shape() {
        let shapes = [
            (r#"{"pull_request":{"number":7}}"#, 7),
            (r#"{"issue":{"number":8,"pull_request":{}}}"#, 8),
            (
                r#"{"workflow_run":{"pull_requests":[{"number":9},{"number":10}]}}"#,
                9,
            ),
        ];
        for (json, want) in shapes {
            let (_d, path) = event(json);
            let env = env_of(&[("GITHUB_EVENT_PATH", path.to_str().unwrap())]);
            assert_eq!(pr_number(None, &env).unwrap(), want, "{json}");
            assert_eq!(pr_number(Some(3), &env).unwrap(), 3);
        }
    }

    #[test]
    fn event_errors_name_the_file_and_place() {
        let (_d, path) = event("{\n  \"pull_request\": {\"number\": }\n}");
        let err = pr_from_event_file(&path).unwrap_err();
        assert!(
            matches!(err, GithubError::EventJson { line: 2, .. }),
            "{err:?}"
        );
        let (_d2, path) = event(r#"{"workflow_run":{"pull_requests":[]}}"#);
        assert!(matches!(
            pr_from_event_file(&path),
            Err(GithubError::EventWithoutPr { .. })
        ));
        assert!(matches!(
            pr_number(None, &env_of(&[])),
            Err(GithubError::MissingPr)
        ));
    }

    #[test]
    fn run_url_from_server_repo_and_run_id() {
        let env = env_of(&[
            ("GITHUB_SERVER_URL", "https://ghe.example.com/"),
            ("GITHUB_REPOSITORY", "o/r"),
            ("GITHUB_RUN_ID", "42"),
        ]);
        assert_eq!(
            run_url(&env).unwrap(),
            "https://ghe.example.com/o/r/actions/runs/42"
        );
        assert_eq!(run_url(&env_of(&[("GITHUB_REPOSITORY", "o/r")])), None);
        let tested = env_of(&[
            ("GOLDGATE_RUN_URL", "https://github.com/o/r/actions/runs/7"),
            ("GITHUB_RUN_ID", "8"),
        ]);
        assert_eq!(
            run_url(&tested).unwrap(),
            "https://github.com/o/r/actions/runs/7"
        );
    }
}
