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
            e @ critpath_batch::Error::Unmatched { .. } => CliError::Input(e.to_string()),
            critpath_batch::Error::Analysis { file, source } => CliError::Analysis {
                context: format!("{file}: "),
                source,
            },
        }
    }
}

use crate::error::{CliError, Result};
use critpath_engine::Options;
use critpath_import::{AnySource, Format, Opened};
use critpath_readers::spans::Requests;
use critpath_session::Session;
use critpath_views::batch::Summary;
use critpath_views::report_many::{self, Slow};
use critpath_views::report_runs::{self, FirstRun};

/// `--slowest FRACTION`: above 0 and at most 1.
pub fn check_slowest(slowest: f64) -> Result<()> {
    if slowest > 0.0 && slowest <= 1.0 {
        return Ok(());
    }
    Err(CliError::input(format!(
        "--slowest {slowest}: expected a fraction of the requests, above 0 and at most 1 (0.1: the slowest 10%)"
    )))
}

/// The slowest requests whose own reports the many-request report embeds.
const SLOWEST_SHOWN: usize = 10;

/// `report` on span files of several requests: the page of all of them
/// (critpath-views' `report_many`), and a problem reading them; `None`
/// for other inputs (for span files of one request, the session then
/// holds its source).
pub fn report(
    session: &mut Session,
    slowest: f64,
) -> Result<Option<(String, Option<critpath_batch::Error>)>> {
    if !session.all(Format::Spans) {
        return Ok(None);
    }
    check_slowest(slowest)?;
    let requests = match critpath_import::requests_of_all(session.take_inputs()?)? {
        Opened::Trace(src, _) => {
            session.set_source(*src);
            return Ok(None);
        }
        Opened::Requests(r) => r,
    };
    let what = session.name();
    let opts = critpath_batch::Options::default();
    let (results, err) = critpath_batch::analyze_requests(&requests, &what, &opts)?;
    let mut sum = Summary::new(results, slowest);
    sum.file_diagnostics = requests.sanity().diagnostics();
    let mut by_length: Vec<_> = sum.per_trace.iter().collect();
    by_length.sort_by_key(|r| std::cmp::Reverse(r.length_ns));
    let mut slow = Vec::new();
    for r in by_length.into_iter().take(SLOWEST_SHOWN) {
        slow.push(Slow {
            trace_id: r.trace_id.clone(),
            length_ns: r.length_ns,
            top: format!("{}: {}", r.top_sm, r.top_state),
            page: one_request(&requests, &what, &r.trace_id)?,
        });
    }
    Ok(Some((report_many::html(&sum, &what, &slow), err)))
}

/// The report of request `id` alone, as `report --trace ID` makes it.
fn one_request(requests: &Requests, what: &str, id: &str) -> Result<String> {
    let open = || -> Result<AnySource> {
        match requests.request(id) {
            Some(one) => Ok(AnySource::in_memory(one?, Format::Spans)),
            None => Err(CliError::input(format!("--trace {id}: no such request"))),
        }
    };
    let analyze = |src: &mut AnySource, o: Options, obs: &mut dyn critpath_engine::Observer| {
        let o = o.with_settings(&critpath_session::Settings::current());
        critpath_engine::analyze_observed(src, o, obs, |_, _| {})
            .map(|(a, _)| a)
            .map_err(CliError::analysis)
    };
    let mut first = FirstRun::default();
    let a = analyze(&mut open()?, Options::default(), &mut first)?;
    let extras = report_runs::extras(&a, first, &mut |o, obs| analyze(&mut open()?, o, obs))?;
    let name = format!("{what} --trace {id}");
    Ok(critpath_views::report::html(&a, &name, &[], &extras))
}
