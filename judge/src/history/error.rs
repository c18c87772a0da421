//! Stage "history": its errors. Opening or migrating the store and a failed statement are
//! infrastructure (exit 3); a store location or a filter the user got wrong is usage (exit 2).

use std::path::PathBuf;

/// Why the history store could not do what was asked.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum HistoryError {
    /// The SQLite file could not be opened or created.
    #[error("cannot open the history database {path}")]
    OpenSqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// The SQLite file is there but cannot be written (a read-only mount, no write permission),
    /// and the command writes it.
    #[error("cannot write the history database {}", path.display())]
    #[diagnostic(help(
        "`history show`, `changes`, `site`, `bless --from-history` and `--trend-db` read a \
         read-only store as it is; `ingest`, `prune` and `annotate` need it writable"
    ))]
    ReadOnly {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The PostgreSQL server did not accept the connection.
    #[error("cannot connect to the history database {url}")]
    #[diagnostic(help("is the server running, and does the URL name an existing database?"))]
    Connect {
        /// The URL with any password replaced by `***`.
        url: String,
        #[source]
        source: postgres::Error,
    },
    /// A statement failed on SQLite.
    #[error("history database: {what} failed")]
    Sqlite {
        what: String,
        #[source]
        source: rusqlite::Error,
    },
    /// A statement failed on PostgreSQL.
    #[error("history database: {what} failed")]
    Postgres {
        what: String,
        #[source]
        source: postgres::Error,
    },
    /// A column held a type the query layer does not read.
    #[error("history database: {what}: column {column} has type {found}, expected {expected}")]
    ColumnType {
        what: String,
        column: usize,
        found: String,
        expected: &'static str,
    },
    /// The database was migrated by a newer goldgate.
    #[error("the history database is at schema version {found}; this goldgate knows up to {known}")]
    #[diagnostic(help("upgrade goldgate, or point it at another database"))]
    TooNew { found: i64, known: i64 },
    /// The folder for a new SQLite file could not be created.
    #[error("cannot create the folder {path} for the history database")]
    Folder {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A page of the site could not be written.
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A filter or argument names nothing in the store.
    #[error("{0}")]
    NotFound(String),
    /// A value given by the user is not usable.
    #[error("{0}")]
    Usage(String),
}
