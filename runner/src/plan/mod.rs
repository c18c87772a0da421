//! Stage "plan": variants, job expansion, placeholders and the repro script.
