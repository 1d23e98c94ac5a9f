//! What-if scaling: a speed-up makes one state FACTOR times faster, so its
//! intra-SM edges weigh `time / FACTOR` while the rules run, and the path
//! that results is the prediction. `SM=FACTOR` (no state) speeds up every
//! state of the SM and of its lanes `SM#N` but `idle`; `SM:STATE=FACTOR`
//! the state on the SM and on its lanes. A speed-up that never matches a state of
//! the trace is an error, with the nearest state names; one that matches
//! only states whose time is all on inter-SM edges (links, awaited
//! transitions) scales no edge with time, and `Stats::scaled_edges` says so.
//!
//! The target is `SM:STATE`, or an `SM` alone for every state of it; a
//! thread's SM may be named without its id, or as `COMM:*` for every thread
//! of that name (see [`super::names`]).

use super::names::{
    lane_state_named, nearest, sm_label, sm_list, state_named, whole_sm_named, How,
};
use super::Engine;
use crate::error::{Error, Result};
use critpath_trace::{Interner, Sym};

/// `SM:STATE=FACTOR`: `target` is `SM:STATE` (or `SYS/SM:STATE`, or either
/// with a space after the ':', as the tables print it), or `SM` alone (every
/// state of the SM and its lanes but `idle`).
#[derive(Clone, Debug)]
pub struct Speedup {
    pub target: String,
    pub factor: f64,
    /// Names one state by its full name only: never a thread without its
    /// id, nor every thread of a name. What critpath's own what-ifs use
    /// (the verdict's, the report's, `--next`'s), since they name a state
    /// of a table row, which a thread named like an SM must not share.
    pub exact: bool,
}

/// The smallest factor: a state at most 1000 times slower, so that path
/// lengths (sums of weights) stay far from overflowing.
const MIN_FACTOR: f64 = 1e-3;

impl Speedup {
    /// Parses `SM:STATE=FACTOR` or `SM=FACTOR`.
    pub fn parse(spec: &str) -> Result<Speedup> {
        let bad = |problem| Error::BadSpeedup {
            spec: spec.to_string(),
            problem,
        };
        let (target, factor) = spec
            .rsplit_once('=')
            .ok_or_else(|| bad("expected SM:STATE=FACTOR or SM=FACTOR"))?;
        if target.trim().is_empty() {
            return Err(bad("expected SM:STATE=FACTOR or SM=FACTOR (no SM named)"));
        }
        let factor: f64 = factor
            .trim()
            .parse()
            .map_err(|_| bad("FACTOR must be a number, such as 2 or 1.5"))?;
        if !(factor.is_finite() && factor > 0.0) {
            return Err(bad("FACTOR must be a positive number (2 = twice as fast; use a huge factor such as 1e9 to remove a state)"));
        }
        if factor < MIN_FACTOR {
            return Err(bad("FACTOR must be at least 0.001 (1000 times slower): a slower state would make path lengths overflow"));
        }
        Ok(Speedup {
            target: target.to_string(),
            factor,
            exact: false,
        })
    }

    /// Speeds up by `factor` the one state `state` of SM `sm` in system
    /// `sys`, named in full (see [`Speedup::exact`]).
    pub fn of_state(sys: &str, sm: &str, state: &str, factor: f64) -> Speedup {
        Speedup {
            target: state_target(sys, sm, state),
            factor,
            exact: true,
        }
    }
}

/// `SM:STATE`, or `SYS/SM:STATE` outside the local system.
pub(crate) fn state_target(sys: &str, sm: &str, state: &str) -> String {
    if sys == "local" {
        format!("{sm}:{state}")
    } else {
        format!("{sys}/{sm}:{state}")
    }
}

