//! Stage "report": `goldgate history site` — a static site of the history store, no server and
//! nothing fetched: an index of cases and one page per case with a plot per metric over the
//! runs (each job's value, the run median, change points, annotations). The SVG and the few
//! lines of script that show a run's commit, values and link on hover or click, and filter the
//! plots, are written here; no third-party code. Pure: every page is returned as a `String`.

mod axis;
mod data;
mod file;
mod page;
mod plot;
mod script;

pub use data::{SiteCase, SiteOptions, SitePlot};
pub use file::case_file;
pub use page::{render_case, render_index};
pub use script::safe_href;
