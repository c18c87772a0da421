//! Stage "compare": the statistics the rules are built from — medians, the coefficient of
//! variation, the bootstrap, the band's tolerance (`summary`) and the two-sample t-test on
//! per-job values (`t_test`).

pub mod summary;
pub(crate) mod t_test;
