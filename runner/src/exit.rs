//! Exit codes: the documented outcomes of a goldgate command, defined in the schema crate
//! (`goldgate_schema::exit`) and re-exported here under their old path. Errors get theirs in
//! one place, `cmd::error::AppError::exit`.

pub use goldgate_schema::exit::Exit;
