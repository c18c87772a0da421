//! Stage "run", local executor: drives the memory samplers and the node I/O watch around one
//! launch on this machine and hands what they saw back as [`Sampled`], plus goldgate's own CPU
//! time while the job ran.

use std::time::Duration;

use crate::metrics::Sampled;
use crate::observe::node::NodeWatch;
use crate::observe::sample::{Sampler, SamplerConfig};

/// Samplers running for one launch.
pub(crate) struct Running {
    sampler: Option<Sampler>,
    error: Option<String>,
    cpu_at_start: Option<f64>,
    node: NodeWatch,
}

/// Starts the samplers and the node I/O watch (`node`, started by the caller right after the
/// settle step); returns once their baselines are taken (spawn the job after this).
pub(crate) fn start(
    interval: Duration,
    cuda_visible_devices: Option<&str>,
    node: NodeWatch,
) -> Running {
    let config = SamplerConfig {
        interval,
        cuda_visible_devices: cuda_visible_devices.map(str::to_owned),
        ..SamplerConfig::default()
    };
    let cpu_at_start = own_cpu_seconds();
    match Sampler::start(&config) {
        Ok(sampler) => Running {
            sampler: Some(sampler),
            error: None,
            cpu_at_start,
            node,
        },
        Err(e) => Running {
            sampler: None,
            error: Some(format!("memory samplers did not start: {e}")),
            cpu_at_start,
            node,
        },
    }
}

impl Running {
    /// Points the samplers at the job's process group.
    pub(crate) fn watch(&self, pgid: u32) {
        if let Some(s) = &self.sampler {
            s.attach(pgid);
        }
    }

    /// Stops the samplers and returns what they recorded on `host`.
    pub(crate) fn stop(self, host: String) -> Sampled {
        let observer_cpu_seconds = match (self.cpu_at_start, own_cpu_seconds()) {
            (Some(a), Some(b)) => Some((b - a).max(0.0)),
            _ => None,
        };
        let summary = self.sampler.map(Sampler::stop);
        let mut warnings: Vec<String> = self.error.into_iter().collect();
        if let Some(s) = &summary {
            warnings.extend(s.warnings.iter().cloned());
            // NVML's own failure is among the sampler's warnings already: one line, not two.
            if let Some(why) = &s.gpu_unavailable
                && !s.warnings.contains(why)
            {
                warnings.push(format!("no GPU memory figures: {why}"));
            }
        }
        Sampled {
            host,
            summary,
            warnings,
            observer_cpu_seconds,
            io: Some(self.node.finish()),
        }
    }
}

/// utime + stime of this process (all threads) from `/proc/self/stat`, in seconds.
/// `/proc` reports these in USER_HZ, which Linux fixes at 100 for user space.
pub(crate) fn own_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Field 2 (comm) may hold spaces; the fields after its closing parenthesis are fixed.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cpu_time_is_readable_and_grows() {
        let a = own_cpu_seconds().unwrap();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = own_cpu_seconds().unwrap();
        assert!(b >= a);
    }
}
