//! Stage "report": an A/B run (`goldgate ab`) for people and CI — the terminal table, the
//! markdown of the step summary and PR comment (one renderer for both), JUnit and JSON. Each
//! metric shows A, B, the change, its interval, the pairs and the verdict, e.g.
//! `checkpoint-blocking-time 2.41 s → 2.68 s, +11.2 % (99.8 % CI +7.9 to +14.6 %), 4 pairs`.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::compare::ab::metric::{AbMetric, AbTest, AbVerdict};
use crate::compare::ab::outcome::AbReport;
use crate::report::error::ReportError;
use crate::report::units;
use goldgate_schema::Verdict;

/// `+11.2 %`.
fn pct(share: f64) -> String {
    format!("{:+.1} %", share * 100.0)
}

/// `99.8 % CI +7.9 to +14.6 %`, or `—`.
fn interval(m: &AbMetric) -> String {
    match (m.interval, m.level) {
        (Some((lo, hi)), Some(level)) => format!(
            "{} % CI {:+.1} to {:+.1} %",
            trim(level * 100.0),
            lo * 100.0,
            hi * 100.0
        ),
        _ => "—".to_owned(),
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn value(m: &AbMetric, v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_owned(), |v| units::value(m.unit, v))
}

/// One line per metric: `metric A → B, change (interval), N pairs: verdict`.
pub fn metric_line(m: &AbMetric) -> String {
    let change = m.change.map_or_else(|| "—".to_owned(), pct);
    let ci = match m.interval {
        Some(_) => format!(" ({})", interval(m)),
        None => String::new(),
    };
    let pairs = match m.test {
        AbTest::Sequential | AbTest::SignedRank => {
            format!(", {} pair{}", m.pairs, if m.pairs == 1 { "" } else { "s" })
        }
        AbTest::Rule => String::new(),
    };
    format!(
        "{} {} → {}, {change}{ci}{pairs}: {}",
        m.metric,
        value(m, m.a),
        value(m, m.b),
        m.verdict.label()
    )
}

/// `mode: job-level (why)`.
fn mode_line(r: &AbReport) -> String {
    format!("mode: {} ({})", r.mode.kind.label(), r.mode.reason)
}

/// `covariate: checkpoint-blocking-time adjusted by iteration-time (slope 0.76, floor 5.5 %): applied`.
fn covariate_line(r: &AbReport) -> Option<String> {
    use crate::compare::ab::covariate::{ADJUSTED, BY};
    let c = r.covariate.as_ref()?;
    let state = match (&c.off, c.applied) {
        (Some(why), _) => why.clone(),
        (None, true) => "applied".to_owned(),
        (None, false) => "not applied yet".to_owned(),
    };
    Some(format!(
        "covariate: {ADJUSTED} adjusted by {BY} (slope {}, spread floor {} %): {state}",
        c.settings.slope,
        trim(c.settings.spread * 100.0)
    ))
}

fn header(r: &AbReport) -> String {
    let test = match &r.within_job {
        Some(t) => format!(
            "alpha {} each way over {} metrics × {} looks (jobs), pass below +{} %",
            t.alpha,
            t.metrics,
            t.max_jobs,
            trim(t.min_effect * 100.0)
        ),
        None => format!(
            "alpha {} over {} looks, min effect {} %, spread floor {} %",
            r.sequential.alpha,
            r.sequential.max_pairs,
            trim(r.sequential.min_effect * 100.0),
            trim(r.sequential.spread * 100.0)
        ),
    };
    let mode = match covariate_line(r) {
        Some(c) => format!("{}\n{c}", mode_line(r)),
        None => mode_line(r),
    };
    format!(
        "A/B {} on {}: A = {}; B = {}\n{}\n{} {}(s), {} job(s), {}, seed {}; {test}\n",
        r.case,
        r.platform,
        r.arms[0].describe(),
        r.arms[1].describe(),
        mode,
        r.pairs,
        pair_word(r),
        r.jobs.len(),
        job_minutes(r),
        r.seed,
    )
}

/// The jobs' time: `3.2 GPU-minutes` where a job saw a GPU, else `0.1 CPU-minutes (no GPU)`
/// (wall time of jobs that had none: no GPU time was spent).
fn job_minutes(r: &AbReport) -> String {
    let minutes = r.job_seconds / 60.0;
    match r.gpus {
        0 => format!("{minutes:.1} CPU-minutes (no GPU)"),
        1 => format!("{minutes:.1} GPU-minutes"),
        n => format!(
            "{minutes:.1} minutes on {n} GPUs ({:.1} GPU-minutes)",
            minutes * f64::from(n)
        ),
    }
}

/// `pair` (of jobs) or `save pair`.
fn pair_word(r: &AbReport) -> &'static str {
    match r.within_job {
        Some(_) => "save pair",
        None => "pair",
    }
}

