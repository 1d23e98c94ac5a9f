//! Which slices of a trace without flow events are blocking calls, which
//! release another thread, and which start a thread or a process, from their
//! names alone (docs/event-model.md, "Inferred links").
//!
//! A name is reduced to its call: viztracer's `Qualname (file:line)` loses
//! its location, then the last two parts (split at `.` or `::`) are the
//! owner and the method: `_thread.lock.acquire` is `lock` and `acquire`,
//! `Queue.get (/usr/lib/python3.11/queue.py:154)` is `Queue` and `get`,
//! `std::mutex::lock` is `mutex` and `lock`, `pthread_join` is the method
//! `pthread_join` with no owner. Matching ignores case.

/// What a blocking call waits for, which chooses its waker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Wait {
    /// A thread's end (`Thread.join`, `pthread_join`).
    Join,
    /// A process's end (`Process.join`, `os.waitpid`, `Popen.wait`).
    ProcessJoin,
    /// An item: the `put` that made one (`Queue.get`).
    QueueGet,
    /// Room: the `get` that made some (a full `Queue.put`).
    QueuePut,
    /// A release: a lock, a condition, an event, a semaphore, a futex.
    Sync,
    /// Data: `select`, `poll`, a blocking read; woken by a write or a send.
    Io,
    /// A call that a flow event carried to another thread, answered when
    /// the slice it arrived at ends (`calls`).
    Call,
    /// A new thread's or process's first slice, waiting for the call that
    /// started it (`spawns`).
    Start,
}

impl Wait {
    /// What the diagnostics call it.
    pub fn label(self) -> &'static str {
        match self {
            Wait::Join => "thread joins",
            Wait::ProcessJoin => "process joins",
            Wait::QueueGet => "queue gets",
            Wait::QueuePut => "queue puts",
            Wait::Sync => "lock, condition and event waits",
            Wait::Io => "select, poll and read waits",
            Wait::Call => "calls answered on the thread a flow went to",
            Wait::Start => "thread and process starts",
        }
    }
}

/// What a slice does for the threads waiting on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Release {
    /// Puts an item in a queue.
    Put,
    /// Takes one out (making room).
    Get,
    /// Releases a lock, notifies a condition, sets an event.
    Unlock,
    /// Writes or sends data.
    Write,
}

/// What a call starts: a thread of its own process, a process, or either
/// (`clone`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spawn {
    Thread,
    Process,
    Either,
}

impl Spawn {
    /// Can a call of this kind start a thread (`false`: a process)?
    pub fn starts(self, thread: bool) -> bool {
        match self {
            Spawn::Thread => thread,
            Spawn::Process => !thread,
            Spawn::Either => true,
        }
    }
}

/// A slice name's meaning: a blocking call, a release, a call that starts
/// a thread or a process, or none of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Class {
    pub wait: Option<Wait>,
    pub release: Option<Release>,
    pub spawn: Option<Spawn>,
}

