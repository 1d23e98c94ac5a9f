//! Several ranks of one job analysed together. A collective (a NCCL kernel
//! with its process group, or a CPU collective: see `cpucoll`) is matched
//! across the ranks of its group by its sequence number where every member
//! has one, else by order of occurrence; it completes on every rank only
//! after the last rank arrives. Ranks' clocks are aligned from the collectives' ends (which
//! happen together on every member): each rank's offset from the reference
//! rank is the median difference of its ends. Where a rank lost a
//! collective (the counts of two ranks differ), differences that spread
//! more than [`END_TOLERANCE_NS`] say the match is wrong (matching by order
//! pairs every later one with the wrong one): that rank's clock is not
//! claimed aligned. The rank that arrives last is the straggler; the
//! others wait for it.

use crate::emit::Role;
use crate::streams::CollOp;
use critpath_trace::Interner;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// What joining ranks needs of one rank: its collectives and its steps.
pub struct RankInput<'a> {
    pub rank: i64,
    pub file: &'a str,
    pub collectives: &'a [CollOp],
    /// `ProfilerStep` annotations: (start, end, name), in time order.
    pub steps: &'a [(u64, u64, String)],
}

/// One collective instance: (input index, index in its collectives) of
/// every member.
struct Instance {
    members: Vec<(usize, usize)>,
}

/// How one rank's clock was aligned.
#[derive(Clone, Debug, Serialize)]
pub struct RankOffset {
    pub rank: i64,
    pub file: String,
    /// This rank's clock minus the reference rank's, ns.
    pub offset_ns: i64,
    /// Collectives whose ends gave the offset.
    pub collectives: u64,
    /// Whether the rank's clock is aligned: the reference's when another
    /// rank's is, another's when collectives gave its offset (an offset of
    /// 0 is then measured, not assumed) and, where its collective count
    /// and its partner's differ, their ends agree with it (`end_spread_ns`
    /// at most [`END_TOLERANCE_NS`]).
    pub aligned: bool,
    /// How far apart the differences of the collectives' ends that gave
    /// the offset are (the largest minus the smallest), ns: after
    /// alignment the ends coincide, so a wide spread is a wrong match.
    pub end_spread_ns: u64,
    /// The rank the offset was measured against (the first aligned member
    /// of its first matched collective).
    pub against: Option<i64>,
    /// The rank's collectives with no counterpart on some member of their
    /// group.
    pub unmatched: u64,
}

/// How far apart the ends of one collective on two ranks whose counts
/// differ may be once their clocks are aligned, ns: NCCL kernels end within
/// a few microseconds of each other; a rank matched one collective off
/// ends a whole collective (or step) apart.
pub const END_TOLERANCE_NS: u64 = 100_000;

/// Who arrived last in one step and how long the others waited.
#[derive(Clone, Debug, Serialize)]
pub struct StepStraggler {
    /// The step (`ProfilerStep#N` on the reference rank, or `trace`).
    pub step: String,
    /// The rank the others waited for longest; none when no one waited
    /// (ranks that arrived together, a rank's file given twice).
    pub straggler_rank: Option<i64>,
    /// How long the other ranks waited for it, summed, ns.
    pub others_waited_ns: u64,
    /// Collectives in the step, and at how many this rank was last.
    pub collectives: u64,
    pub last_at: u64,
}

/// What the multi-rank analysis found besides the records.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RanksReport {
    pub offsets: Vec<RankOffset>,
    pub steps: Vec<StepStraggler>,
    /// Collectives matched on every member of their group.
    pub matched: u64,
    /// Collective kernels left unmatched (a member's trace lacks them).
    pub unmatched: u64,
}

/// The steps one rank held up: how many, how long the others waited for it
/// in all, and the steps where they waited longest (longest first).
#[derive(Clone, Debug)]
pub struct StragglerSummary<'a> {
    pub rank: i64,
    pub steps: u64,
    pub others_waited_ns: u64,
    pub longest: Vec<&'a StepStraggler>,
}

