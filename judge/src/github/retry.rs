//! Stage "report" (PR comment bot): when to retry a GitHub request and how long to wait.
//!
//! Pure functions over a status code and headers, so the rules are tested without a server.
//! Retries are bounded by a total time budget, not a count, and a wait GitHub asks for that
//! does not fit the budget ends the command at once instead of sleeping past it.

use std::time::Duration;

/// How patient the bot is. Tests shrink every number so fault tests run in milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    /// The most time one request may spend on retries and waits in total.
    pub budget: Duration,
    /// The first backoff; doubled per attempt.
    pub first_delay: Duration,
    /// The longest backoff between two attempts (a server-requested wait may be longer).
    pub max_delay: Duration,
    /// One attempt without an answer is abandoned after this long.
    pub request_timeout: Duration,
    /// How often a create whose answer was lost is tried again (each try lists first).
    pub create_attempts: u32,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            budget: Duration::from_secs(120),
            first_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(20),
            request_timeout: Duration::from_secs(30),
            create_attempts: 3,
        }
    }
}

impl RetryPolicy {
    /// Exponential backoff for attempt `n` (0-based), capped at `max_delay`.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(16)).unwrap_or(u32::MAX);
        self.first_delay.saturating_mul(factor).min(self.max_delay)
    }
}

/// What one answer means for the request that got it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome {
    /// 2xx.
    Success,
    /// A primary or secondary rate limit; `wait` is what GitHub asked for, if it said.
    RateLimited {
        wait: Option<Duration>,
        detail: String,
    },
    /// 5xx: GitHub failed; the request may or may not have been applied.
    ServerError,
    /// Anything else: a final answer (401, 403, 404, 422, ...).
    Refused,
}

/// Reads an answer: `status` and a header lookup (`name` is lowercase). `now_epoch` is the
/// current Unix time in seconds, for `x-ratelimit-reset`.
pub(crate) fn classify(
    status: u16,
    header: &dyn Fn(&str) -> Option<String>,
    now_epoch: u64,
) -> Outcome {
    if (200..300).contains(&status) {
        return Outcome::Success;
    }
    if status >= 500 {
        return Outcome::ServerError;
    }
    if status != 403 && status != 429 {
        return Outcome::Refused;
    }
    let retry_after = header("retry-after").and_then(|v| v.trim().parse::<u64>().ok());
    let exhausted = header("x-ratelimit-remaining").is_some_and(|v| v.trim() == "0");
    let reset = header("x-ratelimit-reset").and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(secs) = retry_after {
        let detail = format!("GitHub asked to retry after {secs}s");
        return Outcome::RateLimited {
            wait: Some(Duration::from_secs(secs)),
            detail,
        };
    }
    if exhausted {
        let wait = reset.map(|r| Duration::from_secs(r.saturating_sub(now_epoch)));
        let detail = match reset {
            Some(r) => format!("no requests left until the limit resets at Unix time {r}"),
            None => "no requests left".to_string(),
        };
        return Outcome::RateLimited { wait, detail };
    }
    if status == 429 {
        return Outcome::RateLimited {
            wait: None,
            detail: "429 Too Many Requests".to_string(),
        };
    }
    Outcome::Refused
}

/// Whether a `Link` header announces another page.
pub(crate) fn has_next_page(link: Option<&str>) -> bool {
    link.is_some_and(|l| l.split(',').any(|part| part.contains("rel=\"next\"")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn statuses_and_rate_limit_headers() {
        let none = headers(&[]);
        assert_eq!(classify(201, &none, 0), Outcome::Success);
        assert_eq!(classify(502, &none, 0), Outcome::ServerError);
        assert_eq!(classify(401, &none, 0), Outcome::Refused);
        assert_eq!(classify(403, &none, 0), Outcome::Refused);
        assert_eq!(classify(404, &none, 0), Outcome::Refused);
        let secondary = headers(&[("retry-after", "7")]);
        assert!(matches!(
            classify(403, &secondary, 0),
            Outcome::RateLimited { wait: Some(w), .. } if w == Duration::from_secs(7)
        ));
        let primary = headers(&[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1000"),
        ]);
        assert!(matches!(
            classify(403, &primary, 990),
            Outcome::RateLimited { wait: Some(w), .. } if w == Duration::from_secs(10)
        ));
        assert!(matches!(
            classify(429, &primary, 2000),
            Outcome::RateLimited { wait: Some(w), .. } if w.is_zero()
        ));
        let left = headers(&[
            ("x-ratelimit-remaining", "12"),
            ("x-ratelimit-reset", "1000"),
        ]);
        assert_eq!(classify(403, &left, 0), Outcome::Refused);
        assert!(matches!(
            classify(429, &none, 0),
            Outcome::RateLimited { wait: None, .. }
        ));
    }

    #[test]
    fn backoff_doubles_then_caps() {
        let p = RetryPolicy {
            first_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
            ..RetryPolicy::default()
        };
        let got: Vec<u128> = (0..4).map(|n| p.backoff(n).as_millis()).collect();
        assert_eq!(got, [100, 200, 350, 350]);
        assert_eq!(p.backoff(60), Duration::from_millis(350));
    }

    #[test]
    fn next_page_from_link_header() {
        let link = r#"<https://api.github.com/repositories/1/issues/2/comments?per_page=100&page=2>; rel="next", <https://api.github.com/repositories/1/issues/2/comments?per_page=100&page=3>; rel="last""#;
        assert!(has_next_page(Some(link)));
        let last =
            r#"<https://x/comments?page=1>; rel="prev", <https://x/comments?page=1>; rel="first""#;
        assert!(!has_next_page(Some(last)));
        assert!(!has_next_page(None));
    }
}
