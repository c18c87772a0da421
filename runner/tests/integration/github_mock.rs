//! The sticky PR comment bot against a fake GitHub API on 127.0.0.1 (wiremock): create,
//! update, pagination, GitHub Enterprise's path prefix, retries, rate limits, refusals, a
//! create whose answer is lost, and two runs that comment at once.

#![allow(clippy::unwrap_used)] // a test: a failed unwrap is a failed test

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use goldgate::cmd::error::AppError;
use goldgate_judge::github::{
    Action, Client, GithubError, Repo, RetryPolicy, Token, compose, upsert,
};
use goldgate_schema::Exit;
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::common;

pub(crate) const TOKEN: &str = "ghs_s3cretT0kenValue0123456789";
pub(crate) const PR: u64 = 17;

/// A fault the fake answers with instead of the normal reply, once, for the next request
/// of that method.
#[derive(Clone, Debug)]
enum Fault {
    /// Answer this status without doing anything.
    Status(u16),
    /// Apply the request (create the comment), then answer 500: the answer is "lost".
    ApplyThen500,
    /// Apply the request, then answer only after `ms` milliseconds (past the client's timeout).
    ApplyThenStall(u64),
    /// 403 with the primary rate limit exhausted, resetting `secs` from now.
    RateLimitReset(u64),
    /// 403 with a secondary rate limit asking to wait `secs`.
    RetryAfter(u64),
    /// 403 whose message echoes the token (to prove redaction).
    ForbiddenEcho,
}

#[derive(Default)]
struct State {
    comments: Vec<(u64, String)>,
    next_id: u64,
    faults: VecDeque<(&'static str, Fault)>,
    /// Method and path+query of every request, in order.
    log: Vec<(String, String)>,
    bad_auth: u32,
}

/// An in-memory GitHub issue-comments API of the repository `o/r` mounted under `prefix` (""
/// or "/api/v3"); also the GitHub the action's test comments on (`action_e2e`).
#[derive(Clone)]
pub(crate) struct FakeGithub {
    state: Arc<Mutex<State>>,
    prefix: &'static str,
    pub(crate) base: String,
}

impl FakeGithub {
    pub(crate) async fn start(prefix: &'static str) -> (MockServer, FakeGithub) {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(State {
            next_id: 1000,
            ..State::default()
        }));
        let fake = FakeGithub {
            state,
            prefix,
            base: format!("{}{prefix}", server.uri()),
        };
        Mock::given(any())
            .respond_with(fake.clone())
            .mount(&server)
            .await;
        (server, fake)
    }

    fn client(&self) -> Client {
        Client::new(&self.base, &Token::new(TOKEN).unwrap(), fast_policy()).unwrap()
    }

    fn seed(&self, bodies: impl IntoIterator<Item = String>) {
        let mut s = self.state.lock().unwrap();
        for b in bodies {
            let id = s.next_id;
            s.next_id += 1;
            s.comments.push((id, b));
        }
    }

    fn fault(&self, method: &'static str, fault: Fault) {
        self.state.lock().unwrap().faults.push_back((method, fault));
    }

    pub(crate) fn comments(&self) -> Vec<(u64, String)> {
        self.state.lock().unwrap().comments.clone()
    }

    pub(crate) fn count(&self, method: &str) -> usize {
        self.state
            .lock()
            .unwrap()
            .log
            .iter()
            .filter(|(m, _)| m == method)
            .count()
    }

    fn log(&self) -> Vec<(String, String)> {
        self.state.lock().unwrap().log.clone()
    }
}

fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        budget: Duration::from_secs(3),
        first_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(20),
        request_timeout: Duration::from_secs(5),
        create_attempts: 3,
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn json_comment(base: &str, id: u64, body: &str) -> serde_json::Value {
    serde_json::json!({ "id": id, "body": body, "html_url": format!("{base}/pull/{PR}#issuecomment-{id}") })
}

impl Respond for FakeGithub {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let mut s = self.state.lock().unwrap();
        let method = req.method.as_str().to_string();
        let pq = match req.url.query() {
            Some(q) => format!("{}?{q}", req.url.path()),
            None => req.url.path().to_string(),
        };
        s.log.push((method.clone(), pq));
        let auth = req
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        if auth != Some(&format!("Bearer {TOKEN}")) {
            s.bad_auth += 1;
            return ResponseTemplate::new(401)
                .set_body_json(serde_json::json!({"message": "Bad credentials"}));
        }
        let fault = match s.faults.front() {
            Some((m, _)) if *m == method => s.faults.pop_front().map(|(_, f)| f),
            _ => None,
        };
        match fault {
            Some(Fault::Status(code)) => {
                return ResponseTemplate::new(code)
                    .set_body_json(serde_json::json!({"message": "fault"}));
            }
            Some(Fault::RateLimitReset(secs)) => {
                return ResponseTemplate::new(403)
                    .insert_header("x-ratelimit-remaining", "0")
                    .insert_header("x-ratelimit-reset", (now() + secs).to_string().as_str())
                    .set_body_json(serde_json::json!({"message": "API rate limit exceeded"}));
            }
            Some(Fault::RetryAfter(secs)) => {
                return ResponseTemplate::new(403)
                    .insert_header("retry-after", secs.to_string().as_str())
                    .set_body_json(serde_json::json!({"message": "secondary rate limit"}));
            }
            Some(Fault::ForbiddenEcho) => {
                let message = format!("Resource not accessible by integration (token {TOKEN})");
                return ResponseTemplate::new(403)
                    .set_body_json(serde_json::json!({"message": message}));
            }
            Some(Fault::ApplyThen500 | Fault::ApplyThenStall(_)) | None => {}
        }
        let reply = self.route(&mut s, &method, req);
        match fault {
            Some(Fault::ApplyThen500) => ResponseTemplate::new(500),
            Some(Fault::ApplyThenStall(ms)) => reply.set_delay(Duration::from_millis(ms)),
            _ => reply,
        }
    }
}

