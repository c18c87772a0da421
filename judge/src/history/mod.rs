//! Stage "history": every recorded run kept in a database — SQLite by default, PostgreSQL by
//! URL, one schema and one query layer for both — and the series read back from it (a metric
//! of a case over commits), with the change points E-divisive means finds in them.

pub(crate) mod backend;
pub mod changes;
pub(crate) mod error;
pub mod folder;
pub mod ingest;
pub mod location;
pub(crate) mod migrate;
pub mod prune;
pub mod recent;
pub mod series;
pub(crate) mod store;

pub use backend::{Backend, Cell, Value};
pub use error::HistoryError;
pub use ingest::{IngestContext, IngestCount};
pub use location::Location;
pub use series::{Point, SeriesKey};
pub use store::{SeriesName, Store};
