//! Stage "report": pure renderers (table, markdown, JUnit, JSON, SVG, annotations).

pub mod ab;
pub mod ab_covariate;
pub mod ab_study;
pub mod annotations;
pub mod comment;
pub mod error;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod history;
pub mod json;
pub mod junit;
pub mod markdown;
pub(crate) mod next_steps;
pub mod power;
pub mod site;
pub mod summary;
pub mod svg;
pub mod table;
pub(crate) mod units;
mod variant_rows;
pub mod variants;

pub use error::ReportError;