/// The speed-up factor of state `st` of SM `name` in system `sys` under
/// `speedups` and `scales_with`: its own (the last speed-up that names it),
/// else the one of the state it scales with (1.0 when none applies).
/// `used` is told of each speed-up that names a state of the SM, and how.
pub(crate) fn factors(
    (speedups, scales_with): (&[Speedup], &[critpath_trace::ScalesWith]),
    (sys, name, st): (&str, &str, &str),
    mut used: impl FnMut(usize, How),
) -> f64 {
    if speedups.is_empty() {
        return 1.0;
    }
    let mut named = |st: &str| {
        let mut factor = None;
        for (i, sp) in speedups.iter().enumerate() {
            let how = state_named(&sp.target, sys, name, st)
                .or_else(|| lane_state_named(&sp.target, sys, name, st))
                .or_else(|| whole_sm_named(&sp.target, sys, name, st))
                .filter(|&how| !sp.exact || how == How::Exact);
            if let Some(how) = how {
                factor = Some(sp.factor);
                used(i, how);
            }
        }
        factor
    };
    let with = scales_with.iter().find(|r| r.state == st).map(|r| &*r.with);
    let follow = with.and_then(&mut named).unwrap_or(1.0);
    named(st).unwrap_or(follow)
}

/// What a walk under speed-ups counts as it weighs edges: the edges with
/// time it scaled, and whether a length went past i64::MAX ns (a speed-up
/// slowed a state of that length: the analysis fails rather than wrap).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Scaling {
    pub edges: u64,
    pub overflow: bool,
}

impl Scaling {
    /// `w` made `f` times faster, rounded; counts the edges with time it
    /// scales.
    #[inline]
    pub fn by(&mut self, f: f64, w: u64) -> u64 {
        if f == 1.0 {
            return w;
        }
        self.edges += u64::from(w > 0);
        // As a signed number (one instruction) when it is one: the same
        // float as `w as f64`.
        let wf = match i64::try_from(w) {
            Ok(w) => w as f64,
            Err(_) => w as f64,
        };
        let scaled = wf / f;
        if scaled >= i64::MAX as f64 {
            self.overflow = true;
            return i64::MAX as u64;
        }
        round(scaled)
    }

    /// `l + w`, the length of a path one edge longer; one past i64::MAX
    /// is noted and held at i64::MAX.
    #[inline]
    pub fn longer(&mut self, l: i64, w: u64) -> i64 {
        match i64::try_from(w).ok().and_then(|w| l.checked_add(w)) {
            Some(sum) => sum,
            None => {
                self.overflow = true;
                i64::MAX
            }
        }
    }
}

/// `x.round()` (halves away from zero) for `0 <= x < 2^63`, without a
/// call to the C library's `round` (which `f64::round` is on x86-64
/// without SSE 4.1): `x` less its truncation is exact (Sterbenz), so the
/// fraction compares with one half exactly. A NaN gives 0, as `as u64`
/// does.
#[inline(always)]
fn round(x: f64) -> u64 {
    // Signed conversions, one instruction each on x86-64 (unsigned ones
    // take several): `x` is below 2^63.
    let t = x as i64;
    (t + i64::from(x - t as f64 >= 0.5)) as u64
}

