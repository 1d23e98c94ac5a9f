//! End-to-end tests of how output files are written: never over an input
//! (whatever the path that names it), and whole or not at all.

mod common;

use common::{example, run, write};
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
    let d = dir.path().to_str().unwrap();
    let o = run(&[
        "bench",
        "--records",
        "2M",
        "--formats",
        "jsonl",
        "--dir",
        d,
        "--keep",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let big = dir.path().join("bench-2000000.jsonl");
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
