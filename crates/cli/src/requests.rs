//! Many requests on the command line: a span file of several trace ids
//! (`analyze`) or a batch of files (`batch`) reduced to per-request results
//! (critpath-batch) and summed up by critpath-views' `batch::Summary`; here,
//! critpath-batch's errors in the command line's terms.

impl From<critpath_batch::Error> for crate::error::CliError {
    fn from(e: critpath_batch::Error) -> Self {
        use crate::error::CliError;
        match e {
            critpath_batch::Error::Read(r) => CliError::Read(r),
            critpath_batch::Error::Usage(m) => CliError::Input(m),
            critpath_batch::Error::Analysis { file, source } => CliError::Analysis {
                context: format!("{file}: "),
                source,
            },
        }
    }
}
