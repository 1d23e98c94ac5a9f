//! The Trace Event Format's events as the export writes them, one
//! serializable shape each. Their fields are in the order serde_json's
//! maps keep keys (sorted), so the JSON of each is byte for byte that of
//! the same event built as a `serde_json::Value`.

use serde::Serialize;

/// Nanoseconds as the format's microseconds.
pub fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// `{"name": ...}`, the arguments of a naming event.
#[derive(Serialize)]
pub struct Name<'a> {
    pub name: &'a str,
}

/// A metadata event naming a process (`tid` absent) or a thread.
#[derive(Serialize)]
pub struct Meta<'a> {
    pub args: Name<'a>,
    pub name: &'static str,
    pub ph: &'static str,
    pub pid: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tid: Option<u64>,
}

impl<'a> Meta<'a> {
    /// Process `pid` is named `name`.
    pub fn process(pid: u64, name: &'a str) -> Self {
        Meta {
            args: Name { name },
            name: "process_name",
            ph: "M",
            pid,
            tid: None,
        }
    }

    /// Thread `tid` of process `pid` is named `name`.
    pub fn thread(pid: u64, tid: u64, name: &'a str) -> Self {
        Meta {
            args: Name { name },
            name: "thread_name",
            ph: "M",
            pid,
            tid: Some(tid),
        }
    }
}

/// A state visit: a complete slice on its SM's track.
#[derive(Serialize)]
pub struct Slice<'a> {
    pub cat: &'static str,
    pub dur: f64,
    pub name: &'a str,
    pub ph: &'static str,
    pub pid: u64,
    pub tid: u64,
    pub ts: f64,
}

/// One end of a dependence's flow arrow: its start (`ph` `s`) or its end
/// (`ph` `f`, bound to the enclosing slice).
#[derive(Serialize)]
pub struct Flow {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bp: Option<&'static str>,
    pub cat: &'static str,
    pub id: u64,
    pub name: &'static str,
    pub ph: &'static str,
    pub pid: u64,
    pub tid: u64,
    pub ts: f64,
}

/// What a slice of the critical path's track says of its segment.
#[derive(Serialize)]
pub struct PathArgs<'a> {
    pub inter: bool,
    pub sm: &'a str,
    pub state: &'a str,
    pub sys: &'a str,
}

/// A segment of the critical path, on the path's own track, in red.
#[derive(Serialize)]
pub struct PathSlice<'a> {
    pub args: PathArgs<'a>,
    pub cat: &'static str,
    pub cname: &'static str,
    pub dur: f64,
    pub name: &'a str,
    pub ph: &'static str,
    pub pid: u64,
    pub tid: u64,
    pub ts: f64,
}