/// The owner and method of a slice name, lower case.
fn call_of(name: &str) -> (String, String) {
    let base = match name.find(" (") {
        Some(i) => &name[..i],
        None => name,
    };
    let base = base.trim().to_ascii_lowercase();
    let base = base.trim_end_matches("()");
    let parts: Vec<&str> = base
        .split(|c: char| c == '.' || c == ':' || c == '/' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .collect();
    let method = parts.last().copied().unwrap_or("").to_string();
    let owner = if parts.len() > 1 {
        parts[parts.len() - 2].to_string()
    } else {
        String::new()
    };
    (owner, method)
}

const LOCKISH: [&str; 9] = [
    "lock",
    "rlock",
    "semlock",
    "semaphore",
    "condition",
    "mutex",
    "event",
    "barrier",
    "criticalsection",
];

/// Owners whose reads and writes go between threads or processes (pipes,
/// sockets, raw descriptors), not to files or the terminal.
fn fd_owner(owner: &str) -> bool {
    owner.is_empty()
        || ["posix", "os", "socket", "connection", "pipe", "ssl"]
            .iter()
            .any(|o| owner.contains(o))
}

fn lockish(owner: &str) -> bool {
    LOCKISH.iter().any(|l| owner.contains(l))
}

/// The blocking call a slice name stands for, if any.
fn wait_of(owner: &str, method: &str) -> Option<Wait> {
    let queue = owner.contains("queue");
    let w = match method {
        "pthread_join" | "thrd_join" => Wait::Join,
        "join" if owner.contains("thread") => Wait::Join,
        "join" if owner.contains("process") || owner.contains("pool") => Wait::ProcessJoin,
        "_wait_for_tstate_lock" => Wait::Join,
        "waitpid" | "wait4" | "waitid" | "wait3" => Wait::ProcessJoin,
        "wait" | "_wait" | "communicate" if owner.contains("popen") => Wait::ProcessJoin,
        "get" | "take" | "poll" | "recv" | "pop" if queue => Wait::QueueGet,
        "put" | "offer" if queue => Wait::QueuePut,
        "join" if queue => Wait::Sync,
        "select" | "poll" | "epoll_wait" | "epoll_pwait" | "ppoll" | "pselect" | "kevent"
        | "control" => Wait::Io,
        "acquire" | "acquire_lock" | "wait" | "wait_for" | "await" | "park" | "lock"
        | "lockinterruptibly" | "timedwait" => Wait::Sync,
        "__enter__" if lockish(owner) => Wait::Sync,
        m if m.starts_with("pthread_mutex_lock")
            || m.starts_with("pthread_cond_") && m.contains("wait")
            || m.starts_with("pthread_rwlock_") && m.contains("lock") && !m.contains("unlock")
            || m.starts_with("pthread_barrier_wait")
            || m.starts_with("sem_wait")
            || m.starts_with("sem_timedwait")
            || m.starts_with("futex_wait")
            || m == "futex"
            || m.starts_with("__lll_lock_wait")
            || m.starts_with("waitforsingleobject")
            || m.starts_with("waitformultipleobjects")
            || m == "entercriticalsection" =>
        {
            Wait::Sync
        }
        "read" | "recv" | "recv_bytes" | "recv_into" | "recvfrom" | "accept" | "readline"
            if fd_owner(owner) =>
        {
            Wait::Io
        }
        _ => return None,
    };
    Some(w)
}

/// The release a slice name stands for, if any.
fn release_of(owner: &str, method: &str) -> Option<Release> {
    let queue = owner.contains("queue");
    let r = match method {
        "put" | "put_nowait" | "offer" | "add" | "push" if queue => Release::Put,
        "get" | "get_nowait" | "take" | "poll" | "pop" | "task_done" if queue => Release::Get,
        "release" | "release_lock" | "notify" | "notify_all" | "notifyall" | "signal"
        | "broadcast" | "unpark" | "countdown" | "unlock" | "setevent" => Release::Unlock,
        "set" if owner.contains("event") => Release::Unlock,
        "__exit__" if lockish(owner) => Release::Unlock,
        m if m.starts_with("pthread_mutex_unlock")
            || m.starts_with("pthread_cond_signal")
            || m.starts_with("pthread_cond_broadcast")
            || m.starts_with("pthread_rwlock_unlock")
            || m.starts_with("sem_post")
            || m.starts_with("futex_wake")
            || m == "leavecriticalsection" =>
        {
            Release::Unlock
        }
        "write" | "send" | "sendall" | "sendto" | "send_bytes" | "_send" | "_send_bytes"
        | "writev" | "sendmsg"
            if fd_owner(owner) =>
        {
            Release::Write
        }
        _ => return None,
    };
    Some(r)
}

/// Owners of the system's own calls (`os.fork`, `syscall clone`), not of
/// a library's methods of the same name (`Tensor.clone`).
fn os_owner(owner: &str) -> bool {
    ["", "posix", "os", "nt", "libc", "syscall", "sys"].contains(&owner)
}

/// The thread or process a slice name starts, if any.
fn spawn_of(owner: &str, method: &str) -> Option<Spawn> {
    let s = match method {
        "start" if owner.contains("process") => Spawn::Process,
        "start" if owner.contains("thread") => Spawn::Thread,
        "start_new_thread"
        | "start_new"
        | "start_joinable_thread"
        | "pthread_create"
        | "thrd_create"
        | "createthread"
        | "_beginthreadex" => Spawn::Thread,
        "spawn" if owner == "thread" || owner == "builder" => Spawn::Thread,
        "__init__" | "_execute_child" | "_launch" if owner.contains("popen") => Spawn::Process,
        "fork_exec" | "posix_spawn" | "posix_spawnp" | "spawnv_passfds" | "createprocess"
        | "createprocessw" => Spawn::Process,
        "fork" | "vfork" | "forkpty" if os_owner(owner) => Spawn::Process,
        "clone" | "clone3" | "__clone" if os_owner(owner) => Spawn::Either,
        _ => return None,
    };
    Some(s)
}

/// What a slice named `name` is.
pub fn classify(name: &str) -> Class {
    let (owner, method) = call_of(name);
    Class {
        wait: wait_of(&owner, &method),
        release: release_of(&owner, &method),
        spawn: spawn_of(&owner, &method),
    }
}

/// The releases that can wake a wait of kind `w`, in tiers tried in turn:
/// the waker is the closest release of the first tier that has one; with
/// `true`, a thread's end counts in that tier too.
pub fn wakers(w: Wait) -> &'static [(&'static [Release], bool)] {
    use Release::*;
    match w {
        Wait::Join | Wait::ProcessJoin => &[(&[], true)],
        Wait::QueueGet => &[(&[Put], false), (&[Write, Unlock], true)],
        Wait::QueuePut => &[(&[Get], false), (&[Unlock], true)],
        // A lock, condition or event is released by a call; a thread's
        // end (the last resort of every wait) only when none came.
        Wait::Sync => &[(&[Unlock, Put, Get, Write], false)],
        Wait::Io => &[(&[Write, Put, Unlock], true)],
        // Answered by the slice its flow arrived at, or by the call that
        // started the thread, not by a search.
        Wait::Call | Wait::Start => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(n: &str) -> Option<Wait> {
        classify(n).wait
    }
    fn release(n: &str) -> Option<Release> {
        classify(n).release
    }

    #[test]
    fn python_names_as_viztracer_writes_them() {
        let lib = " (/usr/lib/python3.11/threading.py:1087)";
        assert_eq!(wait(&format!("Thread.join{lib}")), Some(Wait::Join));
        assert_eq!(
            wait(&format!("Thread._wait_for_tstate_lock{lib}")),
            Some(Wait::Join)
        );
        assert_eq!(wait("_thread.lock.acquire"), Some(Wait::Sync));
        assert_eq!(wait("_thread.RLock.acquire"), Some(Wait::Sync));
        assert_eq!(wait(&format!("Condition.wait{lib}")), Some(Wait::Sync));
        assert_eq!(wait(&format!("Event.wait{lib}")), Some(Wait::Sync));
        assert_eq!(wait(&format!("Queue.get{lib}")), Some(Wait::QueueGet));
        assert_eq!(wait("_queue.SimpleQueue.get"), Some(Wait::QueueGet));
        assert_eq!(wait(&format!("Queue.put{lib}")), Some(Wait::QueuePut));
        assert_eq!(
            wait(&format!("BaseProcess.join{lib}")),
            Some(Wait::ProcessJoin)
        );
        assert_eq!(wait("posix.waitpid"), Some(Wait::ProcessJoin));
        assert_eq!(wait("select.select"), Some(Wait::Io));
        assert_eq!(wait("select.epoll.poll"), Some(Wait::Io));
        assert_eq!(wait("_multiprocessing.SemLock.acquire"), Some(Wait::Sync));
        assert_eq!(wait(&format!("Thread.start{lib}")), None);
        assert_eq!(wait("_hashlib.openssl_sha256"), None);
        assert_eq!(wait("time.sleep"), None);
        assert_eq!(release("_thread.lock.release"), Some(Release::Unlock));
        assert_eq!(
            release(&format!("Condition.notify{lib}")),
            Some(Release::Unlock)
        );
        assert_eq!(release(&format!("Event.set{lib}")), Some(Release::Unlock));
        assert_eq!(release(&format!("Queue.put{lib}")), Some(Release::Put));
        assert_eq!(release(&format!("Queue.get{lib}")), Some(Release::Get));
        assert_eq!(release("posix.write"), Some(Release::Write));
        assert_eq!(release("dict.set"), None);
        assert_eq!(release("_io.TextIOWrapper.write"), None);
        assert_eq!(wait("_io.BufferedReader.read"), None);
        assert_eq!(wait("posix.read"), Some(Wait::Io));
    }

    #[test]
    fn c_cpp_and_java_commons() {
        assert_eq!(wait("pthread_join"), Some(Wait::Join));
        assert_eq!(wait("std::thread::join"), Some(Wait::Join));
        assert_eq!(wait("java.lang.Thread.join"), Some(Wait::Join));
        assert_eq!(wait("pthread_mutex_lock"), Some(Wait::Sync));
        assert_eq!(wait("std::mutex::lock"), Some(Wait::Sync));
        assert_eq!(wait("pthread_cond_wait"), Some(Wait::Sync));
        assert_eq!(wait("futex_wait"), Some(Wait::Sync));
        assert_eq!(wait("syscall futex"), Some(Wait::Sync));
        assert_eq!(wait("java.lang.Object.wait"), Some(Wait::Sync));
        assert_eq!(wait("LockSupport.park"), Some(Wait::Sync));
        assert_eq!(wait("poll"), Some(Wait::Io));
        assert_eq!(release("pthread_mutex_unlock"), Some(Release::Unlock));
        assert_eq!(release("std::mutex::unlock"), Some(Release::Unlock));
        assert_eq!(release("pthread_cond_signal"), Some(Release::Unlock));
        assert_eq!(release("futex_wake"), Some(Release::Unlock));
        assert_eq!(release("java.lang.Object.notifyAll"), Some(Release::Unlock));
    }

    #[test]
    fn calls_that_start_threads_and_processes() {
        let spawn = |n: &str| classify(n).spawn;
        let lib = " (/usr/lib/python3.11/threading.py:945)";
        let (t, p, e) = (
            Some(Spawn::Thread),
            Some(Spawn::Process),
            Some(Spawn::Either),
        );
        for (name, kind) in [
            (format!("Thread.start{lib}"), t),
            ("_thread.start_new_thread".into(), t),
            ("start_new_thread".into(), t),
            ("_thread.start_joinable_thread".into(), t),
            ("pthread_create".into(), t),
            ("std::thread::spawn".into(), t),
            ("std::thread::Builder::spawn".into(), t),
            ("java.lang.Thread.start".into(), t),
            (format!("BaseProcess.start{lib}"), p),
            ("Process.start".into(), p),
            (format!("Popen.__init__{lib}"), p),
            ("Popen._execute_child".into(), p),
            (format!("Popen._launch{lib}"), p),
            ("_posixsubprocess.fork_exec".into(), p),
            ("posix.fork".into(), p),
            ("os.fork".into(), p),
            ("fork".into(), p),
            ("posix_spawn".into(), p),
            ("posix.posix_spawn".into(), p),
            ("clone".into(), e),
            ("syscall clone3".into(), e),
            // Methods of the same names that start nothing.
            ("aten::clone".into(), None),
            ("Tensor.clone".into(), None),
            ("tokio::spawn".into(), None),
            ("Timer.start_time".into(), None),
            ("Dict.__init__".into(), None),
            ("Thread.join".into(), None),
            ("git.fork".into(), None),
        ] {
            assert_eq!(spawn(&name), kind, "{name}");
        }
        // A start is no blocking call and no release.
        assert_eq!(classify("Thread.start").wait, None);
        assert_eq!(classify("posix.fork").release, None);
        assert!(Spawn::Either.starts(true) && Spawn::Either.starts(false));
        assert!(Spawn::Thread.starts(true) && !Spawn::Thread.starts(false));
        assert!(!Spawn::Process.starts(true) && Spawn::Process.starts(false));
    }
}