impl FakeGithub {
    fn route(&self, s: &mut State, method: &str, req: &Request) -> ResponseTemplate {
        let Some(path) = req.url.path().strip_prefix(self.prefix) else {
            return ResponseTemplate::new(404);
        };
        let list_path = format!("/repos/o/r/issues/{PR}/comments");
        let body = || {
            req.body_json::<serde_json::Value>()
                .ok()
                .and_then(|v| v["body"].as_str().map(str::to_string))
        };
        match method {
            "GET" if path == list_path => self.page(s, req),
            "POST" if path == list_path => {
                let Some(text) = body() else {
                    return ResponseTemplate::new(422);
                };
                let id = s.next_id;
                s.next_id += 1;
                s.comments.push((id, text.clone()));
                ResponseTemplate::new(201).set_body_json(json_comment(&self.base, id, &text))
            }
            "PATCH" => {
                let id: Option<u64> = path
                    .strip_prefix("/repos/o/r/issues/comments/")
                    .and_then(|i| i.parse().ok());
                let (Some(id), Some(text)) = (id, body()) else {
                    return ResponseTemplate::new(422);
                };
                match s.comments.iter_mut().find(|(i, _)| *i == id) {
                    Some(c) => {
                        c.1 = text.clone();
                        ResponseTemplate::new(200)
                            .set_body_json(json_comment(&self.base, id, &text))
                    }
                    None => ResponseTemplate::new(404),
                }
            }
            "DELETE" => {
                let id: Option<u64> = path
                    .strip_prefix("/repos/o/r/issues/comments/")
                    .and_then(|i| i.parse().ok());
                let before = s.comments.len();
                s.comments.retain(|(i, _)| Some(*i) != id);
                match s.comments.len() < before {
                    true => ResponseTemplate::new(204),
                    false => ResponseTemplate::new(404)
                        .set_body_json(serde_json::json!({"message": "Not Found"})),
                }
            }
            _ => ResponseTemplate::new(404)
                .set_body_json(serde_json::json!({"message": "Not Found"})),
        }
    }

    /// One page, with a `Link` header like GitHub's (absolute URLs, `rel="next"`).
    fn page(&self, s: &State, req: &Request) -> ResponseTemplate {
        let q = |k: &str| {
            req.url
                .query_pairs()
                .find(|(n, _)| n == k)
                .and_then(|(_, v)| v.parse::<usize>().ok())
        };
        let (per, page) = (
            q("per_page").unwrap_or(30).min(100),
            q("page").unwrap_or(1).max(1),
        );
        let items: Vec<_> = s
            .comments
            .iter()
            .skip((page - 1) * per)
            .take(per)
            .map(|(id, b)| json_comment(&self.base, *id, b))
            .collect();
        let last = s.comments.len().div_ceil(per).max(1);
        let url = |p: usize| {
            format!(
                "<{}{}?per_page={per}&page={p}>",
                req.url.origin().ascii_serialization(),
                req.url.path()
            )
        };
        let mut links = Vec::new();
        if page < last {
            links.push(format!("{}; rel=\"next\"", url(page + 1)));
            links.push(format!("{}; rel=\"last\"", url(last)));
        }
        if page > 1 {
            links.push(format!("{}; rel=\"prev\"", url(page - 1)));
            links.push(format!("{}; rel=\"first\"", url(1)));
        }
        let mut t = ResponseTemplate::new(200).set_body_json(items);
        if !links.is_empty() {
            t = t.insert_header("link", links.join(", ").as_str());
        }
        t
    }
}

fn repo() -> Repo {
    Repo::parse("o/r").unwrap()
}

fn body(text: &str) -> String {
    compose("h100", text, Some("https://github.com/o/r/actions/runs/5"))
}

fn marked(comments: &[(u64, String)]) -> Vec<&(u64, String)> {
    comments
        .iter()
        .filter(|(_, b)| b.starts_with("<!-- goldgate:sticky key=h100 -->"))
        .collect()
}

/// What a user reads for an error: the message and the hint, as goldgate writes every error.
fn rendered(err: &GithubError) -> String {
    goldgate_core::printable::error_text(err, None, false)
}

