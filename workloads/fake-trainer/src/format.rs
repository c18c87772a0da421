//! Output: pure renderers for every line fake-trainer prints, byte for byte in Megatron's formats
//! (`/work/shared/docs/megatron-format.md` §4), with or without the 2026 leading timestamp.

use std::time::{SystemTime, UNIX_EPOCH};

/// A wall-clock instant broken into UTC calendar fields (Megatron prints `datetime.now()`; CI
/// machines run in UTC, and std has no time-zone database).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    micros: u32,
}

impl Stamp {
    pub(crate) fn now() -> Stamp {
        Stamp::from_system(SystemTime::now())
    }

    pub(crate) fn from_system(t: SystemTime) -> Stamp {
        // A clock before 1970 is a broken host; print the epoch rather than fail the run.
        let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = d.as_secs();
        let (year, month, day) = civil_from_days((secs / 86_400) as i64);
        let rem = secs % 86_400;
        Stamp {
            year,
            month,
            day,
            hour: (rem / 3600) as u32,
            minute: (rem / 60 % 60) as u32,
            second: (rem % 60) as u32,
            micros: d.subsec_micros(),
        }
    }

    /// `2026-11-29 20:16:15.066886`, Python's `str(datetime.now())`.
    pub(crate) fn full(&self) -> String {
        format!("{}.{:06}", self.seconds(), self.micros)
    }

    /// `2026-11-29 20:16:15`, Python's `strftime('%Y-%m-%d %H:%M:%S')`.
    pub(crate) fn seconds(&self) -> String {
        format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

/// Days since 1970-01-01 to (year, month, day); Howard Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `lead` spaces, then ` [stamp] ` when the new format is on, then the message.
fn stamped(lead: &str, stamp: Option<&Stamp>, msg: &str) -> String {
    match stamp {
        Some(s) => format!("{lead}[{}] {msg}", s.full()),
        None => format!("{lead}{msg}"),
    }
}

/// Python's `'{:.6E}'.format(v)`: six decimals and an exponent of at least two digits.
pub(crate) fn sci(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "NAN".into()
        } else if v > 0.0 {
            "INF".into()
        } else {
            "-INF".into()
        };
    }
    let rust = format!("{v:.6E}");
    let (mantissa, exp) = rust.split_once('E').unwrap_or((&rust, "0"));
    let (sign, digits) = match exp.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exp),
    };
    format!("{mantissa}E{sign}{digits:0>2}")
}

/// What one iteration line reports (averages over the log interval where Megatron averages).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct IterationStats {
    pub(crate) iteration: u64,
    pub(crate) train_iters: u64,
    pub(crate) consumed_samples: u64,
    pub(crate) elapsed_ms: f64,
    pub(crate) learning_rate: f64,
    pub(crate) global_batch_size: u64,
    pub(crate) lm_loss: f64,
    pub(crate) loss_scale: f64,
    pub(crate) grad_norm: f64,
    pub(crate) num_zeros: f64,
    pub(crate) params_norm: f64,
    pub(crate) skipped: u64,
    pub(crate) nan: u64,
}

/// Megatron's `training_log` line, fields in its order.
pub(crate) fn iteration_line(stamp: Option<&Stamp>, s: &IterationStats) -> String {
    let msg = format!(
        "iteration {:8}/{:8} | consumed samples: {:12} | elapsed time per iteration (ms): {:.1} | \
         learning rate: {} | global batch size: {:5} | lm loss: {} | loss scale: {:.1} | \
         grad norm: {:.3} | num zeros: {:.1} | params norm: {:.3} | \
         number of skipped iterations: {:3} | number of nan iterations: {:3} |",
        s.iteration,
        s.train_iters,
        s.consumed_samples,
        s.elapsed_ms,
        sci(s.learning_rate),
        s.global_batch_size,
        sci(s.lm_loss),
        s.loss_scale,
        s.grad_norm,
        s.num_zeros,
        s.params_norm,
        s.skipped,
        s.nan,
    );
    stamped(" ", stamp, &msg)
}

/// Memory counters in bytes, printed as MB (2^20 bytes) like Megatron's `report_memory`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MemoryStats {
    pub(crate) allocated: u64,
    pub(crate) max_allocated: u64,
    pub(crate) reserved: u64,
    pub(crate) max_reserved: u64,
}

const MB: f64 = 1024.0 * 1024.0;

