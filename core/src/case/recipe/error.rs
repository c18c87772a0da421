//! Stage "case" (recipes): errors reading Megatron's recipe files.

use std::path::PathBuf;

/// A recipe file or folder that cannot be used.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum RecipeError {
    /// The file or folder could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    #[diagnostic(
        code(goldgate::recipe::read),
        help("recipes are Megatron-LM's tests/test_utils/recipes; pass --recipes DIR")
    )]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than goldgate reads.
    #[error("{}: file is {bytes} bytes, more than the 4 MiB goldgate reads", path.display())]
    #[diagnostic(code(goldgate::recipe::too_large))]
    TooLarge { path: PathBuf, bytes: u64 },
    /// The YAML does not parse, or has the wrong shape.
    #[error("{}:{line}:{column}: {message}", path.display())]
    #[diagnostic(code(goldgate::recipe::invalid))]
    Invalid {
        path: PathBuf,
        line: u64,
        column: u64,
        message: String,
    },
}

impl RecipeError {
    pub(crate) fn yaml(path: &std::path::Path, err: &serde_saphyr::Error) -> RecipeError {
        let options = serde_saphyr::render_options! { snippets: serde_saphyr::SnippetMode::Off };
        let mut message = err.render_with_options(options);
        let (line, column) = err.location().map_or((1, 1), |l| (l.line(), l.column()));
        let suffix = format!(" at line {line}, column {column}");
        if let Some(stripped) = message.strip_suffix(&suffix) {
            message = stripped.to_owned();
        }
        RecipeError::Invalid {
            path: path.to_owned(),
            line,
            column,
            message,
        }
    }

    pub(crate) fn invalid(path: &std::path::Path, message: &str) -> RecipeError {
        RecipeError::Invalid {
            path: path.to_owned(),
            line: 1,
            column: 1,
            message: message.to_owned(),
        }
    }
}
