//! Stage "case" (golden): errors from reading, writing and finding golden files.

use std::path::PathBuf;

use crate::case::Span;

/// A golden file that cannot be used.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum GoldenError {
    /// The file could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    #[diagnostic(code(crate::golden::read))]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is 0 bytes.
    #[error("{}: empty golden file (0 bytes)", path.display())]
    #[diagnostic(
        code(crate::golden::empty),
        help(
            "regenerate it with `goldgate bless` or download it again from CI; a golden file holds at least one metric"
        )
    )]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The file is larger than goldgate reads.
    #[error(
        "{}: file is {bytes} bytes, more than the {limit} bytes goldgate reads (a golden takes \
         about 11 times its size in memory; the limit bounds that)",
        path.display()
    )]
    #[diagnostic(code(crate::golden::too_large))]
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
    #[diagnostic(code(crate::golden::not_utf8))]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// The first invalid byte.
        at: Span,
    },
    /// Not valid JSON.
    #[error("{}:{at}: invalid JSON: {message}", path.display())]
    #[diagnostic(code(crate::golden::json))]
    Json {
        /// The file.
        path: PathBuf,
        /// Where the JSON parser stopped.
        at: Span,
        /// The parser's message.
        message: String,
    },
    /// Valid JSON, but not a golden file's shape.
    #[error("{}: {location}: {message}", path.display())]
    #[diagnostic(
        code(crate::golden::shape),
        help(
            "a metric looks like {{\"start_step\": 1, \"end_step\": 50, \"step_interval\": 1, \"values\": {{\"1\": 10.9}}}}"
        )
    )]
    Shape {
        /// The file.
        path: PathBuf,
        /// JSON location, such as `"lm loss".values."7"`.
        location: String,
        /// What is wrong.
        message: String,
    },
    /// An inference golden (keyed by request id): goldgate compares training metrics only.
    #[error("{}: unsupported: inference golden (keyed by request id, not a metric series)", path.display())]
    #[diagnostic(
        code(crate::golden::inference),
        help("goldgate gates training metrics; Megatron's inference goldens are skipped")
    )]
    Inference {
        /// The file.
        path: PathBuf,
    },
    /// Writing a golden file failed.
    #[error("{}: cannot write golden file: {source}", path.display())]
    #[diagnostic(code(crate::golden::write))]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl GoldenError {
    /// Whether this is the "unsupported inference golden" kind rather than a broken file.
    pub fn is_unsupported(&self) -> bool {
        matches!(self, GoldenError::Inference { .. })
    }
}