/// `[Rank 0] (after 50 iterations) memory (MB) | allocated: … | max reserved: …`.
pub(crate) fn memory_line(name: &str, m: &MemoryStats) -> String {
    format!(
        "[Rank 0] {name} memory (MB) | allocated: {:.2} | max allocated: {:.2} | reserved: {:.2} | \
         max reserved: {:.2}",
        m.allocated as f64 / MB,
        m.max_allocated as f64 / MB,
        m.reserved as f64 / MB,
        m.max_reserved as f64 / MB,
    )
}

/// Megatron's `--timing-log-option`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimingOption {
    MinMax,
    Max,
    All,
}

/// The timers block for one timer on one rank, as `megatron.core.timers` logs it; the first line
/// carries the logger prefix in the new format.
pub(crate) fn timer_block(option: TimingOption, new_format: bool, name: &str, ms: f64) -> String {
    let prefix = if new_format {
        "INFO:megatron.core.timers:"
    } else {
        ""
    };
    let dotted = format!("{name} ");
    let dotted = format!("{dotted:.<48}");
    match option {
        TimingOption::MinMax => {
            format!("{prefix}(min, max) time across ranks (ms):\n    {dotted}: ({ms:.2}, {ms:.2})")
        }
        TimingOption::Max => format!("{prefix}max time across ranks (ms):\n    {dotted}: {ms:.2}"),
        TimingOption::All => {
            format!("{prefix}times across ranks (ms):\n  {name}:\n     rank  0: {ms:.2}")
        }
    }
}

pub(crate) fn saving_line(stamp: Option<&Stamp>, iteration: u64, dir: &str, fmt: &str) -> String {
    let msg = format!("saving checkpoint at iteration {iteration:7} to {dir} in {fmt} format");
    stamped("", stamp, &msg)
}

/// The old format (no timestamp) also lacks the `gtp_remat` field.
pub(crate) fn saved_line(stamp: Option<&Stamp>, iteration: u64, dir: &str) -> String {
    let shards = if stamp.is_some() {
        "t 1/1, gtp_remat 1/1, p 1/1"
    } else {
        "t 1/1, p 1/1"
    };
    let msg =
        format!("successfully saved checkpoint from iteration {iteration:7} to {dir} [ {shards} ]");
    stamped("  ", stamp, &msg)
}

pub(crate) fn scheduled_line(stamp: Option<&Stamp>, iteration: u64, dir: &str) -> String {
    let msg = format!("scheduled an async checkpoint save at iteration {iteration:7} to {dir}");
    stamped("  ", stamp, &msg)
}

pub(crate) fn loading_line(stamp: Option<&Stamp>, iteration: u64, dir: &str) -> String {
    stamped(
        " ",
        stamp,
        &format!("loading checkpoint from {dir} at iteration {iteration}"),
    )
}

pub(crate) fn loaded_line(stamp: Option<&Stamp>, iteration: u64, dir: &str) -> String {
    let msg = format!(
        "successfully loaded checkpoint from {dir} [ t 1/1, p 1/1 ] at iteration {iteration}"
    );
    stamped("  ", stamp, &msg)
}

pub(crate) const PREVIOUS_SAVE_WARNING: &str =
    "WARNING: Starting a checkpoint save before previous has finished.";

/// Megatron's `print_datetime('after training is done')` (it ends with a space).
pub(crate) fn done_line(stamp: &Stamp) -> String {
    format!("[after training is done] datetime: {} ", stamp.seconds())
}

