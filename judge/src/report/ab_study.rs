//! Stage "report": the A/B resampling study as markdown (docs/book/src/results/ab-study.md).

use crate::compare::ab::metric::AbVerdict;
use crate::compare::ab::study::{DesignRow, RuleRow, SessionModel, StudyOptions};

fn pct(v: f64) -> String {
    format!("{:.1} %", v * 100.0)
}

/// The real interleaved session: A's and B's job values and the estimate after each pair.
pub type RealPairs = (Vec<f64>, Vec<f64>, Vec<(usize, f64, f64, f64, AbVerdict)>);

/// The whole study.
pub fn render(
    models: &[SessionModel],
    designs: &[DesignRow],
    rules: &[RuleRow],
    real: Option<&RealPairs>,
    opts: &StudyOptions,
) -> String {
    let mut s = sessions(models);
    s.push_str(&designs_table(designs, opts));
    s.push_str(&rules_table(rules));
    if let Some(real) = real {
        s.push_str(&real_table(real));
    }
    s
}

fn sessions(models: &[SessionModel]) -> String {
    let mut s = String::from("## Sessions (the records the model is fitted to)\n\n");
    s.push_str("| session | jobs | median save | job-to-job spread | save spread | between-job part | mean job wall |\n|---|---|---|---|---|---|---|\n");
    for m in models {
        s.push_str(&format!(
            "| {} | {} | {:.1} ms | {} | {} | {} | {:.1} s |\n",
            m.name,
            m.jobs,
            m.median_save * 1000.0,
            pct(m.job_spread),
            pct(m.save_spread),
            pct(m.between),
            m.mean_wall
        ));
    }
    s
}

fn designs_table(designs: &[DesignRow], opts: &StudyOptions) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "\n## goldgate ab, sequential (alpha 1 % over all looks, {} synthetic sequences per cell)\n\n",
        opts.draws
    ));
    s.push_str("| saves/job | min effect | spread floor | max pairs | A/A false alarms | A/A pass | +5 % | +10 % | +15 % | +20 % | +30 % | pairs at +10 % (mean / p95) | pairs at +30 % (mean / p95) | GPU-min at +10 % | GPU-min A/A |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for d in designs {
        let at = |size: f64| d.sizes.iter().find(|r| (r.size - size).abs() < 1e-9);
        let caught = |size: f64| at(size).map_or("—".to_owned(), |r| pct(r.regression));
        let pairs = |size: f64| {
            at(size).map_or("—".to_owned(), |r| {
                format!("{:.1} / {}", r.mean_pairs, r.p95_pairs)
            })
        };
        let minutes =
            |size: f64| at(size).map_or("—".to_owned(), |r| format!("{:.1}", r.gpu_minutes));
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            d.saves,
            pct(d.seq.min_effect),
            pct(d.seq.spread),
            d.seq.max_pairs,
            caught(0.0),
            at(0.0).map_or("—".to_owned(), |r| pct(r.pass)),
            caught(0.05),
            caught(0.10),
            caught(0.15),
            caught(0.20),
            caught(0.30),
            pairs(0.10),
            pairs(0.30),
            minutes(0.10),
            minutes(0.0)
        ));
    }
    s
}

fn rules_table(rules: &[RuleRow]) -> String {
    let mut s = String::new();
    s.push_str("\n## Today's rules on the same synthetic jobs (golden from the other session)\n\n");
    let sizes: Vec<f64> = rules
        .first()
        .map_or(Vec::new(), |r| r.flagged.iter().map(|(x, _)| *x).collect());
    let heads: Vec<String> = sizes
        .iter()
        .map(|x| {
            if *x == 0.0 {
                "A/A flagged".to_owned()
            } else {
                format!("+{:.0} %", x * 100.0)
            }
        })
        .collect();
    s.push_str(&format!(
        "| rule | candidate jobs | {} | GPU-min per decision |\n|---|---|{}---|\n",
        heads.join(" | "),
        "---|".repeat(heads.len())
    ));
    for r in rules {
        let cells: Vec<String> = r.flagged.iter().map(|(_, v)| pct(*v)).collect();
        s.push_str(&format!(
            "| {} | {} | {} | {:.1} |\n",
            r.rule,
            r.jobs,
            cells.join(" | "),
            r.gpu_minutes
        ));
    }
    s
}

fn real_table((a, b, looks): &RealPairs) -> String {
    let mut s = String::new();
    s.push_str("\n## The real interleaved session (A B B A A B, B planted +10 %), judged as `goldgate ab` would\n\n");
    let ms = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{:.0}", x * 1000.0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    s.push_str(&format!(
        "A {} ms; B {} ms (per-job medians of saves 2..11).\n\n",
        ms(a),
        ms(b)
    ));
    s.push_str("| pairs | change | interval | verdict |\n|---|---|---|---|\n");
    for (k, c, lo, hi, v) in looks {
        s.push_str(&format!(
            "| {k} | {:+.1} % | {:+.1} to {:+.1} % | {} |\n",
            c * 100.0,
            lo * 100.0,
            hi * 100.0,
            v.label()
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::ab::study::{self, Normal, Session};
    use crate::compare::stats::summary::SplitMix64;
    use goldgate_core::config::Sequential;

    #[test]
    fn the_study_markdown() {
        let mut rng = Normal(SplitMix64::new(9));
        let jobs: Vec<Vec<f64>> = (0..4)
            .map(|j| {
                (0..10)
                    .map(|i| 0.4 + 0.01 * f64::from(j) + 0.002 * f64::from(i % 3))
                    .collect()
            })
            .collect();
        let session = Session {
            name: "s1".into(),
            jobs,
            walls: vec![60.0; 4],
        };
        let models = vec![SessionModel::fit(&session, &mut rng).unwrap()];
        let opts = StudyOptions {
            draws: 50,
            sizes: vec![0.3],
            seed: 1,
            per_save_seconds: 0.85,
            warmup_jobs: 1,
        };
        let seq = Sequential {
            alpha: 0.01,
            min_effect: 0.03,
            max_pairs: 6,
            min_pairs: 1,
            spread: 0.03,
            spread_df: 8,
        };
        let designs = vec![study::design(&models, 10, &seq, &opts)];
        let rules = study::todays_rules(&models, 0.55, &opts);
        let a = vec![0.36, 0.38];
        let b = vec![0.40, 0.41];
        let looks = study::real_pairs(&a, &b, &seq);
        insta::assert_snapshot!(render(
            &models,
            &designs,
            &rules,
            Some(&(a, b, looks)),
            &opts
        ));
    }
}
