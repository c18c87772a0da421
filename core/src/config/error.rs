//! Stage "plan": errors reading `goldgate.yaml`, each naming the file and the place.

use std::path::{Path, PathBuf};

use serde_saphyr::Spanned;

/// Why `goldgate.yaml` could not be used.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ConfigError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}:{column}: {message}", path.display())]
    #[diagnostic(help(
        "goldgate.yaml holds `default_platform`, `platforms`, `variants`, `rules`, `recipes`, `check`, `ab` and `history`; see docs/book/src/reference/config.md"
    ))]
    Invalid {
        path: PathBuf,
        line: u64,
        column: u64,
        message: String,
    },
    #[error("no platform is configured")]
    #[diagnostic(help("add a `platforms:` entry to goldgate.yaml"))]
    NoPlatform,
    #[error("unknown platform `{name}` (valid: {valid})")]
    UnknownPlatform { name: String, valid: String },
}

impl ConfigError {
    /// An error from the YAML reader, with its location split from its message.
    pub(crate) fn from_yaml(path: &Path, err: &serde_saphyr::Error) -> ConfigError {
        let options = serde_saphyr::render_options! { snippets: serde_saphyr::SnippetMode::Off };
        let mut message = err.render_with_options(options);
        let (line, column) = err.location().map_or((0, 0), |l| (l.line(), l.column()));
        let suffix = format!(" at line {line}, column {column}");
        if let Some(stripped) = message.strip_suffix(&suffix) {
            message = stripped.to_owned();
        }
        ConfigError::Invalid {
            path: path.to_owned(),
            line,
            column,
            message,
        }
    }

    /// A validation error at the place `at` was read from.
    pub(crate) fn invalid<T>(path: &Path, at: &Spanned<T>, message: String) -> ConfigError {
        ConfigError::Invalid {
            path: path.to_owned(),
            line: at.referenced.line(),
            column: at.referenced.column(),
            message,
        }
    }
}
