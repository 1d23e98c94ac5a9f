//! Settings of a run that are not about the question asked (how many
//! threads, how much memory): one value, resolved once by the program that
//! runs critpath (the command line from its flags and environment, the
//! Python package from its keyword options) and handed to the libraries.
//! No library reads an environment variable: the program installs the
//! value before it analyzes, and the libraries consult it.

use std::sync::RwLock;

/// See the module's documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Readers and the engine may use threads of their own (the results
    /// are the same on one thread).
    pub threads: bool,
    /// How many sends may wait for their receive at once (`None`: the
    /// engine's default).
    pub pending_sends: Option<usize>,
    /// Items an external sort keeps in memory (`None`: each sort's default).
    pub sort_items: Option<usize>,
    /// Waits for a CPU are charged to the CPU's holders (docs/os-graph.md).
    pub cpu_holders: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            threads: true,
            pending_sends: None,
            sort_items: None,
            cpu_holders: true,
        }
    }
}

static CURRENT: RwLock<Option<Settings>> = RwLock::new(None);

impl Settings {
    /// Makes these the settings of the process's analyses from now on.
    pub fn install(&self) {
        *CURRENT.write().unwrap_or_else(|e| e.into_inner()) = Some(self.clone());
    }

    /// The installed settings (the defaults when none were installed).
    pub fn current() -> Settings {
        CURRENT
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_default()
    }
}

/// May readers and the engine use threads of their own? As the installed
/// [`Settings`] say (yes by default).
pub fn threads_allowed() -> bool {
    CURRENT
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .is_none_or(|s| s.threads)
}
