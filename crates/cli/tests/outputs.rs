//! End-to-end tests of how output files are written: never over an input
//! (whatever the path that names it), whole or not at all with the
//! permissions of the file replaced, through symlinks (which stay), into
//! devices and FIFOs as they are, and to standard output for `-`; no
//! partial file left behind by a signal.

mod common;

use common::{bench_trace, example, run, write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const TRACE: &str = r#"{"t":0,"sm":"app","ev":"state","state":"main"}
{"t":10,"sm":"app","ev":"call","fn":"parse"}
{"t":30,"sm":"app","ev":"call","fn":"lex"}
{"t":45,"sm":"app","ev":"ret","fn":"lex"}
{"t":60,"sm":"app","ev":"ret","fn":"parse"}
{"t":100,"sm":"app","ev":"end"}
"#;

/// Asserts a refusal to overwrite `input`: exit 2, a message that says so,
/// and the input as it was.
fn assert_refused(o: &std::process::Output, input: &Path, body: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(err.starts_with("critpath: error: "), "{err}");
    assert!(err.contains("is the input"), "{err}");
    assert_eq!(std::fs::read_to_string(input).unwrap(), body);
}

#[test]
fn convert_onto_its_input_keeps_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(dir.path(), "s.jsonl", TRACE);
    let p = s.to_str().unwrap();
    assert_refused(&run(&["convert", p, p]), &s, TRACE);
    // Another spelling of the same path is the same file.
    let other = format!("{}/./s.jsonl", dir.path().display());
    assert_refused(&run(&["convert", p, &other]), &s, TRACE);
}

#[test]
fn a_link_to_the_input_is_refused_too() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(dir.path(), "s.jsonl", TRACE);
    let sym = dir.path().join("sym.jsonl");
    std::os::unix::fs::symlink(&s, &sym).unwrap();
    let hard = dir.path().join("hard.jsonl");
    std::fs::hard_link(&s, &hard).unwrap();
    let p = s.to_str().unwrap();
    for link in [&sym, &hard] {
        let l = link.to_str().unwrap();
        assert_refused(&run(&["convert", p, l]), &s, TRACE);
        assert_refused(&run(&["analyze", p, "-o", l]), &s, TRACE);
        assert_refused(&run(&["report", p, "-o", l]), &s, TRACE);
        assert_refused(&run(&["export", p, "--format", "csv", "-o", l]), &s, TRACE);
    }
    assert!(std::fs::symlink_metadata(&sym).unwrap().is_symlink());
}

#[test]
fn outputs_replace_older_files_whole_and_readable() {
    let dir = tempfile::tempdir().unwrap();
    let out = write(dir.path(), "out.txt", "old");
    let o = run(&[
        "analyze",
        &example("nic-fig3.jsonl"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("critical path"));
    // A new file gets the permissions the umask allows, not a temporary
    // file's owner-only ones.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o666 & !umask(), "mode {mode:o}");
    // Nothing else is left in the directory.
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1);
}

/// This process's umask (children inherit it).
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line.split_whitespace().nth(1).unwrap(), 8).unwrap()
}

