//! Stage "compare": rules, statistics and verdicts; `bless` and `calibrate`.
