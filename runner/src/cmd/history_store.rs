//! `goldgate history`'s store: where the flags put it — `--db`, else `$GOLDGATE_HISTORY`, else
//! goldgate.yaml's `history.database`, else `.goldgate/history.sqlite` in the working
//! directory — opened to write (and migrate) or only to read, and the time its writes carry.

use std::path::Path;

use super::error::AppError;
use super::history_args::StoreArgs;
use goldgate_judge::history::location::{DEFAULT_FILE, HISTORY_ENV};
use goldgate_judge::history::{Location, Store};

/// Where the store is: `--db`, `$GOLDGATE_HISTORY`, goldgate.yaml, the default file.
pub(crate) fn location(args: &StoreArgs) -> Result<Location, AppError> {
    let cwd = std::env::current_dir().map_err(|source| super::error::CmdError::Cwd { source })?;
    if let Some(db) = args.db.clone().or_else(|| std::env::var(HISTORY_ENV).ok()) {
        return Ok(Location::parse(&db, &cwd));
    }
    let source = args.config.source()?;
    if let Some(path) = source.path() {
        let config = goldgate_core::config::Config::load(path)?;
        if let Some(db) = &config.history_database {
            let base = path.parent().unwrap_or(Path::new("."));
            return Ok(Location::parse(db, base));
        }
    }
    Ok(Location::parse(DEFAULT_FILE, &cwd))
}

/// Opens (and migrates) the store the flags name, to write it.
pub(crate) fn open(args: &StoreArgs) -> Result<Store, AppError> {
    let location = location(args)?;
    Ok(Store::open(&location, &now())?)
}

/// Opens the existing store the flags name, to read it ([`Store::open_read`]).
pub(crate) fn open_read(args: &StoreArgs) -> Result<Store, AppError> {
    let location = location(args)?;
    Ok(Store::open_read(&location)?)
}

pub(crate) fn now() -> String {
    jiff::Timestamp::now().to_string()
}
