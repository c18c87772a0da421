//! Stage "plan": the repository configuration `goldgate.yaml` (platforms, variant axes, metric rules).
