//! Stage "report": the covariate's resampling study as markdown
//! (docs/book/src/results/ab-study-covariate.md, `goldgate ab-study --covariate`).

use crate::compare::ab::covariate::study::{Cell, Design, Fit, RealLook};
use goldgate_core::config::Sequential;

fn pct(v: f64) -> String {
    format!("{:.1} %", v * 100.0)
}

fn signed(v: f64) -> String {
    format!("{:+.1} %", v * 100.0)
}

/// The whole study: the fit, the designs on planted saves, the designs under a B that moves
/// iteration time, and the real session.
pub fn render(
    fit: &Fit,
    seq: &Sequential,
    designs: &[Design],
    draws: usize,
    real: &[RealLook],
) -> String {
    let mut s = fit_table(fit);
    s.push_str(&format!(
        "\n## The sequential test on saves, plain and with the covariate ({draws} synthetic sequences per cell; alpha {} over {} looks, min effect {} %, save floor of the plain test {})\n\n",
        seq.alpha,
        seq.max_pairs,
        seq.min_effect * 100.0,
        pct(seq.spread)
    ));
    s.push_str(&plants_table(designs, |c| c.plant.iteration == 0.0, false));
    s.push_str(
        "\n## A B that moves iteration time, saves unchanged (what the rule must catch)\n\n",
    );
    s.push_str("Each cell: regression / improvement of the save, and the share of sequences that ended with the covariate switched off.\n\n");
    s.push_str(&plants_table(designs, |c| c.plant.iteration != 0.0, true));
    if !real.is_empty() {
        s.push_str(&real_table(real));
    }
    s
}

fn fit_table(f: &Fit) -> String {
    format!(
        "## The records\n\n| jobs | groups | SD of ln(save) | SD of ln(iteration) | correlation | slope (leave one group out) | SD of the adjusted save | change | mean job wall |\n|---|---|---|---|---|---|---|---|---|\n| {} | {} | {} | {} | {:.2} | {:.2} ({:.2} to {:.2}) | {} | {} | {:.1} s |\n",
        f.jobs,
        f.groups,
        pct(f.save_sd),
        pct(f.iteration_sd),
        f.correlation,
        f.slope,
        f.slope_range.0,
        f.slope_range.1,
        pct(f.adjusted_sd),
        signed(f.adjusted_sd / f.save_sd - 1.0),
        f.mean_wall
    )
}

fn design_name(d: &Design) -> String {
    match d.covariate {
        None => "plain".to_owned(),
        Some(c) => format!(
            "covariate, slope {:.2}, floor {}, guard {}",
            c.slope,
            pct(c.spread),
            pct(d.guard)
        ),
    }
}

fn plants_table(designs: &[Design], keep: impl Fn(&Cell) -> bool, iteration: bool) -> String {
    let Some(first) = designs.first() else {
        return String::new();
    };
    let cells: Vec<&Cell> = first.cells.iter().filter(|c| keep(c)).collect();
    let mut s = String::from("| design |");
    for c in &cells {
        s.push_str(&match (iteration, c.plant.save) {
            (true, _) => format!(" iteration {} |", signed(c.plant.iteration)),
            (false, 0.0) => " A/A false alarms |".to_owned(),
            (false, size) => format!(" save {} |", signed(size)),
        });
    }
    if !iteration {
        s.push_str(" pairs at +10 % | GPU-min at +10 % | covariate off at A/A |");
    }
    s.push_str(&format!(
        "\n|---|{}\n",
        "---|".repeat(cells.len() + 3 * usize::from(!iteration))
    ));
    for d in designs {
        s.push_str(&format!("| {} |", design_name(d)));
        let mine: Vec<&Cell> = d.cells.iter().filter(|c| keep(c)).collect();
        for c in &mine {
            s.push_str(&match (iteration, d.covariate) {
                (true, Some(_)) => format!(
                    " {} / {} (off {}) |",
                    pct(c.regression),
                    pct(c.improvement),
                    pct(c.off)
                ),
                (true, None) => format!(" {} / {} |", pct(c.regression), pct(c.improvement)),
                (false, _) => format!(" {} |", pct(c.regression)),
            });
        }
        if !iteration {
            let ten = mine.iter().find(|c| (c.plant.save - 0.10).abs() < 1e-9);
            s.push_str(&ten.map_or(" — | — |".to_owned(), |c| {
                format!(" {:.1} | {:.1} |", c.mean_pairs, c.gpu_minutes)
            }));
            let aa = mine.iter().find(|c| c.plant.save == 0.0);
            s.push_str(&match (d.covariate, aa) {
                (Some(_), Some(c)) => format!(" {} |", pct(c.off)),
                _ => " — |".to_owned(),
            });
        }
        s.push('\n');
    }
    s
}

fn real_table(real: &[RealLook]) -> String {
    let mut s = String::from(
        "\n## The real interleaved session, judged plain and with the covariate\n\n| pairs | plain change | plain interval | adjusted change | adjusted interval | covariate | verdict |\n|---|---|---|---|---|---|---|\n",
    );
    for l in real {
        s.push_str(&format!(
            "| {} | {} | {} to {} | {} | {} to {} | {} | {} |\n",
            l.pairs,
            signed(l.plain.0),
            signed(l.plain.1),
            signed(l.plain.2),
            signed(l.adjusted.0),
            signed(l.adjusted.1),
            signed(l.adjusted.2),
            if l.applied { "applied" } else { "off" },
            l.verdict.label()
        ));
    }
    s
}
