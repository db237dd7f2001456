//! The one error type of the crate. Messages are the sentences RRDtool
//! 1.7.2 prints after `ERROR: ` where a script could depend on them, and
//! plain sentences naming the offending input otherwise.

/// Why a graph could not be made.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// Bad options or graph elements (the text is RRDtool's message).
    #[error("{0}")]
    Invalid(String),
    /// Fetching or computing the data failed.
    #[error(transparent)]
    Engine(#[from] rrd_engine::Error),
    /// The image could not be encoded.
    #[error("could not encode the image: {0}")]
    Encode(String),
}

impl GraphError {
    pub(crate) fn invalid(msg: impl Into<String>) -> GraphError {
        GraphError::Invalid(msg.into())
    }
}

pub type Result<T, E = GraphError> = std::result::Result<T, E>;
