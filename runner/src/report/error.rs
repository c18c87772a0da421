//! Stage "report": what can go wrong while rendering (serializers refusing their input).

/// A renderer could not produce its output.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ReportError {
    /// The JUnit XML writer failed.
    #[error("cannot write the junit report: {message}")]
    Junit { message: String },
    /// The JSON writer failed.
    #[error("cannot write the json report: {message}")]
    Json { message: String },
    /// The SVG chart could not be drawn.
    #[error("cannot draw the memory timeline of {job}: {message}")]
    Svg { job: String, message: String },
}

impl crate::exit::Classify for ReportError {
    fn exit(&self) -> crate::exit::Exit {
        crate::exit::Exit::Failure
    }
}
