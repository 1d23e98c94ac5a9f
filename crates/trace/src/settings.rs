//! Settings of a run that are not about the question asked (how many
//! threads, how much memory): one value, resolved once by the program that
//! runs critpath (the command line from its flags and environment, the
//! Python package from its environment) and handed down: a session keeps
//! it, the engine's options and the importers take it, batch options carry
//! it. No library reads an environment variable. The program also installs
//! the value for what is not handed a session: the memory budget of the
//! external sorts, and inputs opened outside a session.

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
