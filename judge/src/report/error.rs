//! Stage "report": what can go wrong while rendering (serializers refusing their input) or
//! writing a report file.

/// A renderer could not produce its output.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ReportError {
    /// The JUnit XML writer failed.
    #[error("cannot write the junit report: {message}")]
    Junit { message: String },
    /// The JSON writer failed.
    #[error("cannot write the json report: {message}")]
    Json { message: String },
    /// An output file could not be written.
    #[error("cannot write {}", path.display())]
    #[diagnostic(help("check that the folder is writable and the disk is not full"))]
    Write {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The SVG chart could not be drawn.
    #[error("cannot draw the memory timeline of {job}: {message}")]
    Svg { job: String, message: String },
}