pub(crate) fn exiting_line(iteration: u64) -> String {
    format!("exiting program at iteration {iteration}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn stamp() -> Stamp {
        // 2026-11-29 20:16:15.066886 UTC
        Stamp::from_system(UNIX_EPOCH + Duration::from_micros(1_795_983_375_066_886))
    }

    #[test]
    fn timestamps_are_python_datetime_text() {
        assert_eq!(stamp().full(), "2026-11-29 20:16:15.066886");
        assert_eq!(
            Stamp::from_system(UNIX_EPOCH).full(),
            "1970-01-01 00:00:00.000000"
        );
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(Stamp::from_system(leap).seconds(), "2000-02-29 00:00:00");
    }

    #[test]
    fn sci_matches_python() {
        for (v, want) in [
            (2.952633, "2.952633E+00"),
            (1e-5, "1.000000E-05"),
            (10.93341, "1.093341E+01"),
            (0.0, "0.000000E+00"),
            (1.5e120, "1.500000E+120"),
            (-3.25e-7, "-3.250000E-07"),
            (f64::NAN, "NAN"),
        ] {
            assert_eq!(sci(v), want, "{v}");
        }
    }

    #[test]
    fn iteration_line_matches_the_h200_log() {
        let s = IterationStats {
            iteration: 60,
            train_iters: 60,
            consumed_samples: 1920,
            elapsed_ms: 321.2,
            learning_rate: 1e-5,
            global_batch_size: 32,
            lm_loss: 2.952633,
            loss_scale: 1.0,
            grad_norm: 2.21,
            num_zeros: 27854.0,
            params_norm: 274.878,
            skipped: 0,
            nan: 0,
        };
        assert_eq!(
            iteration_line(Some(&stamp()), &s),
            " [2026-11-29 20:16:15.066886] iteration       60/      60 | consumed samples:         1920 | elapsed time per iteration (ms): 321.2 | learning rate: 1.000000E-05 | global batch size:    32 | lm loss: 2.952633E+00 | loss scale: 1.0 | grad norm: 2.210 | num zeros: 27854.0 | params norm: 274.878 | number of skipped iterations:   0 | number of nan iterations:   0 |"
        );
        assert!(iteration_line(None, &s).starts_with(" iteration       60/      60 | consumed"));
    }

    #[test]
    fn memory_line_matches_megatron() {
        let m = MemoryStats {
            allocated: 3_666_513_756,
            max_allocated: 16_768_554_762,
            reserved: 17_477_664_768,
            max_reserved: 17_477_664_768,
        };
        assert_eq!(
            memory_line("(after 50 iterations)", &m),
            "[Rank 0] (after 50 iterations) memory (MB) | allocated: 3496.66 | max allocated: 15991.74 | reserved: 16668.00 | max reserved: 16668.00"
        );
    }

    #[test]
    fn timer_blocks_match_megatron() {
        assert_eq!(
            timer_block(TimingOption::MinMax, true, "save-checkpoint", 3485.514),
            "INFO:megatron.core.timers:(min, max) time across ranks (ms):\n    save-checkpoint ................................: (3485.51, 3485.51)"
        );
        assert_eq!(
            timer_block(TimingOption::Max, false, "save-checkpoint", 12.0),
            "max time across ranks (ms):\n    save-checkpoint ................................: 12.00"
        );
        assert_eq!(
            timer_block(TimingOption::All, false, "save-checkpoint", 1.5),
            "times across ranks (ms):\n  save-checkpoint:\n     rank  0: 1.50"
        );
    }

    #[test]
    fn checkpoint_lines_match_megatron() {
        let st = Some(Stamp::from_system(
            UNIX_EPOCH + Duration::from_micros(1_795_983_375_068_999),
        ));
        assert_eq!(
            saving_line(st.as_ref(), 60, "/tmp/ckpt", "torch_dist"),
            "[2026-11-29 20:16:15.068999] saving checkpoint at iteration      60 to /tmp/ckpt in torch_dist format"
        );
        assert_eq!(
            saved_line(st.as_ref(), 60, "/tmp/ckpt"),
            "  [2026-11-29 20:16:15.068999] successfully saved checkpoint from iteration      60 to /tmp/ckpt [ t 1/1, gtp_remat 1/1, p 1/1 ]"
        );
        assert_eq!(
            saved_line(None, 60, "/tmp/ckpt"),
            "  successfully saved checkpoint from iteration      60 to /tmp/ckpt [ t 1/1, p 1/1 ]"
        );
        assert_eq!(
            scheduled_line(None, 40, "/tmp/ckpt"),
            "  scheduled an async checkpoint save at iteration      40 to /tmp/ckpt"
        );
        assert_eq!(
            done_line(&stamp()),
            "[after training is done] datetime: 2026-11-29 20:16:15 "
        );
        assert_eq!(exiting_line(60), "exiting program at iteration 60");
        assert_eq!(
            loading_line(None, 50, "/c"),
            " loading checkpoint from /c at iteration 50"
        );
        assert_eq!(
            loaded_line(None, 50, "/c"),
            "  successfully loaded checkpoint from /c [ t 1/1, p 1/1 ] at iteration 50"
        );
    }
}