impl RanksReport {
    /// The stragglers, the rank the others waited for longest first, each
    /// with up to `keep` of its steps where they waited longest.
    pub fn stragglers(&self, keep: usize) -> Vec<StragglerSummary<'_>> {
        let mut by: BTreeMap<i64, Vec<&StepStraggler>> = BTreeMap::new();
        for s in &self.steps {
            if let Some(rank) = s.straggler_rank {
                by.entry(rank).or_default().push(s);
            }
        }
        let mut out: Vec<StragglerSummary> = by
            .into_iter()
            .map(|(rank, mut steps)| {
                let n = steps.len() as u64;
                let waited = steps.iter().map(|s| s.others_waited_ns).sum();
                // Stable: equal waits keep their time order.
                steps.sort_by_key(|s| std::cmp::Reverse(s.others_waited_ns));
                steps.truncate(keep);
                StragglerSummary {
                    rank,
                    steps: n,
                    others_waited_ns: waited,
                    longest: steps,
                }
            })
            .collect();
        out.sort_by_key(|s| std::cmp::Reverse(s.others_waited_ns));
        out
    }
}

/// The collective kernels of a rank per process group, in start order.
fn by_group(inp: &RankInput) -> BTreeMap<String, Vec<usize>> {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (k, c) in inp.collectives.iter().enumerate() {
        groups.entry(c.group.clone()).or_default().push(k);
    }
    let c = inp.collectives;
    for ks in groups.values_mut() {
        ks.sort_by_key(|&k| (c[k].start, c[k].op));
    }
    groups
}

/// Matches collectives across ranks: the k-th of a group on each member;
/// also the collectives left unmatched, in all and per input.
fn instances(inputs: &[RankInput]) -> (Vec<Instance>, u64, Vec<u64>) {
    let groups: Vec<_> = inputs.iter().map(by_group).collect();
    let index_of: HashMap<i64, usize> = inputs
        .iter()
        .enumerate()
        .map(|(i, r)| (r.rank, i))
        .collect();
    let mut out = Vec::new();
    let mut unmatched = 0u64;
    let mut per_input = vec![0u64; inputs.len()];
    let mut done: Vec<String> = Vec::new();
    for (i, g) in groups.iter().enumerate() {
        for (name, ops) in g {
            if done.contains(name) {
                continue;
            }
            done.push(name.clone());
            let ranks = &inputs[i].collectives[ops[0]].ranks;
            let members: Option<Vec<usize>> =
                ranks.iter().map(|r| index_of.get(r).copied()).collect();
            let Some(members) = members.filter(|m| m.len() > 1) else {
                unmatched += ops.len() as u64;
                per_input[i] += ops.len() as u64;
                continue;
            };
            // A member without the group (cut, or outside its window) has
            // none of its instances.
            let none = Vec::new();
            let lists: Vec<&Vec<usize>> = members
                .iter()
                .map(|&m| groups[m].get(name).unwrap_or(&none))
                .collect();
            let colls = |j: usize| inputs[members[j]].collectives;
            let rows = match_rows(&lists, colls);
            for (&m, l) in members.iter().zip(&lists) {
                let left = l.len().saturating_sub(rows.len()) as u64;
                per_input[m] += left;
                unmatched += left;
            }
            for row in rows {
                let members = members.iter().zip(row).map(|(&m, k)| (m, k)).collect();
                out.push(Instance { members });
            }
        }
    }
    (out, unmatched, per_input)
}