impl Engine<'_> {
    /// The speed-up factor of SM `sm`'s state `state` (see [`factors`]);
    /// marks the speed-ups that match as used.
    pub(super) fn factors(&mut self, sm: u32, state: Sym, strings: &Interner) -> f64 {
        let s = &self.m.sms[sm as usize];
        let (sys, name) = (strings.resolve(s.sys), strings.resolve(s.name));
        let used = &mut self.speedup_used;
        factors(
            (&self.opts.speedups, &self.opts.scales_with),
            (sys, name, strings.resolve(state)),
            |i, how| used[i].add(sm, how),
        )
    }

    /// An intra-SM edge's weight under the what-if speedups; counts the
    /// edges with time that a speed-up scales.
    #[inline]
    pub(super) fn scaled(&mut self, key: u32, w: u64) -> u64 {
        if self.opts.speedups.is_empty() {
            return w;
        }
        self.scaled_by(self.m.keys[key as usize].factor, w)
    }

    /// `w` made `f` times faster; counts the edges with time it scales.
    #[inline]
    pub(super) fn scaled_by(&mut self, f: f64, w: u64) -> u64 {
        self.scaling.by(f, w)
    }

    /// `l + w` (see [`Scaling::longer`]).
    #[inline]
    pub(super) fn longer(&mut self, l: i64, w: u64) -> i64 {
        self.scaling.longer(l, w)
    }

    /// Fails on the first speed-up that matched no state of the trace, or
    /// that named threads without their id ambiguously.
    pub(super) fn check_speedups_used(&self, strings: &Interner) -> Result<()> {
        for (sp, used) in self.opts.speedups.iter().zip(&self.speedup_used) {
            if let Some(sms) = used.ambiguous() {
                return Err(Error::AmbiguousSpeedup {
                    spec: sp.target.clone(),
                    matches: self.sm_labels(sms, strings),
                });
            }
        }
        let Some(i) = self.speedup_used.iter().position(|used| !used.any) else {
            return Ok(());
        };
        let names: Vec<String> = self
            .m
            .keys
            .iter()
            .map(|k| {
                format!(
                    "{}:{}",
                    strings.resolve(self.m.sms[k.sm as usize].name),
                    strings.resolve(k.state)
                )
            })
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let target = &self.opts.speedups[i].target;
        Err(Error::UnknownSpeedup {
            spec: target.clone(),
            nearest: nearest(target, &names),
        })
    }
}

impl Engine<'_> {
    /// "a, b, c": the labels of SMs `sms`.
    pub(super) fn sm_labels(&self, sms: &[u32], strings: &Interner) -> String {
        sm_list(sms.iter().map(|&i| {
            let s = &self.m.sms[i as usize];
            sm_label(strings, s.sys, s.name)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_is_f64_round(w in any::<u64>(), f in 1e-3f64..1e3, e in -3i64..63, m in any::<u64>()) {
            let x = w as f64 / f;
            if x < i64::MAX as f64 {
                prop_assert_eq!(round(x), x.round() as u64, "{} / {}", w, f);
            }
            // A float of any mantissa between 1/8 and 2^63 (a tie when
            // its bits below one half are zero).
            let y = f64::from_bits((((1023 + e) as u64) << 52) | (m >> 12));
            if y < i64::MAX as f64 {
                prop_assert_eq!(round(y), y.round() as u64, "{}", y);
            }
        }
    }

    #[test]
    fn round_takes_halves_away_from_zero() {
        let near_half = f64::from_bits(0.5f64.to_bits() - 1);
        for (x, r) in [
            (0.0, 0),
            (0.5, 1),
            (near_half, 0),
            (1.5, 2),
            (2.5, 3),
            (2.4999, 2),
        ] {
            assert_eq!((round(x), x.round() as u64), (r, r), "{x}");
        }
        assert_eq!(round(2f64.powi(53) + 2.0), (1u64 << 53) + 2);
        assert_eq!(round(f64::NAN), 0);
    }

    #[test]
    fn parses_sm_state_factor() {
        let s = Speedup::parse("db:io=2.5").unwrap();
        assert_eq!((s.target.as_str(), s.factor), ("db:io", 2.5));
        let s = Speedup::parse("hostA/db:io=2").unwrap();
        assert_eq!(s.target, "hostA/db:io");
        let s = Speedup::parse("db=2").unwrap();
        assert_eq!((s.target.as_str(), s.factor, s.exact), ("db", 2.0, false));
        let s = Speedup::of_state("h", "db", "io", 2.0);
        assert_eq!((s.target.as_str(), s.exact), ("h/db:io", true));
        assert_eq!(Speedup::of_state("local", "db", "io", 2.0).target, "db:io");
    }

    #[test]
    fn bad_specs_say_what_is_wrong_without_naming_an_option() {
        let s = Speedup::parse("db=2").unwrap();
        assert_eq!((s.target.as_str(), s.factor), ("db", 2.0));
        for spec in ["db:io", "=2", "db:io=x", "db:io=0", "db:io=-1"] {
            let e = Speedup::parse(spec).unwrap_err();
            assert_eq!(e.input(), Some((crate::Input::Speedup, spec)));
            assert!(!e.to_string().contains("--"), "{e}");
        }
    }
}
