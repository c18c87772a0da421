//! Stage "launch": process groups, launchers, timeouts, signals and outcome classification.
