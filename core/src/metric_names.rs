//! Shared by every stage: the names of the metrics goldgate reads, writes or treats specially,
//! defined in the schema crate (`goldgate_schema::metric_names`) and re-exported here. Code
//! names a metric through these constants only, so a rename is one edit.

pub use goldgate_schema::metric_names::*;
