//! Stage "case": errors from reading, parsing and validating `model_config.yaml` and case trees.

use std::path::PathBuf;

use super::types::Span;

/// A `model_config.yaml` or case tree that cannot be used. Every message starts with
/// `path:line:column:` (or `path:`) so editors and CI annotations can jump to it.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum CaseError {
    /// The file or folder could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    #[diagnostic(code(crate::case::read))]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is empty (0 bytes).
    #[error("{}: empty file", path.display())]
    #[diagnostic(
        code(crate::case::empty),
        help("a model_config.yaml needs at least TEST_TYPE and MODEL_ARGS")
    )]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The file is larger than goldgate reads.
    #[error("{}: file is {bytes} bytes, more than the {limit} bytes goldgate reads", path.display())]
    #[diagnostic(code(crate::case::too_large))]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The bytes are not UTF-8.
    #[error("{}:{at}: not UTF-8 text (invalid byte sequence)", path.display())]
    #[diagnostic(code(crate::case::not_utf8), help("save the file as UTF-8"))]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// The first invalid byte.
        at: Span,
    },
    /// YAML syntax error.
    #[error("{}:{at}: invalid YAML: {message}", path.display())]
    #[diagnostic(code(crate::case::yaml))]
    Syntax {
        /// The file.
        path: PathBuf,
        /// Where the parser stopped.
        at: Span,
        /// The parser's message.
        message: String,
    },
    /// A resource limit was hit (nesting depth, alias expansion).
    #[error("{}:{at}: {message}", path.display())]
    #[diagnostic(
        code(crate::case::limit),
        help("model_config.yaml files are small; this looks malformed or hostile")
    )]
    Limit {
        /// The file.
        path: PathBuf,
        /// Where the limit was hit.
        at: Span,
        /// What was exceeded.
        message: String,
    },
    /// A key holds the wrong kind of value.
    #[error("{}:{at}: `{key}` must be {expected}, found {found}", path.display())]
    #[diagnostic(code(crate::case::wrong_type))]
    WrongType {
        /// The file.
        path: PathBuf,
        /// Where the value is.
        at: Span,
        /// The key (dotted for nested keys).
        key: String,
        /// What is allowed.
        expected: &'static str,
        /// What was found.
        found: String,
    },
    /// A key holds a value outside its allowed set.
    #[error("{}:{at}: unknown {key} `{value}`", path.display())]
    #[diagnostic(code(crate::case::unknown_value), help("{key} is one of: {allowed}"))]
    UnknownValue {
        /// The file.
        path: PathBuf,
        /// Where the value is.
        at: Span,
        /// The key.
        key: &'static str,
        /// The value found.
        value: String,
        /// The allowed values, comma separated.
        allowed: String,
    },
    /// A required key is missing.
    #[error("{}: missing `{key}`", path.display())]
    #[diagnostic(code(crate::case::missing))]
    Missing {
        /// The file.
        path: PathBuf,
        /// The key.
        key: &'static str,
    },
    /// The root given to `discover` is not a folder.
    #[error("{}: not a folder of test cases", path.display())]
    #[diagnostic(
        code(crate::case::root),
        help("pass --root pointing at Megatron's tests/functional_tests/test_cases")
    )]
    NotADirectory {
        /// The root.
        path: PathBuf,
    },
}

impl CaseError {
    /// The file the error is about.
    pub fn path(&self) -> &std::path::Path {
        match self {
            CaseError::Read { path, .. }
            | CaseError::Empty { path }
            | CaseError::TooLarge { path, .. }
            | CaseError::NotUtf8 { path, .. }
            | CaseError::Syntax { path, .. }
            | CaseError::Limit { path, .. }
            | CaseError::WrongType { path, .. }
            | CaseError::UnknownValue { path, .. }
            | CaseError::Missing { path, .. }
            | CaseError::NotADirectory { path } => path,
        }
    }
}