#[test]
fn an_interrupted_write_leaves_no_half_file() {
    let dir = tempfile::tempdir().unwrap();
    let big = bench_trace(dir.path(), 2_000_000, "jsonl");
    let out = write(dir.path(), "out.cpt", "old");
    let mut child = Command::new(env!("CARGO_BIN_EXE_critpath"))
        .arg("convert")
        .arg(&big)
        .arg(&out)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let finished = child.try_wait().unwrap().is_some();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !finished,
        "the conversion ended before it could be interrupted"
    );
    // The old output is untouched; the partial one never took its name.
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
    // Finished, the same command replaces it with a whole trace.
    let o = run(&["convert", big.to_str().unwrap(), out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&["check", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Runs critpath in `dir` (where a file named `-` would appear).
fn run_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_critpath"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn dash_is_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let nic = example("nic-fig3.jsonl");
    let o = run_in(dir.path(), &["analyze", &nic, "-o", "-"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("critical path"));
    let o = run_in(dir.path(), &["cgraph", &nic, "-o", "-"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.starts_with(b"digraph"));
    let o = run_in(dir.path(), &["convert", &nic, "-", "--format", "jsonl"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let converted = write(dir.path(), "back.jsonl", &o.stdout);
    let o = run(&["check", converted.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::remove_file(&converted).unwrap();
    // Standard output has no extension: convert asks for the format.
    let o = run_in(dir.path(), &["convert", &nic, "-"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--format jsonl"), "{err}");
    // No file named `-` (nor anything else) was created.
    assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
}

#[test]
fn standard_output_onto_the_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(dir.path(), "s.jsonl", TRACE);
    let append = std::fs::OpenOptions::new().append(true).open(&s).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_critpath"))
        .args(["convert", s.to_str().unwrap(), "-", "--format", "jsonl"])
        .stdout(append)
        .output()
        .unwrap();
    assert_refused(&o, &s, TRACE);
}

#[test]
fn a_fifo_is_written_into_not_replaced() {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("out.fifo");
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    let path = fifo.clone();
    let reader = std::thread::spawn(move || std::fs::read_to_string(path).unwrap());
    let o = run(&[
        "analyze",
        &example("nic-fig3.jsonl"),
        "-o",
        fifo.to_str().unwrap(),
    ]);
    // A reader still waiting for a writer (the command failed) is released.
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo);
    let text = reader.join().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("critical path"), "{text}");
    let ft = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(ft.is_fifo());
    assert_eq!(names(dir.path()), ["out.fifo"]);
}

#[test]
fn a_symlink_is_kept_and_the_file_it_names_replaced() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let real = write(&dir.path().join("data"), "real.txt", "old");
    let link = dir.path().join("link.txt");
    std::os::unix::fs::symlink("data/real.txt", &link).unwrap();
    let o = run(&[
        "analyze",
        &example("nic-fig3.jsonl"),
        "-o",
        link.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("data/real.txt")
    );
    assert!(std::fs::read_to_string(&real)
        .unwrap()
        .contains("critical path"));
    assert_eq!(names(dir.path()), ["data", "link.txt"]);
    assert_eq!(names(&dir.path().join("data")), ["real.txt"]);
}

#[test]
fn a_replaced_file_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let nic = example("nic-fig3.jsonl");
    for m in [0o600, 0o640, 0o664] {
        let out = write(dir.path(), "out.jsonl", "old");
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(m)).unwrap();
        let o = run(&["convert", &nic, out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_ne!(std::fs::read_to_string(&out).unwrap(), "old");
        assert_eq!(mode(&out), m, "mode {:o}", mode(&out));
    }
}

#[test]
fn a_full_device_is_an_error_and_stays_a_device() {
    use std::os::unix::fs::FileTypeExt;
    let full = Path::new("/dev/full");
    if !full.exists() {
        return;
    }
    let o = run(&["report", &example("nic-fig3.jsonl"), "-o", "/dev/full"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(
        err.starts_with("critpath: error: /dev/full: cannot write:"),
        "{err}"
    );
    let ft = std::fs::symlink_metadata(full).unwrap().file_type();
    assert!(ft.is_char_device());
}

#[test]
fn a_descriptor_is_written_into_after_what_it_holds() {
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;
    if !Path::new("/dev/stdout").exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = write(dir.path(), "out.txt", "");
    let mut file = std::fs::OpenOptions::new().write(true).open(&out).unwrap();
    file.write_all(b"header\n").unwrap();
    let ino = std::fs::metadata(&out).unwrap().ino();
    let st = Command::new(env!("CARGO_BIN_EXE_critpath"))
        .args(["analyze", &example("nic-fig3.jsonl"), "-o", "/dev/stdout"])
        .stdout(file)
        .status()
        .unwrap();
    assert!(st.success());
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("header\n"), "{text}");
    assert!(text.contains("critical path"), "{text}");
    assert_eq!(std::fs::metadata(&out).unwrap().ino(), ino);
    assert_eq!(names(dir.path()), ["out.txt"]);
}

#[test]
fn a_signal_removes_the_partial_file() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let out = write(dir.path(), "out.cpt", "old");
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        // The trace comes from standard input, which stays open: the
        // conversion waits for more, its partial file in place, until the
        // signal.
        let mut child = Command::new(env!("CARGO_BIN_EXE_critpath"))
            .args(["convert", "-", out.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // More than format detection reads before the output is opened.
        let mut stdin = child.stdin.take().unwrap();
        for t in 0..5000 {
            let line = format!(
                "{{\"t\":{t},\"sm\":\"app\",\"ev\":\"state\",\"state\":\"s{}\"}}\n",
                t % 3
            );
            stdin.write_all(line.as_bytes()).unwrap();
        }
        stdin.flush().unwrap();
        let partial = || names(dir.path()).iter().any(|n| n.ends_with(".partial"));
        let start = std::time::Instant::now();
        while !partial() {
            assert!(start.elapsed() < Duration::from_secs(60), "no partial file");
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: signalling the child started above.
        assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
        let status = child.wait().unwrap();
        drop(stdin);
        assert_eq!(status.code(), Some(code), "signal {sig}");
        assert_eq!(names(dir.path()), ["out.cpt"]);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
    }
}
