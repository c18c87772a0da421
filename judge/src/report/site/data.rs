//! Stage "report": what the site is drawn from — a case's plots (a series, its points and
//! change points) and what every page shares. Plain data: the pages (`page`) and each plot
//! (`plot`) read it, and it reads neither.

use crate::history::SeriesKey;
use crate::history::changes::ChangePoint;
use crate::history::series::{Annotation, Point};

/// One plot: a series, its points and change points.
#[derive(Clone, Debug, PartialEq)]
pub struct SitePlot {
    pub key: SeriesKey,
    pub points: Vec<Point>,
    pub changes: Vec<ChangePoint>,
}

/// One page: every series of a case.
#[derive(Clone, Debug, PartialEq)]
pub struct SiteCase {
    pub case: String,
    pub plots: Vec<SitePlot>,
    pub annotations: Vec<Annotation>,
}

/// What every page shares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteOptions {
    /// A run's link: `{run}` is replaced by its run id and `{path}` by its results.json path;
    /// `None` links nothing (the tooltip shows the stored path).
    pub run_url: Option<String>,
    /// The store it was made from, as shown (passwords hidden).
    pub source: String,
    /// When it was made (RFC 3339).
    pub generated: String,
}

/// The first 12 characters of a commit, as the pages name it.
pub(crate) fn short(commit: &str) -> String {
    commit.chars().take(12).collect()
}
