//! Stage "plan": the rank check — the parallel layout a job's flags ask for (TP, PP, CP, EP,
//! ETP, distributed-optimizer instances) and the world sizes it can run on.
//!
//! Megatron splits the world into TP × PP × CP × DP for the dense layers and ETP × EP × PP ×
//! expert-DP for the experts, so a world size must be a multiple of both products (and of
//! `--num-distributed-optimizer-instances` × the dense product); the smallest is their least
//! common multiple. ETP defaults to TP, as in Megatron's argument checks. Virtual pipeline
//! stages (VPP) split layers, not ranks, and do not change it.

use std::fmt;

/// One parallelism size and the flag it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Size {
    /// `TP`, `PP`, `CP`, `EP`, `ETP`, `DO` (distributed-optimizer instances).
    pub name: &'static str,
    pub value: u64,
    /// The flag as written, or `None` for a default.
    pub flag: Option<String>,
}

/// A job's parallel layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub sizes: Vec<Size>,
}

/// Flags naming each size: Megatron's and the NeMo recipe keys.
const FLAGS: [(&str, &[&str]); 6] = [
    (
        "TP",
        &[
            "--tensor-model-parallel-size",
            "trainer.strategy.tensor_model_parallel_size",
        ],
    ),
    (
        "PP",
        &[
            "--pipeline-model-parallel-size",
            "trainer.strategy.pipeline_model_parallel_size",
        ],
    ),
    (
        "CP",
        &[
            "--context-parallel-size",
            "trainer.strategy.context_parallel_size",
        ],
    ),
    (
        "EP",
        &[
            "--expert-model-parallel-size",
            "trainer.strategy.expert_model_parallel_size",
        ],
    ),
    (
        "ETP",
        &[
            "--expert-tensor-parallel-size",
            "trainer.strategy.expert_tensor_parallel_size",
        ],
    ),
    ("DO", &["--num-distributed-optimizer-instances"]),
];

impl Layout {
    /// The layout of an argv (`--flag value` or NeMo's `key=value` words; the last one wins,
    /// as argparse takes it).
    pub fn of(argv: &[String]) -> Layout {
        let mut sizes = Vec::new();
        for (name, flags) in FLAGS {
            let found = argv.iter().enumerate().rev().find_map(|(i, w)| {
                flags.iter().find_map(|f| {
                    let value = match w.strip_prefix(f) {
                        Some("") => argv.get(i + 1)?.as_str(),
                        Some(rest) => rest.strip_prefix('=')?,
                        None => return None,
                    };
                    Some((value.parse::<u64>().ok()?.max(1), w.clone()))
                })
            });
            let (value, flag) = match found {
                Some((v, w)) => (v, Some(w.split('=').next().unwrap_or(&w).to_owned())),
                None if name == "ETP" => (Self::value_in(&sizes, "TP"), None),
                None => (1, None),
            };
            sizes.push(Size { name, value, flag });
        }
        Layout { sizes }
    }

    fn value_in(sizes: &[Size], name: &str) -> u64 {
        sizes.iter().find(|s| s.name == name).map_or(1, |s| s.value)
    }

    fn value(&self, name: &str) -> u64 {
        Self::value_in(&self.sizes, name)
    }

    /// TP × PP × CP × DO: what the dense layers need.
    pub fn dense(&self) -> u64 {
        ["TP", "PP", "CP", "DO"]
            .iter()
            .map(|n| self.value(n))
            .fold(1, u64::saturating_mul)
    }

    /// ETP × EP × PP: what the experts need.
    pub fn experts(&self) -> u64 {
        ["ETP", "EP", "PP"]
            .iter()
            .map(|n| self.value(n))
            .fold(1, u64::saturating_mul)
    }

    /// The smallest world size the layout runs on; every valid one is a multiple of it.
    pub fn min_world(&self) -> u64 {
        lcm(self.dense(), self.experts())
    }

    /// `Ok` when `world` ranks fit the layout; else why not.
    pub fn check(&self, world: u64) -> Result<(), String> {
        let need = self.min_world();
        if world >= need && world.is_multiple_of(need) {
            return Ok(());
        }
        let size = if world < need {
            format!("at least {need} ranks")
        } else {
            format!("a multiple of {need} ranks")
        };
        Err(format!("needs {size} ({self}), but gets {world}"))
    }

    /// Whether any size was set by a flag (a layout worth showing).
    pub fn is_explicit(&self) -> bool {
        self.sizes.iter().any(|s| s.flag.is_some() && s.value > 1)
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let part = |names: &[&str]| -> String {
            names
                .iter()
                .filter_map(|n| self.sizes.iter().find(|s| s.name == *n))
                .filter(|s| s.value > 1 || s.flag.is_some())
                .map(|s| format!("{} {}", s.name, s.value))
                .collect::<Vec<_>>()
                .join(" × ")
        };
        let dense = part(&["TP", "PP", "CP", "DO"]);
        let experts = part(&["EP", "ETP", "PP"]);
        let dense = if dense.is_empty() {
            "1".to_owned()
        } else {
            dense
        };
        if self.value("EP") > 1 {
            write!(
                f,
                "{dense} = {} for the model, {experts} = {} for the experts",
                self.dense(),
                self.experts()
            )
        } else {
            write!(f, "{dense} = {}", self.dense())
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

fn lcm(a: u64, b: u64) -> u64 {
    if a == 0 || b == 0 {
        return 0;
    }
    (a / gcd(a, b)).saturating_mul(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(words: &str) -> Layout {
        let argv: Vec<String> = words.split_whitespace().map(str::to_owned).collect();
        Layout::of(&argv)
    }

    #[test]
    fn minimum_world_sizes() {
        let cases = [
            ("--lr 1", 1),
            (
                "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2",
                4,
            ),
            (
                "--tensor-model-parallel-size 2 --expert-model-parallel-size 64 --expert-tensor-parallel-size 1",
                64,
            ),
            (
                "--tensor-model-parallel-size 2 --expert-model-parallel-size 4",
                8,
            ),
            (
                "--context-parallel-size 2 --pipeline-model-parallel-size 2 --expert-model-parallel-size 2 --expert-tensor-parallel-size 1",
                4,
            ),
            (
                "--tensor-model-parallel-size 2 --num-distributed-optimizer-instances 2",
                4,
            ),
            (
                "trainer.strategy.tensor_model_parallel_size=4 trainer.strategy.pipeline_model_parallel_size=2",
                8,
            ),
            (
                "--tensor-model-parallel-size 1 --tensor-model-parallel-size 4",
                4,
            ),
        ];
        for (words, want) in cases {
            assert_eq!(layout(words).min_world(), want, "{words}");
        }
    }

    #[test]
    fn the_check_names_flags_and_numbers() {
        let l = layout(
            "--tensor-model-parallel-size 2 --expert-model-parallel-size 64 --expert-tensor-parallel-size 1",
        );
        assert_eq!(
            l.check(1).unwrap_err(),
            "needs at least 64 ranks (TP 2 = 2 for the model, EP 64 × ETP 1 = 64 for the experts), but gets 1"
        );
        assert!(l.check(128).is_ok());
        let l = layout("--tensor-model-parallel-size 4");
        assert_eq!(
            l.check(6).unwrap_err(),
            "needs a multiple of 4 ranks (TP 4 = 4), but gets 6"
        );
        assert!(layout("--lr 1").check(8).is_ok());
    }
}