/// `precision ±3 % asked: reached (widest checkpoint-window-time ±2.8 %, 154 save pairs)`.
fn precision_line(r: &AbReport) -> Option<String> {
    let p = r.precision.as_ref()?;
    let widest = match (&p.widest, p.half_width) {
        (Some(m), Some(w)) => format!("widest {m} ±{:.2} %", w * 100.0),
        (Some(m), None) => format!("{m} has no bounded interval yet"),
        _ => "no interval yet".to_owned(),
    };
    Some(format!(
        "precision ±{} % asked: {} ({widest}, {} {}(s))",
        trim(p.target * 100.0),
        if p.reached { "reached" } else { "NOT reached" },
        p.pairs,
        pair_word(r)
    ))
}

/// The design checks, one line each: `carry-over into A: … +2.3 % (99 % CI -4.8 to +9.8 %),
/// 16 against 17: ok`.
fn check_lines(r: &AbReport) -> Vec<String> {
    let Some(c) = &r.checks else {
        return Vec::new();
    };
    let mut out = vec![format!(
        "design checks on {} ({} % CI each; {} ab / {} ba pairs; the last pairs of each job hold {} A and {} B units):",
        c.metric,
        trim(c.level * 100.0),
        c.ab_pairs,
        c.ba_pairs,
        c.tail_a,
        c.tail_b
    )];
    for k in &c.checks {
        out.push(format!(
            "  {}: {} {} ({:+.1} to {:+.1} %), {} against {}: {}",
            k.check,
            k.compares,
            pct(k.change),
            k.interval.0 * 100.0,
            k.interval.1 * 100.0,
            k.n.0,
            k.n.1,
            if k.passed { "ok" } else { "FAILED" }
        ));
    }
    out
}

fn warnings(r: &AbReport) -> Vec<String> {
    let mut out = r.warnings.clone();
    if let Some(p) = r.precision.as_ref().filter(|p| !p.reached) {
        let more = match (p.needed_pairs(), r.within_job.is_some()) {
            (Some(n), true) if !r.jobs.is_empty() && r.pairs > 0 => {
                let per_job = r.pairs as f64 / r.jobs.len() as f64;
                format!(
                    "; at this spread about {n} save pairs would reach it (--max-jobs {})",
                    (n as f64 / per_job).ceil() as usize
                )
            }
            (Some(n), false) => {
                format!("; at this spread about {n} pairs would reach it (--max-pairs {n})")
            }
            _ => String::new(),
        };
        out.push(format!(
            "precision ±{} % not reached after {} {}(s): {}{more}",
            trim(p.target * 100.0),
            r.pairs,
            pair_word(r),
            match (&p.widest, p.half_width) {
                (Some(m), Some(w)) => format!("{m} is ±{:.2} %", w * 100.0),
                (Some(m), None) => format!("{m} has no bounded interval"),
                _ => "no interval".to_owned(),
            }
        ));
    }
    if let Some(c) = &r.checks {
        out.extend(c.warnings());
    }
    let open = r.inconclusive();
    if !open.is_empty() {
        out.push(format!(
            "INCONCLUSIVE after {} {}(s): {} (neither a regression of {} % nor its absence could be shown; exit 1 only under --strict; more pairs: {})",
            r.pairs,
            pair_word(r),
            open.join(", "),
            trim(r.within_job.map_or(r.sequential.min_effect, |t| t.min_effect) * 100.0),
            if r.within_job.is_some() { "--max-jobs" } else { "--max-pairs" }
        ));
    }
    for m in (r.metrics.iter()).filter(|m| m.verdict == AbVerdict::NotSampled) {
        out.push(format!(
            "{}: {} (exit 1 only under --strict)",
            m.metric, m.detail
        ));
    }
    if let Some(note) = &r.golden_note {
        out.push(note.clone());
    }
    out
}

/// One line per measured job that did not pass: what failed, so a launch failure reads as one
/// and not as a regression of 0 pairs.
fn failed_jobs(r: &AbReport) -> Vec<String> {
    r.jobs
        .iter()
        .filter(|j| j.outcome.as_deref().is_some_and(|o| o != "passed"))
        .map(|j| {
            let mut line = format!(
                "job {} (arm {}) {}",
                j.run_id,
                j.arm,
                j.outcome.as_deref().unwrap_or("")
            );
            // A launch error's outcome holds its message already.
            if let Some(why) = j.failure.as_ref().filter(|w| !line.contains(w.as_str())) {
                line.push_str(&format!(": {why}"));
            }
            line
        })
        .collect()
}