#[tokio::test]
async fn creates_the_comment_when_none_exists() {
    let (_server, gh) = FakeGithub::start("").await;
    gh.seed(["LGTM".to_string()]);
    let action = upsert(
        &gh.client(),
        &repo(),
        PR,
        "h100",
        &body("first run"),
        false,
        false,
    )
    .await
    .unwrap();
    let comments = gh.comments();
    assert!(
        matches!(action, Action::Created { id, .. } if id == comments[1].0),
        "{action:?}"
    );
    assert_eq!(marked(&comments).len(), 1);
    assert!(comments[1].1.contains("first run"));
    assert_eq!(
        gh.state.lock().unwrap().bad_auth,
        0,
        "the token went with every request"
    );
}

#[tokio::test]
async fn updates_the_existing_comment_and_leaves_others_alone() {
    let (_server, gh) = FakeGithub::start("").await;
    gh.seed([
        "LGTM".to_string(),
        body("old run"),
        compose("a100", "other key", None),
    ]);
    let client = gh.client();
    let action = upsert(&client, &repo(), PR, "h100", &body("new run"), false, false)
        .await
        .unwrap();
    let comments = gh.comments();
    assert!(
        matches!(action, Action::Updated { id: 1001, .. }),
        "{action:?}"
    );
    assert!(comments[1].1.contains("new run") && !comments[1].1.contains("old run"));
    assert!(comments[2].1.contains("other key"));
    assert_eq!((gh.count("POST"), gh.count("PATCH")), (0, 1));

    let again = upsert(&client, &repo(), PR, "h100", &body("new run"), false, false)
        .await
        .unwrap();
    assert!(
        matches!(again, Action::Unchanged { id: 1001, .. }),
        "{again:?}"
    );
    assert_eq!(gh.count("PATCH"), 1, "an identical body is not sent again");
}

#[tokio::test]
async fn finds_the_marker_on_page_three_of_250_comments() {
    let (_server, gh) = FakeGithub::start("").await;
    gh.seed(
        (0..220).map(|i| format!("comment {i} mentions <!-- goldgate:sticky key=h100 --> late")),
    );
    gh.seed([body("old run")]);
    gh.seed((221..250).map(|i| format!("comment {i}")));
    let action = upsert(
        &gh.client(),
        &repo(),
        PR,
        "h100",
        &body("new run"),
        false,
        false,
    )
    .await
    .unwrap();
    assert!(
        matches!(action, Action::Updated { id: 1220, .. }),
        "{action:?}"
    );
    let gets: Vec<String> = gh
        .log()
        .into_iter()
        .filter(|(m, _)| m == "GET")
        .map(|(_, p)| p)
        .collect();
    assert_eq!(
        gets,
        (1..=3)
            .map(|p| format!("/repos/o/r/issues/{PR}/comments?per_page=100&page={p}"))
            .collect::<Vec<_>>()
    );
    assert_eq!(gh.count("POST"), 0);
    assert_eq!(gh.comments().len(), 250);
}

#[tokio::test]
async fn enterprise_base_path_is_kept() {
    let (_server, gh) = FakeGithub::start("/api/v3").await;
    gh.seed([body("old")]);
    let action = upsert(
        &gh.client(),
        &repo(),
        PR,
        "h100",
        &body("new"),
        false,
        false,
    )
    .await
    .unwrap();
    assert!(matches!(action, Action::Updated { .. }), "{action:?}");
    let log = gh.log();
    assert!(
        log.iter().all(|(_, p)| p.starts_with("/api/v3/repos/o/r/")),
        "{log:?}"
    );
}

#[tokio::test]
async fn server_errors_are_retried_until_success() {
    let (_server, gh) = FakeGithub::start("").await;
    gh.seed([body("old")]);
    gh.fault("GET", Fault::Status(502));
    gh.fault("GET", Fault::Status(503));
    let action = upsert(
        &gh.client(),
        &repo(),
        PR,
        "h100",
        &body("new"),
        false,
        false,
    )
    .await
    .unwrap();
    assert!(matches!(action, Action::Updated { .. }), "{action:?}");
    assert_eq!((gh.count("GET"), gh.count("PATCH")), (3, 1));
}

#[tokio::test]
async fn rate_limits_are_waited_out() {
    let (_server, gh) = FakeGithub::start("").await;
    gh.fault("GET", Fault::RateLimitReset(0));
    gh.fault("POST", Fault::RetryAfter(0));
    let action = upsert(
        &gh.client(),
        &repo(),
        PR,
        "h100",
        &body("run"),
        false,
        false,
    )
    .await
    .unwrap();
    assert!(matches!(action, Action::Created { .. }), "{action:?}");
    // The last GET is the list after the create that makes concurrent runs converge.
    assert_eq!((gh.count("GET"), gh.count("POST")), (3, 2));
    assert_eq!(marked(&gh.comments()).len(), 1);
}

#[tokio::test]
async fn a_rate_limit_longer_than_the_budget_fails_at_once() {
    let (_server, gh) = FakeGithub::start("").await;
    gh.fault("GET", Fault::RateLimitReset(3600));
    let start = Instant::now();
    let err = upsert(
        &gh.client(),
        &repo(),
        PR,
        "h100",
        &body("run"),
        false,
        false,
    )
    .await
    .unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "it slept instead of failing"
    );
    assert!(matches!(err, GithubError::RateLimited { .. }), "{err:?}");
    assert_eq!(AppError::from(err).exit(), Exit::Failure);
    assert_eq!(gh.count("GET"), 1);
}

