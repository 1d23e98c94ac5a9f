//! PyTorch profiler (Kineto) traces in a session: one rank or several,
//! limited to one instance of an annotation as HTA does; the path is broken
//! down by what bounds it while the engine walks it (docs/gpu.md).

use crate::error::{Error, Result};
use crate::log::Recorder;
use crate::Session;
use critpath_engine::{Analysis, Observer, Options};
use critpath_gpu::{BreakdownObserver, GpuBreakdown, GpuOptions, KinetoInput, RanksReport, Tally};
use critpath_trace::ReadError;

/// A GPU trace's analysis with what the importer knows beside it.
pub struct GpuRun {
    pub analysis: Analysis,
    pub err: Option<ReadError>,
    pub breakdown: GpuBreakdown,
    /// Several ranks only.
    pub ranks: Option<RanksReport>,
}

impl Session {
    /// The first analysis of Kineto inputs (every input one rank), with
    /// every state visit and dependence handed to `observer`; `keep_path`
    /// keeps the path's segments. Later passes ([`Session::analyze`])
    /// replay it.
    pub fn gpu(
        &mut self,
        window: &GpuOptions,
        opts: Options,
        keep_path: bool,
        observer: &mut dyn Observer,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<GpuRun> {
        let n = self.formats().count();
        let inputs = (0..n)
            .map(|i| {
                let path = self.path_of(i).to_path_buf();
                self.take_input(i).map(|input| KinetoInput {
                    again: critpath_import::kineto_again(&path),
                    name: input.name,
                    json: Box::new(input.stream),
                })
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let mut src = critpath_gpu::open_inputs(inputs, window)?;
        let facts = src.facts().clone();
        let ranks = (n > 1).then(|| src.report().clone());
        let opts = Options { keep_path, ..opts }.with_settings(self.settings());
        let mut tally = BreakdownObserver {
            tally: Tally::new(&facts, 0, u64::MAX),
            inner: observer,
        };
        let mut rec = Recorder::new(&mut src, self.cap());
        // The observer hears the same visits from either pump.
        let engine = critpath_engine::observed_engine(&mut rec, opts, &mut tally);
        let result = if self.settings().threads {
            critpath_engine::run_parallel(&mut rec, engine, progress)
        } else {
            critpath_engine::run(&mut rec, engine, progress)
        };
        self.keep_replay(rec.into_replay());
        let breakdown = tally.tally.finish();
        let name = self.name();
        let (analysis, err) = result.map_err(|source| Error::Engine {
            name: name.clone(),
            source,
        })?;
        if analysis.stats.records == 0 {
            return Err(Error::Input(format!(
                "{name}: the trace holds no GPU or CPU op{}{}",
                match &window.annotation {
                    Some(a) => format!(" inside annotation {a:?} instance {}", window.instance),
                    None => String::new(),
                },
                match &err {
                    Some(e) => format!(" that could be read (the first that could not: {e})"),
                    None => String::new(),
                }
            )));
        }
        Ok(GpuRun {
            analysis,
            err,
            breakdown,
            ranks,
        })
    }
}