/// The overall verdict as the reports word it: `job failed` when a job did not pass (the
/// timing verdicts then mean nothing), else the worst metric's; a metric not sampled, the
/// worst, is no failure (`pass, with metrics not sampled`, as `compare` says it).
pub fn verdict_label(r: &AbReport) -> &'static str {
    if r.job_failed() {
        return "job failed";
    }
    match r.verdict() {
        AbVerdict::NotSampled => "pass, with metrics not sampled",
        v => v.label(),
    }
}

/// The terminal report.
pub fn render_terminal(r: &AbReport) -> String {
    let mut s = header(r);
    for m in &r.metrics {
        s.push_str(&format!("  {}\n", metric_line(m)));
    }
    if let Some(line) = precision_line(r) {
        s.push_str(&format!("{line}\n"));
    }
    for line in check_lines(r) {
        s.push_str(&format!("{line}\n"));
    }
    if !r.goldens.is_empty() {
        s.push_str("B against the goldens (metrics not timed):\n");
    }
    for g in &r.goldens {
        let [golden, now, delta, _] = units::metric_cells(g);
        s.push_str(&format!(
            "  {} golden {golden}, B {now} ({delta}): {}\n",
            g.metric,
            g.verdict.label()
        ));
    }
    for w in warnings(r) {
        s.push_str(&format!("warning: {w}\n"));
    }
    for f in failed_jobs(r) {
        s.push_str(&format!("error: {f}\n"));
    }
    s.push_str(&format!("verdict: {}\n", verdict_label(r)));
    s
}

/// The markdown's heading, its line of what ran and the covariate's line.
fn markdown_head(r: &AbReport) -> String {
    let esc = crate::report::markdown::escape_md;
    let mut s = format!(
        "### goldgate A/B: {} on {} — {}\n\n",
        esc(&r.case),
        esc(&r.platform),
        verdict_label(r)
    );
    s.push_str(&format!(
        "A = {}; B = {}. {} {}(s), {} job(s), {}, seed {}; {}.\n\n",
        esc(&r.arms[0].describe()),
        esc(&r.arms[1].describe()),
        r.pairs,
        pair_word(r),
        r.jobs.len(),
        job_minutes(r),
        r.seed,
        esc(&mode_line(r))
    ));
    if let Some(c) = covariate_line(r) {
        s.push_str(&format!("{}.\n\n", esc(&c)));
    }
    s
}

/// The markdown's table: a row per metric and per golden row of B.
fn markdown_rows(r: &AbReport) -> String {
    let esc = crate::report::markdown::escape_md;
    let mut s = String::from(
        "| metric | A | B | change | interval | pairs | verdict |\n|---|---|---|---|---|---|---|\n",
    );
    for m in &r.metrics {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            esc(&m.metric),
            value(m, m.a),
            value(m, m.b),
            m.change.map_or_else(|| "—".to_owned(), pct),
            interval(m),
            m.pairs,
            verdict_cell(m.verdict)
        ));
    }
    for g in &r.goldens {
        let [golden, now, delta, _] = units::metric_cells(g);
        s.push_str(&format!(
            "| {} (B vs golden) | golden {golden} | {now} | {delta} | {} | — | {} |\n",
            esc(&g.metric),
            esc(&g.tolerance),
            g.verdict.label()
        ));
    }
    s
}

/// The markdown of the step summary and the PR comment.
pub fn render_markdown(r: &AbReport) -> String {
    let esc = crate::report::markdown::escape_md;
    let mut s = markdown_head(r);
    s.push_str(&markdown_rows(r));
    if let Some(line) = precision_line(r) {
        s.push_str(&format!("\n{}\n", esc(&line)));
    }
    if let Some(c) = &r.checks {
        s.push_str(&format!(
            "\nDesign checks on {} ({} % CI each; {} ab / {} ba pairs; the last pairs of each job hold {} A and {} B units):\n\n| check | compares | change | interval | units | result |\n|---|---|---|---|---|---|\n",
            esc(&c.metric),
            trim(c.level * 100.0),
            c.ab_pairs,
            c.ba_pairs,
            c.tail_a,
            c.tail_b
        ));
        for k in &c.checks {
            s.push_str(&format!(
                "| {} | {} | {} | {:+.1} to {:+.1} % | {} against {} | {} |\n",
                esc(&k.check),
                esc(&k.compares),
                pct(k.change),
                k.interval.0 * 100.0,
                k.interval.1 * 100.0,
                k.n.0,
                k.n.1,
                if k.passed { "ok" } else { "**failed**" }
            ));
        }
    }
    for w in warnings(r) {
        s.push_str(&format!("\n> **warning:** {}\n", esc(&w)));
    }
    for f in failed_jobs(r) {
        s.push_str(&format!("\n> **error:** {}\n", esc(&f)));
    }
    s.push('\n');
    s
}