#[tokio::test]
async fn unauthorized_names_the_permission_and_never_the_token() {
    let (_server, gh) = FakeGithub::start("").await;
    gh.fault("GET", Fault::Status(401));
    let err = upsert(
        &gh.client(),
        &repo(),
        PR,
        "h100",
        &body("run"),
        false,
        false,
    )
    .await
    .unwrap_err();
    let app = AppError::from(err);
    assert_eq!(app.exit(), Exit::Failure);
    assert_eq!(app.exit().code(), 3);
    let text = format!("{:?}", app);
    assert!(text.contains("pull-requests: write"), "{text}");
    assert!(!text.contains(TOKEN), "{text}");
}

#[tokio::test]
async fn refusal_messages_are_redacted_and_snapshotted() {
    let (_server, gh) = FakeGithub::start("").await;
    gh.fault("GET", Fault::Status(401));
    gh.fault("GET", Fault::ForbiddenEcho);
    gh.fault("GET", Fault::Status(404));
    let client = gh.client();
    let mut out = Vec::new();
    for _ in 0..3 {
        let err = upsert(&client, &repo(), PR, "h100", &body("run"), false, false)
            .await
            .unwrap_err();
        let text = rendered(&err);
        assert!(
            !text.contains(TOKEN) && !format!("{err:?}").contains(TOKEN),
            "{text}"
        );
        assert_eq!(AppError::from(err).exit(), Exit::Failure);
        out.push(text);
    }
    insta::assert_snapshot!(out.join("\n"));
}

#[tokio::test]
async fn lost_create_answer_never_makes_a_second_comment() {
    let (_server, gh) = FakeGithub::start("").await;
    gh.fault("POST", Fault::ApplyThen500);
    let action = upsert(
        &gh.client(),
        &repo(),
        PR,
        "h100",
        &body("run"),
        false,
        false,
    )
    .await
    .unwrap();
    let comments = gh.comments();
    assert_eq!(marked(&comments).len(), 1, "{comments:?}");
    assert!(
        matches!(action, Action::Created { id, .. } if id == comments[0].0),
        "{action:?}"
    );
    assert_eq!(
        gh.count("POST"),
        1,
        "listed again and found it instead of posting twice"
    );
    let methods: Vec<String> = gh.log().into_iter().map(|(m, _)| m).collect();
    assert_eq!(methods, ["GET", "POST", "GET"]);
}

#[tokio::test]
async fn create_whose_answer_times_out_is_found_not_repeated() {
    let (_server, gh) = FakeGithub::start("").await;
    gh.fault("POST", Fault::ApplyThenStall(3000));
    let policy = RetryPolicy {
        request_timeout: Duration::from_millis(300),
        ..fast_policy()
    };
    let client = Client::new(&gh.base, &Token::new(TOKEN).unwrap(), policy).unwrap();
    let action = upsert(&client, &repo(), PR, "h100", &body("run"), false, false)
        .await
        .unwrap();
    assert!(matches!(action, Action::Created { .. }), "{action:?}");
    assert_eq!(marked(&gh.comments()).len(), 1);
    let methods: Vec<String> = gh.log().into_iter().map(|(m, _)| m).collect();
    assert_eq!(methods, ["GET", "POST", "GET"]);
}

#[tokio::test]
async fn create_that_failed_unapplied_is_retried_once_after_listing() {
    let (_server, gh) = FakeGithub::start("").await;
    gh.fault("POST", Fault::Status(502));
    let action = upsert(
        &gh.client(),
        &repo(),
        PR,
        "h100",
        &body("run"),
        false,
        false,
    )
    .await
    .unwrap();
    assert!(matches!(action, Action::Created { .. }), "{action:?}");
    let methods: Vec<String> = gh.log().into_iter().map(|(m, _)| m).collect();
    assert_eq!(methods, ["GET", "POST", "GET", "POST", "GET"]);
    assert_eq!(marked(&gh.comments()).len(), 1);
}

#[tokio::test]
async fn only_on_change_posts_nothing_new_but_updates_an_existing_comment() {
    let (_server, gh) = FakeGithub::start("").await;
    let client = gh.client();
    let skipped = upsert(
        &client,
        &repo(),
        PR,
        "h100",
        &body("all passed"),
        true,
        true,
    )
    .await
    .unwrap();
    assert_eq!(skipped, Action::Skipped);
    assert_eq!(gh.count("POST"), 0);

    let created = upsert(
        &client,
        &repo(),
        PR,
        "h100",
        &body("1 regression"),
        true,
        false,
    )
    .await
    .unwrap();
    assert!(matches!(created, Action::Created { .. }), "{created:?}");
    let updated = upsert(
        &client,
        &repo(),
        PR,
        "h100",
        &body("all passed"),
        true,
        true,
    )
    .await
    .unwrap();
    assert!(matches!(updated, Action::Updated { .. }), "{updated:?}");
    assert!(gh.comments()[0].1.contains("all passed"));
}