/// The instances of one group: per instance, the index of each member's
/// collective. By `Seq` when every collective of every member has one
/// (those of a `Seq` every member has), else the k-th of each member.
fn match_rows<'a>(lists: &[&Vec<usize>], colls: impl Fn(usize) -> &'a [CollOp]) -> Vec<Vec<usize>> {
    let seqs: Option<Vec<HashMap<i64, usize>>> = lists
        .iter()
        .enumerate()
        .map(|(j, l)| l.iter().map(|&k| Some((colls(j)[k].seq?, k))).collect())
        .collect();
    match seqs {
        Some(seqs) if !lists.iter().any(|l| l.is_empty()) => {
            let mut lead: Vec<(i64, usize)> = seqs[0].iter().map(|(&s, &k)| (s, k)).collect();
            lead.sort_by_key(|&(_, k)| (colls(0)[k].start, k));
            lead.iter()
                .filter_map(|(s, _)| seqs.iter().map(|m| m.get(s).copied()).collect())
                .collect()
        }
        _ => {
            let n = lists.iter().map(|l| l.len()).min().unwrap_or(0);
            (0..n)
                .map(|k| lists.iter().map(|l| l[k]).collect())
                .collect()
        }
    }
}

fn median(v: &mut [i128]) -> i128 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// One input's clock offset from input 0, ns; how many collectives gave
/// it; how far apart their end differences are (ns); the input it was
/// measured against.
#[derive(Clone, Copy)]
struct Offset {
    ns: i128,
    from: u64,
    spread: u64,
    against: Option<usize>,
}

/// Each input's clock offset from input 0, from the ends of the
/// collectives they share (directly, or through ranks already aligned).
fn offsets(inputs: &[RankInput], inst: &[Instance]) -> Vec<Offset> {
    let n = inputs.len();
    let mut off: Vec<Option<Offset>> = vec![None; n];
    off[0] = Some(Offset {
        ns: 0,
        from: 0,
        spread: 0,
        against: None,
    });
    let end = |m: usize, k: usize| i128::from(inputs[m].collectives[k].end);
    loop {
        let mut progress = false;
        for b in 0..n {
            if off[b].is_some() {
                continue;
            }
            let mut diffs = Vec::new();
            let mut against = None;
            for i in inst {
                let Some(&(_, ob)) = i.members.iter().find(|x| x.0 == b) else {
                    continue;
                };
                if let Some(&(a, oa)) = i.members.iter().find(|x| off[x.0].is_some()) {
                    diffs.push(end(b, ob) - end(a, oa) + off[a].expect("known").ns);
                    against.get_or_insert(a);
                }
            }
            if !diffs.is_empty() {
                let ns = median(&mut diffs);
                let spread = diffs[diffs.len() - 1] - diffs[0];
                off[b] = Some(Offset {
                    ns,
                    from: diffs.len() as u64,
                    spread: u64::try_from(spread).unwrap_or(u64::MAX),
                    against,
                });
                progress = true;
            }
        }
        if !progress {
            break;
        }
    }
    let none = Offset {
        ns: 0,
        from: 0,
        spread: 0,
        against: None,
    };
    off.into_iter().map(|o| o.unwrap_or(none)).collect()
}

/// A rank's `ProfilerStep#N` windows in time order: the step a time falls
/// in is found by binary search, not by a pass over the events.
struct StepWindows(Vec<(u64, u64, String)>);

impl StepWindows {
    fn of(inp: &RankInput) -> Self {
        StepWindows(inp.steps.to_vec())
    }

    /// The step time `t` falls in, keyed by its start so that steps sort
    /// in time order; outside every step, the whole `trace` (last).
    fn at(&self, t: u64) -> (u64, String) {
        let i = self.0.partition_point(|w| w.0 <= t);
        // Steps do not nest; the latest one started is the only candidate.
        match i.checked_sub(1).map(|i| &self.0[i]) {
            Some((start, end, name)) if t <= *end => (*start, name.clone()),
            _ => (u64::MAX, "trace".to_string()),
        }
    }
}

/// Per step (its start and name): per last-arriving rank, (how long the
/// others waited for it, how many times it was last), and the step's
/// collectives.
type StepTally = BTreeMap<(u64, String), (BTreeMap<i64, (u64, u64)>, u64)>;

/// Collective roles per input, the clock shift of each input, and the report.
pub struct Plan {
    pub shifts: Vec<i128>,
    /// Per input, the role of each collective kernel (by event index).
    pub roles: Vec<HashMap<u64, Role>>,
    pub report: RanksReport,
}

