//! In-job A/B in the fake job, as goldgate's probe does it for a Python job
//! (`record/src/observe/probe/sitecustomize.py`, same environment, same switches):
//! `GOLDGATE_INJOB_SCHEDULE` holds one letter per save (`-` outside the design, `a` or `b`),
//! `GOLDGATE_INJOB_A` / `GOLDGATE_INJOB_B` each arm's switches. Before a save's window opens the
//! save's arm is put in force; it stays until the next save. The switches the fake job has:
//! `save-delay=S` (sleeps S seconds inside the window) and `empty-cache=remove|add` (the
//! planted `empty_cache` calls of `GOLDGATE_PLANT_EMPTY_CACHE` left out, or one more). A
//! switch the fake job has no equivalent of (`gc-threshold`) is refused at start (exit 2).

use std::time::Duration;

/// One arm's switches.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Switches {
    pub(crate) save_delay: Duration,
    /// `Some(false)`: remove the planted calls; `Some(true)`: one call more.
    pub(crate) empty_cache_add: Option<bool>,
}

/// The schedule and both arms.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct InJob {
    schedule: Vec<u8>,
    arms: [Switches; 2],
}

impl InJob {
    /// From the environment; `Ok(None)` when no schedule is set.
    pub(crate) fn from_env() -> Result<Option<InJob>, String> {
        let var = |name: &str| std::env::var(name).unwrap_or_default();
        InJob::parse(
            &var("GOLDGATE_INJOB_SCHEDULE"),
            &var("GOLDGATE_INJOB_A"),
            &var("GOLDGATE_INJOB_B"),
        )
    }

    fn parse(schedule: &str, a: &str, b: &str) -> Result<Option<InJob>, String> {
        if schedule.is_empty() {
            return Ok(None);
        }
        if let Some(c) = schedule.chars().find(|c| !matches!(c, 'a' | 'b' | '-')) {
            return Err(format!("GOLDGATE_INJOB_SCHEDULE: `{c}` is not a, b or -"));
        }
        let arm = |name: &str, text: &str| {
            parse_switches(text).map_err(|e| format!("GOLDGATE_INJOB_{name}: {e}"))
        };
        Ok(Some(InJob {
            schedule: schedule.as_bytes().to_vec(),
            arms: [arm("A", a)?, arm("B", b)?],
        }))
    }

    /// The arm of save `index` (0-based) and its switches: `None` for a save outside the
    /// design (it runs under arm A's switches).
    pub(crate) fn arm(&self, index: usize) -> (Option<char>, &Switches) {
        match self.schedule.get(index) {
            Some(b'a') => (Some('a'), &self.arms[0]),
            Some(b'b') => (Some('b'), &self.arms[1]),
            _ => (None, &self.arms[0]),
        }
    }
}

fn parse_switches(text: &str) -> Result<Switches, String> {
    let mut out = Switches::default();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| format!("switch `{item}` is not NAME=VALUE"))?;
        match key {
            "save-delay" => {
                let s: f64 = value
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                    .ok_or_else(|| format!("save-delay takes seconds, not `{value}`"))?;
                out.save_delay = Duration::from_secs_f64(s);
            }
            "empty-cache" => {
                out.empty_cache_add = Some(match value {
                    "add" => true,
                    "remove" => false,
                    _ => return Err(format!("empty-cache takes remove or add, not `{value}`")),
                });
            }
            _ => return Err(format!("fake-trainer cannot switch `{key}` while it runs")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_picks_each_saves_arm_and_switches() {
        let j = InJob::parse("-ab", "", "save-delay=0.25,empty-cache=add")
            .unwrap()
            .unwrap();
        assert_eq!(j.arm(0).0, None);
        assert_eq!(j.arm(1).0, Some('a'));
        let (arm, b) = j.arm(2);
        assert_eq!(arm, Some('b'));
        assert_eq!(b.save_delay, Duration::from_millis(250));
        assert_eq!(b.empty_cache_add, Some(true));
        assert_eq!(j.arm(9).0, None, "past the schedule: outside the design");
        assert_eq!(InJob::parse("", "x", "y").unwrap(), None);
    }

    #[test]
    fn a_switch_the_fake_job_lacks_is_refused() {
        let e = InJob::parse("ab", "", "gc-threshold=0.8").unwrap_err();
        assert!(
            e.contains("GOLDGATE_INJOB_B") && e.contains("gc-threshold"),
            "{e}"
        );
        assert!(InJob::parse("ax", "", "").unwrap_err().contains("`x`"));
    }
}
