//! Stage "report": pure renderers (table, markdown, JUnit, JSON, SVG, annotations).

#[cfg(test)]
mod fixtures;
pub mod markdown;
pub mod units;
pub mod variants;