fn verdict_cell(v: AbVerdict) -> String {
    match v {
        AbVerdict::Regression | AbVerdict::MissingMetric => format!("**{}**", v.label()),
        _ => v.label().to_owned(),
    }
}

/// A JUnit test's non-success with its message (the reason a check annotation shows).
fn non_success(kind: NonSuccessKind, message: &str, label: &str) -> TestCaseStatus {
    let mut s = TestCaseStatus::non_success(kind);
    s.set_message(message.to_owned()).set_type(label.to_owned());
    s
}

/// One test per metric and per golden row of B, with whether any failed. `strict_open`: the
/// run exited 1 on an open metric alone (`--strict`), so those are failures too.
fn metric_tests(r: &AbReport, strict_open: bool) -> (Vec<(String, TestCaseStatus, String)>, bool) {
    let mut tests = Vec::new();
    let mut failed = false;
    for m in &r.metrics {
        let line = metric_line(m);
        let status = match m.verdict {
            AbVerdict::Regression | AbVerdict::MissingMetric => {
                non_success(NonSuccessKind::Failure, &line, m.verdict.label())
            }
            AbVerdict::Inconclusive | AbVerdict::Undecided if strict_open => {
                let why = format!("{line} (exit 1 under --strict: no answer at the last pair)");
                non_success(NonSuccessKind::Failure, &why, m.verdict.label())
            }
            AbVerdict::NotSampled if strict_open => {
                let why = format!("{line} (exit 1 under --strict: {})", m.detail);
                non_success(NonSuccessKind::Failure, &why, m.verdict.label())
            }
            _ => TestCaseStatus::success(),
        };
        failed |= !matches!(status, TestCaseStatus::Success { .. });
        tests.push((m.metric.clone(), status, format!("{line}; {}", m.detail)));
    }
    for g in &r.goldens {
        let [golden, now, delta, _] = units::metric_cells(g);
        let line = format!(
            "{} golden {golden}, B {now} ({delta}), {}: {}",
            g.metric,
            g.tolerance,
            g.verdict.label()
        );
        let status = if matches!(g.verdict, Verdict::Regression | Verdict::MissingMetric) {
            failed = true;
            non_success(NonSuccessKind::Failure, &line, g.verdict.label())
        } else {
            TestCaseStatus::success()
        };
        tests.push((format!("{} (B vs golden)", g.metric), status, line));
    }
    (tests, failed)
}

/// JUnit: one suite, a test per metric and per golden row of B; a regression is a failure, a
/// failed job an error. Every non-success says why in its message — the metric, its change and
/// interval, or what the job failed on — since a check annotation shows the message alone; an
/// exit code no test explains (an interrupted run) gets a test of its own.
pub fn render_junit(r: &AbReport) -> Result<String, ReportError> {
    let strict_open = r.exit_code == Some(1)
        && !matches!(
            r.verdict(),
            AbVerdict::Regression | AbVerdict::MissingMetric | AbVerdict::Improvement
        );
    let (mut tests, mut explained) = metric_tests(r, strict_open);
    let failed = (r.jobs.iter()).filter(|j| j.outcome.as_deref().is_some_and(|o| o != "passed"));
    for (j, line) in failed.zip(failed_jobs(r)) {
        explained = true;
        let status = non_success(NonSuccessKind::Error, &line, "job-failed");
        tests.push((format!("job {}", j.run_id), status, line));
    }
    if let Some(code) = r.exit_code.filter(|c| *c != 0 && !explained) {
        let why = warnings(r).join("; ");
        let why = if why.is_empty() {
            verdict_label(r).to_owned()
        } else {
            why
        };
        let message = format!("exit {code}: {why}");
        let status = non_success(NonSuccessKind::Error, &message, "exit");
        tests.push(("a/b verdict".to_owned(), status, message));
    }
    let class = format!("ab {}", r.case);
    let mut suite = TestSuite::new(class.clone());
    suite.set_time(std::time::Duration::from_secs_f64(r.job_seconds.max(0.0)));
    for (name, status, out) in tests {
        let mut case = TestCase::new(name, status);
        case.set_classname(class.clone());
        case.set_system_out(out);
        suite.add_test_case(case);
    }
    let mut report = Report::new("goldgate ab");
    report.add_test_suite(suite);
    report.to_string().map_err(|e| ReportError::Junit {
        message: e.to_string(),
    })
}

/// `ab.json`: pretty-printed, with a trailing newline.
pub fn render_json(r: &AbReport) -> Result<String, ReportError> {
    let mut text = serde_json::to_string_pretty(r).map_err(|e| ReportError::Json {
        message: e.to_string(),
    })?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests;