#[tokio::test]
async fn two_runs_commenting_at_once_converge_to_one_sticky_comment() {
    let (_server, gh) = FakeGithub::start("").await;
    gh.seed(["LGTM".to_string()]);
    // Both runs list before either creates: each list answer is held back 300 ms.
    gh.fault("GET", Fault::ApplyThenStall(300));
    gh.fault("GET", Fault::ApplyThenStall(300));
    let (a, b) = (gh.client(), gh.client());
    let (body_a, body_b, r) = (body("run A"), body("run B"), repo());
    let (got_a, got_b) = tokio::join!(
        upsert(&a, &r, PR, "h100", &body_a, false, false),
        upsert(&b, &r, PR, "h100", &body_b, false, false),
    );
    let (got_a, got_b) = (got_a.unwrap(), got_b.unwrap());
    assert_eq!(gh.count("POST"), 2, "the race happened: both created");
    let comments = gh.comments();
    let sticky = marked(&comments);
    assert_eq!(sticky.len(), 1, "{comments:?}");
    // Both runs may delete the newer comment; the second delete finds it gone (404, fine).
    let deleted: Vec<String> = gh
        .log()
        .into_iter()
        .filter(|(m, _)| m == "DELETE")
        .map(|(_, p)| p)
        .collect();
    assert!(!deleted.is_empty(), "{:?}", gh.log());
    assert!(deleted.iter().all(|p| p.ends_with("/1002")), "{deleted:?}");
    // The oldest is kept; whichever run finished last wrote its body.
    let kept = sticky[0].0;
    assert_eq!(kept, 1001, "{comments:?}");
    let ids = |a: &Action| match a {
        Action::Created { id, .. } | Action::Updated { id, .. } | Action::Unchanged { id, .. } => {
            Some(*id)
        }
        Action::Skipped => None,
    };
    assert_eq!((ids(&got_a), ids(&got_b)), (Some(kept), Some(kept)));
}

#[tokio::test]
async fn two_stickies_left_by_an_earlier_race_become_one() {
    let (_server, gh) = FakeGithub::start("").await;
    gh.seed([body("old A"), "LGTM".to_string(), body("old B")]);
    let action = upsert(
        &gh.client(),
        &repo(),
        PR,
        "h100",
        &body("new"),
        false,
        false,
    )
    .await
    .unwrap();
    let comments = gh.comments();
    let sticky = marked(&comments);
    assert_eq!(sticky.len(), 1, "{comments:?}");
    assert_eq!(sticky[0].0, 1000, "the oldest is kept");
    assert!(sticky[0].1.contains("new"));
    assert!(
        matches!(action, Action::Updated { id: 1000, .. }),
        "{action:?}"
    );
    assert!(
        comments.iter().any(|c| c.1 == "LGTM"),
        "other comments stay"
    );
}

#[tokio::test]
async fn unreachable_api_is_a_transport_failure_without_the_token() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let policy = RetryPolicy {
        budget: Duration::from_millis(200),
        ..fast_policy()
    };
    let client = Client::new(
        &format!("http://127.0.0.1:{port}"),
        &Token::new(TOKEN).unwrap(),
        policy,
    )
    .unwrap();
    let err = upsert(&client, &repo(), PR, "h100", &body("run"), false, false)
        .await
        .unwrap_err();
    assert!(
        matches!(err, GithubError::Transport { attempts, .. } if attempts > 1),
        "{err:?}"
    );
    assert!(!rendered(&err).contains(TOKEN));
    assert_eq!(AppError::from(err).exit(), Exit::Failure);
}

mod end_to_end {
    //! `goldgate comment`'s own path: recorded results → compare → markdown → framed body →
    //! the fake GitHub. The body snapshot is the example comment on the PR comment page of the book (docs/book/src/guide/pr-comment.md).

    use std::collections::BTreeMap;
    use std::path::Path;

    use goldgate::cmd::args::{CaseRoot, ConfigFile, GoldenRoot};
    use goldgate::cmd::comment::{Args, prepare};
    use goldgate_schema::{Attempt, Fingerprint, Outcome, RunRecord, StepValues, VariantRecord};

    use super::*;