/// Matches the collectives, aligns the clocks and finds the stragglers.
pub fn plan(inputs: &[RankInput], strings: &mut Interner) -> Plan {
    let (inst, unmatched, unmatched_per) = instances(inputs);
    let offs = offsets(inputs, &inst);
    let shifts: Vec<i128> = offs.iter().map(|o| -o.ns).collect();
    let mut roles: Vec<HashMap<u64, Role>> = vec![HashMap::new(); inputs.len()];
    let mut steps = StepTally::new();
    let windows: Vec<StepWindows> = inputs.iter().map(StepWindows::of).collect();
    for (id, i) in inst.iter().enumerate() {
        let coll = |&(m, k): &(usize, usize)| &inputs[m].collectives[k];
        let arrive = |x: &(usize, usize)| i128::from(coll(x).start) + shifts[x.0];
        let last = *i.members.iter().max_by_key(|x| arrive(x)).expect("members");
        let release = arrive(&last).max(0) as u64;
        let role = Role {
            id: id as u64,
            straggler: false,
            release,
            name: strings.intern(&coll(&last).name),
            waiting: Vec::new(),
            joins: false,
        };
        // The ranks still in the collective when the last arrives join it.
        let joins = |x: &(usize, usize)| i128::from(coll(x).end) + shifts[x.0] > release as i128;
        for x in &i.members {
            let role = if *x == last {
                let waiting = i.members.iter().filter(|y| *y != x && joins(y));
                Role {
                    straggler: true,
                    waiting: waiting.map(|y| y.0).collect(),
                    ..role.clone()
                }
            } else {
                Role {
                    joins: joins(x),
                    ..role.clone()
                }
            };
            roles[x.0].insert(coll(x).op, role);
        }
        let waited: u64 = i
            .members
            .iter()
            .map(|x| (release as i128 - arrive(x)).max(0) as u64)
            .sum();
        let m0 = i.members[0].0;
        let step = steps
            .entry(windows[m0].at(coll(&i.members[0]).launched))
            .or_default();
        let cell = step.0.entry(inputs[last.0].rank).or_default();
        cell.0 += waited;
        cell.1 += 1;
        step.1 += 1;
    }
    // Ends that spread are a wrong match only where a rank lost a
    // collective: CPU collectives of ranks whose counts agree end tens of
    // milliseconds apart at times (a thread scheduled late).
    let lost = |k: usize| unmatched_per[k] > 0;
    let trusted = |(k, o): (usize, &Offset)| {
        let counts_differ = lost(k) || o.against.is_some_and(lost);
        o.from > 0 && (o.spread <= END_TOLERANCE_NS || !counts_differ)
    };
    let report = RanksReport {
        offsets: inputs
            .iter()
            .zip(&offs)
            .enumerate()
            .map(|(k, (r, o))| RankOffset {
                // The reference is aligned when another rank was to it.
                aligned: trusted((k, o))
                    || (k == 0 && offs.iter().enumerate().skip(1).any(trusted)),
                rank: r.rank,
                file: r.file.to_string(),
                offset_ns: o.ns as i64,
                collectives: o.from,
                end_spread_ns: o.spread,
                against: o.against.map(|a| inputs[a].rank),
                unmatched: unmatched_per[k],
            })
            .collect(),
        steps: steps
            .into_iter()
            .map(|((_, step), (by_rank, n))| {
                let (&rank, &(waited, last_at)) =
                    by_rank.iter().max_by_key(|x| x.1 .0).expect("one");
                StepStraggler {
                    step,
                    straggler_rank: (waited > 0).then_some(rank),
                    others_waited_ns: waited,
                    collectives: n,
                    // No straggler was last anywhere.
                    last_at: if waited > 0 { last_at } else { 0 },
                }
            })
            .collect(),
        matched: inst.len() as u64,
        unmatched,
    };
    Plan {
        shifts,
        roles,
        report,
    }
}
