//! Stage "history": where the store lives — a PostgreSQL URL (`postgres://` or
//! `postgresql://`) or a SQLite file (a path, optionally written `sqlite://PATH`).

use std::fmt;
use std::path::{Path, PathBuf};

/// The environment variable naming the store (a URL or a file).
pub const HISTORY_ENV: &str = "GOLDGATE_HISTORY";

/// The SQLite file used when neither the flag, the environment nor goldgate.yaml names one.
pub const DEFAULT_FILE: &str = ".goldgate/history.sqlite";

/// A validated store location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// An embedded SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL server, by its connection URL.
    Postgres(String),
}

impl Location {
    /// Reads `text`; a relative SQLite path is taken relative to `base` (the folder of the
    /// goldgate.yaml that named it, or the working directory).
    pub fn parse(text: &str, base: &Path) -> Location {
        let text = text.trim();
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Location::Postgres(text.to_owned());
        }
        let path = Path::new(text.strip_prefix("sqlite://").unwrap_or(text));
        if path.is_absolute() {
            Location::Sqlite(path.to_path_buf())
        } else {
            Location::Sqlite(base.join(path))
        }
    }
}

impl fmt::Display for Location {
    /// The file, or the URL with its password hidden (it is printed and logged).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => f.write_str(&redact_password(url)),
        }
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
pub fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((userinfo, host)) = rest.split_once('@') else {
        return url.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_select_postgres_and_paths_sqlite() {
        let base = Path::new("/repo");
        assert_eq!(
            Location::parse("postgres://u@h/db", base),
            Location::Postgres("postgres://u@h/db".into())
        );
        assert_eq!(
            Location::parse("history.sqlite", base),
            Location::Sqlite("/repo/history.sqlite".into())
        );
        assert_eq!(
            Location::parse("sqlite:///tmp/h.db", base),
            Location::Sqlite("/tmp/h.db".into())
        );
    }

    #[test]
    fn a_password_is_never_shown() {
        let l = Location::parse("postgresql://ci:hunter2@db:5432/gg", Path::new("/"));
        assert_eq!(l.to_string(), "postgresql://ci:***@db:5432/gg");
        assert_eq!(
            redact_password("postgres://ci@db/gg"),
            "postgres://ci@db/gg"
        );
    }
}