    fn record(case: &str, loss: &[f64], outcome: Outcome, failure: Option<&str>) -> RunRecord {
        let values = loss
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u64 + 1, *v))
            .collect();
        RunRecord {
            run_id: "20261130-070000-demo".into(),
            outcome: outcome.clone(),
            attempts: vec![Attempt {
                number: 1,
                started_at: "2026-11-30T07:00:00Z".into(),
                wall_seconds: 42.0,
                outcome,
                failure_line: failure.map(str::to_string),
                log_tail: Vec::new(),
                log: "logs/rank0.log".into(),
                queued_seconds: None,
            }],
            started_at: "2026-11-30T07:00:00Z".into(),
            wall_seconds: 42.0,
            argv: vec![vec!["fake-trainer".into()]],
            fingerprint: Fingerprint {
                gpu_model: Some("NVIDIA H100 80GB HBM3".into()),
                gpu_count: Some(8),
                ..Fingerprint::default()
            },
            metrics: BTreeMap::from([("lm loss".to_string(), StepValues(values))]),
            ..RunRecord::passed(case, VariantRecord::baseline(), 1, "dgx_h100")
        }
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Three jobs: one passes, one regresses, one dies with a hostile failure line.
    fn recorded_run(dir: &Path) -> Args {
        let golden = r#"{"lm loss": {"start_step": 1, "end_step": 3, "step_interval": 1, "values": {"1": 10.5, "2": 10.2, "3": 9.9}}}"#;
        let runs = [
            record("gpt/tiny_pass", &[10.5, 10.2, 9.9], Outcome::Passed, None),
            record(
                "gpt/tiny_regress",
                &[10.5, 11.2, 11.9],
                Outcome::Passed,
                None,
            ),
            record(
                "moe/tiny_oom",
                &[10.5],
                Outcome::OutOfMemory,
                Some("CUDA out of memory @octocat <img src=x> | [click](http://evil)"),
            ),
        ];
        for r in &runs {
            let json = serde_json::to_string(r).unwrap();
            write(
                &dir.join("run").join(r.rel_dir()).join("results.json"),
                &json,
            );
            write(
                &dir.join("golden")
                    .join(&r.case)
                    .join("golden_values_dev_dgx_h100.json"),
                golden,
            );
        }
        std::fs::copy(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../goldgate.yaml"),
            dir.join("goldgate.yaml"),
        )
        .unwrap();
        Args {
            comparisons: vec![],
            abs: vec![],
            results: Some(dir.join("run")),
            pick: Default::default(),
            pr: None,
            repo: None,
            key: None,
            only_on_change: false,
            dry_run: true,
            golden_root: GoldenRoot {
                path: dir.join("golden"),
            },
            root: CaseRoot {
                path: dir.join("test_cases"),
            },
            platform: None,
            config: ConfigFile {
                path: Some(dir.join("goldgate.yaml")),
            },
            trend: Default::default(),
        }
    }

    fn actions_env(k: &str) -> Option<String> {
        let v = match k {
            "GITHUB_SERVER_URL" => "https://github.com",
            "GITHUB_REPOSITORY" => "o/r",
            "GITHUB_RUN_ID" => "123456",
            _ => return None,
        };
        Some(v.to_string())
    }

    #[test]
    fn comment_body_from_recorded_results() {
        let dir = tempfile::tempdir().unwrap();
        let prepared = prepare(&recorded_run(dir.path()), &actions_env).unwrap();
        assert_eq!(prepared.key, "dgx_h100", "the key defaults to the platform");
        assert!(!prepared.all_passed);
        let body = &prepared.body;
        assert!(body.starts_with("<!-- goldgate:sticky key=dgx_h100 -->\n"));
        assert!(body.contains("(https://github.com/o/r/actions/runs/123456)"));
        assert!(
            !body.contains("<img") && !body.contains("@octocat"),
            "{body}"
        );
        let at = |s: &str| {
            body.find(s)
                .unwrap_or_else(|| panic!("{s} missing in {body}"))
        };
        assert!(at("tiny\\_regress") < at("<details>"));
        insta::assert_snapshot!(relative(body, dir.path()));
    }

    /// The body as a user who compared `run/` from `dir` sees it: the bless line's run folder
    /// without the temporary folder, so the snapshot and the book do not change with it.
    fn relative(body: &str, dir: &Path) -> String {
        body.replace(&format!("{}/", dir.display()), "")
    }

    /// `goldgate compare` as a process in `dir`, writing its comparison JSON to `json`.
    fn compare_to_json(dir: &Path, json: &Path, extra: &[&str]) -> std::process::Output {
        common::cli::goldgate()
            .current_dir(dir)
            .args([
                "compare",
                "--results",
                "run",
                "--root",
                "test_cases",
                "--json",
            ])
            .arg(json)
            .args(extra)
            .output()
            .unwrap()
    }

    #[test]
    fn the_comment_renders_the_saved_comparison_and_never_judges_again() {
        let dir = tempfile::tempdir().unwrap();
        let from_results = recorded_run(dir.path());
        let json = dir.path().join("compare.json");
        let out = compare_to_json(dir.path(), &json, &[]);
        assert_eq!(out.status.code(), Some(3), "the check fails: a job died");
        let saved = Args {
            comparisons: vec![json.clone()],
            results: None,
            ..recorded_run(dir.path())
        };
        // A golden blessed after the check ran (on another branch, say) changes nothing.
        let golden = dir
            .path()
            .join("golden/gpt/tiny_regress/golden_values_dev_dgx_h100.json");
        std::fs::write(&golden, r#"{"lm loss": {"start_step": 1, "end_step": 3, "step_interval": 1, "values": {"1": 10.5, "2": 11.2, "3": 11.9}}}"#).unwrap();
        let body = prepare(&saved, &actions_env).unwrap().body;
        assert!(body.contains("1 regression"), "{body}");
        let rejudged = prepare(&from_results, &actions_env).unwrap().body;
        assert!(!rejudged.contains("1 regression"), "{rejudged}");
        // Two shards' files merge into one comment; another platform's cannot join it.
        let second = dir.path().join("second.json");
        std::fs::write(&second, r#"{"schema_version": 1, "platform": "dgx_h100", "jobs": [], "counts": {"pass": 0, "improvement": 0, "unstable": 0, "missing-metric": 0, "missing-golden": 0, "regression": 0, "job-failed": 0}, "warnings": ["from shard 2"]}"#).unwrap();
        let both = Args {
            comparisons: vec![json.clone(), second.clone()],
            ..saved
        };
        let merged = prepare(&both, &actions_env).unwrap().body;
        assert!(
            merged.contains("from shard 2") && merged.contains("1 regression"),
            "{merged}"
        );
        std::fs::write(
            &second,
            std::fs::read_to_string(&second)
                .unwrap()
                .replace("dgx_h100", "h200"),
        )
        .unwrap();
        let err = prepare(&both, &actions_env).unwrap_err();
        assert!(
            format!("{err:?}").contains("its platform is h200"),
            "{err:?}"
        );
    }

    #[test]
    fn readme_example_is_the_real_body() {
        let dir = tempfile::tempdir().unwrap();
        let prepared = prepare(&recorded_run(dir.path()), &actions_env).unwrap();
        let readme = include_str!("../../../docs/book/src/guide/pr-comment.md");
        // Four backticks: the body holds three-backtick code blocks.
        let start = "<!-- example-comment:start -->\n````markdown\n";
        let from = readme
            .find(start)
            .expect("the PR comment page has the example comment")
            + start.len();
        let len = readme[from..]
            .find("````\n<!-- example-comment:end -->")
            .unwrap();
        assert_eq!(
            &readme[from..from + len],
            relative(&prepared.body, dir.path()),
            "the PR comment page's example is stale"
        );
    }

    #[tokio::test]
    async fn comment_body_is_posted_once_and_updated_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let prepared = prepare(&recorded_run(dir.path()), &actions_env).unwrap();
        let (_server, gh) = FakeGithub::start("").await;
        let client = gh.client();
        for _ in 0..2 {
            upsert(
                &client,
                &repo(),
                PR,
                &prepared.key,
                &prepared.body,
                true,
                prepared.all_passed,
            )
            .await
            .unwrap();
        }
        assert_eq!(gh.comments().len(), 1);
        assert_eq!(gh.comments()[0].1, prepared.body);
    }

    /// `goldgate comment` as a process, with only the environment given here.
    async fn goldgate_comment(
        args: &Args,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> std::process::Output {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_goldgate"));
        cmd.arg("comment")
            .args(
                args.results
                    .iter()
                    .flat_map(|r| [std::ffi::OsStr::new("--results"), r.as_os_str()]),
            )
            .args(
                args.comparisons
                    .iter()
                    .flat_map(|c| [std::ffi::OsStr::new("--comparison"), c.as_os_str()]),
            )
            .arg("--golden-root")
            .arg(&args.golden_root.path)
            .arg("--root")
            .arg(&args.root.path)
            .args(extra)
            .env_clear()
            .envs(env.iter().copied());
        cmd.output().await.unwrap()
    }

    #[tokio::test]
    async fn cli_dry_run_prints_the_body_without_a_token() {
        let dir = tempfile::tempdir().unwrap();
        let args = recorded_run(dir.path());
        let env = [
            ("GITHUB_SERVER_URL", "https://github.com"),
            ("GITHUB_REPOSITORY", "o/r"),
            ("GITHUB_RUN_ID", "123456"),
        ];
        let out = goldgate_comment(&args, &["--dry-run"], &env).await;
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let body = prepare(&args, &actions_env).unwrap().body;
        assert_eq!(String::from_utf8(out.stdout).unwrap(), body);
    }

    #[tokio::test]
    async fn cli_posts_then_updates_through_the_api() {
        let dir = tempfile::tempdir().unwrap();
        let args = recorded_run(dir.path());
        let (_server, gh) = FakeGithub::start("/api/v3").await;
        let env = [
            ("GITHUB_TOKEN", TOKEN),
            ("GITHUB_API_URL", gh.base.as_str()),
            ("GITHUB_REPOSITORY", "o/r"),
        ];
        let pr = PR.to_string();
        for want in ["created comment 1000", "left unchanged comment 1000"] {
            let out = goldgate_comment(&args, &["--pr", &pr], &env).await;
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{stderr}");
            assert!(stderr.contains(want), "{stderr}");
            assert!(
                !stderr.contains(TOKEN) && !String::from_utf8_lossy(&out.stdout).contains(TOKEN)
            );
        }
        assert_eq!(gh.comments().len(), 1);
    }

    #[tokio::test]
    async fn cli_refusal_exits_3_naming_the_permission_and_not_the_token() {
        let dir = tempfile::tempdir().unwrap();
        let args = recorded_run(dir.path());
        let (_server, gh) = FakeGithub::start("").await;
        gh.fault("GET", Fault::ForbiddenEcho);
        let env = [
            ("GITHUB_TOKEN", TOKEN),
            ("GITHUB_API_URL", gh.base.as_str()),
            ("GITHUB_REPOSITORY", "o/r"),
        ];
        let out = goldgate_comment(&args, &["--pr", "17"], &env).await;
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        assert!(stderr.contains("pull-requests: write"), "{stderr}");
        assert!(
            !stderr.contains(TOKEN) && !stdout.contains(TOKEN),
            "{stderr}"
        );
    }

    #[tokio::test]
    async fn cli_without_token_or_pr_is_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        let args = recorded_run(dir.path());
        let out = goldgate_comment(&args, &["--pr", "17", "--repo", "o/r"], &[]).await;
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("GITHUB_TOKEN is not set"));
        let out = goldgate_comment(&args, &["--repo", "o/r"], &[("GITHUB_TOKEN", TOKEN)]).await;
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("no pull request number given"));
    }

    /// `goldgate` in the workspace root (the fixture cases and goldgate.yaml), run to the end.
    fn goldgate_at_repo(args: &[&str]) -> std::process::Output {
        common::cli::goldgate()
            .current_dir(common::cli::repo())
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    }

    /// The comment's shape: its headings, table heads and folds, each number written as `N`
    /// (the figures are this machine's).
    fn outline(body: &str) -> String {
        body.lines()
            .filter(|l| {
                l.starts_with('#') || l.starts_with("<details>") || l.starts_with("| metric")
            })
            .map(|l| {
                let mut out = String::new();
                for c in l.chars() {
                    match c.is_ascii_digit() {
                        true if out.ends_with('N') => {}
                        true => out.push('N'),
                        false => out.push(c),
                    }
                }
                out
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// What the `gpu-ab` job and `pr-comment.yml` do, on the fake trainer: `goldgate ab --json`
    /// beside `goldgate compare --json` of the same platform, then `goldgate comment --comparison
    /// … --ab …` posts to the fake GitHub. The A/B is the timing section, the goldens' timing
    /// rows are diagnostic, and a second post updates the one comment.
    #[tokio::test]
    async fn the_ab_result_is_the_comments_timing_section() {
        let dir = tempfile::tempdir().unwrap();
        let path = |p: &str| dir.path().join(p).to_str().unwrap().to_owned();
        let (run_dir, golden) = (path("run"), path("golden"));
        let (saved, ab_dir, ab_json) = (
            path("comparison.json"),
            path("ab-results"),
            path("ab-fake-quick.json"),
        );
        let cases = ["--root", "runner/tests/fixtures/cases"];
        let run = goldgate_at_repo(
            &[
                &["run", "fake/quick", "--no-compare", "--out", &run_dir][..],
                &cases[..],
            ]
            .concat(),
        );
        assert_eq!(run.status.code(), Some(0), "{}", common::cli::text(&run));
        let bless = goldgate_at_repo(&["bless", "--from", &run_dir, "--golden-root", &golden]);
        assert_eq!(
            bless.status.code(),
            Some(0),
            "{}",
            common::cli::text(&bless)
        );
        let compare = goldgate_at_repo(
            &[
                &["compare", "--results", &run_dir, "--golden-root", &golden][..],
                &["--json", &saved][..],
                &cases[..],
            ]
            .concat(),
        );
        assert!(
            Path::new(&saved).is_file(),
            "{}",
            common::cli::text(&compare)
        );
        let ab = goldgate_at_repo(
            &[
                &["ab", "fake/quick", "--seed", "11", "--out", &ab_dir][..],
                &[
                    "--b-env",
                    "GOLDGATE_PLANT_SAVE_DELAY_S=0.6",
                    "--spread",
                    "0.1",
                ][..],
                &["--max-pairs", "2", "--json", &ab_json][..],
                &cases[..],
            ]
            .concat(),
        );
        assert_eq!(ab.status.code(), Some(1), "{}", common::cli::text(&ab));
        let (_server, gh) = FakeGithub::start("").await;
        let env = [
            ("GITHUB_TOKEN", TOKEN),
            ("GITHUB_API_URL", gh.base.as_str()),
            ("GITHUB_REPOSITORY", "o/r"),
        ];
        let comment = |extra: Vec<String>| {
            let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_goldgate"));
            cmd.arg("comment")
                .args(extra)
                .args(["--pr", "17", "--only-on-change"])
                .env_clear()
                .envs(env.iter().copied());
            cmd.output()
        };
        let files = vec![
            "--comparison".to_owned(),
            saved.clone(),
            "--ab".to_owned(),
            ab_json.clone(),
        ];
        for want in ["created comment 1000", "left unchanged comment 1000"] {
            let out = comment(files.clone()).await.unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{stderr}");
            assert!(stderr.contains(want), "{stderr}");
        }
        let comments = gh.comments();
        assert_eq!(comments.len(), 1, "{comments:?}");
        let body = &comments[0].1;
        let at = |s: &str| {
            body.find(s)
                .unwrap_or_else(|| panic!("{s} missing in {body}"))
        };
        assert!(
            body.starts_with("<!-- goldgate:sticky key=dev_cpu -->\n## ❌ goldgate: "),
            "{body}"
        );
        assert!(body.contains("; timing (A/B): regression"), "{body}");
        assert!(body.contains("; mode: job ("), "{body}");
        let timing = &body[at("### goldgate A/B: fake/quick")..];
        assert!(timing.contains("| checkpoint-blocking-time |"), "{body}");
        assert!(
            at("Timing against goldens:") > at("### goldgate A/B"),
            "{body}"
        );
        assert!(body.contains("| diagnostic ("), "{body}");
        insta::assert_snapshot!(outline(body));
        // An A/B of another platform cannot join this comment.
        let mut other: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&ab_json).unwrap()).unwrap();
        other["platform"] = "h200".into();
        std::fs::write(path("other.json"), other.to_string()).unwrap();
        let out = comment(vec![
            "--comparison".into(),
            saved.clone(),
            "--ab".into(),
            path("other.json"),
        ])
        .await
        .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("its platform is h200"));
    }
}
