//! The manual's checks: every relative link and `#anchor` in README.md and
//! the book (docs/, every Markdown file in it, so new pages are checked
//! without a list to update) resolves, and the crate table of
//! docs/architecture.md is the crate graph the Cargo.toml files declare.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Markdown files under `dir`, recursively (the book's output left out).
fn markdown_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() && p.file_name().is_some_and(|n| n != "book") {
            markdown_under(&p, out);
        } else if p.extension().is_some_and(|e| e == "md") {
            out.push(p);
        }
    }
}

/// The lines of a Markdown file that are prose: fenced code blocks blanked
/// (their lines kept, so line numbers stay right).
fn prose_lines(text: &str) -> Vec<String> {
    let mut fence: Option<String> = None;
    text.lines()
        .map(|l| {
            let t = l.trim_start();
            let marker: String = t.chars().take_while(|&c| c == '`' || c == '~').collect();
            if marker.len() >= 3 {
                match &fence {
                    None => fence = Some(marker),
                    Some(f) if marker.starts_with(f.as_str()) => fence = None,
                    Some(_) => {}
                }
                return String::new();
            }
            if fence.is_some() {
                String::new()
            } else {
                l.to_string()
            }
        })
        .collect()
}

/// `s` without its inline code spans.
fn without_code(s: &str) -> String {
    let mut o = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('`') {
        o.push_str(&rest[..i]);
        let ticks = rest[i..].chars().take_while(|&c| c == '`').count();
        let after = &rest[i + ticks..];
        match after.find(&"`".repeat(ticks)) {
            Some(j) => rest = &after[j + ticks..],
            None => {
                rest = after;
            }
        }
    }
    o.push_str(rest);
    o
}

/// The anchor GitHub and mdBook give a heading: lower case, letters,
/// digits, `-` and `_` kept, spaces become `-`, the rest dropped; a link's
/// text stands for the link.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    while let Some(i) = rest.find("](") {
        text.push_str(&rest[..i]);
        rest = rest[i + 2..].split_once(')').map_or("", |x| x.1);
    }
    text.push_str(rest);
    text.trim()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(c.to_lowercase().next().unwrap_or(c))
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The anchors of a Markdown file: its headings' (repeats numbered `-1`,
/// `-2` as both renderers do) and explicit `id="..."` / `name="..."`.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for l in prose_lines(text) {
        let hashes = l.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && l[hashes..].starts_with(' ') {
            let s = slug(&l[hashes..]);
            let n = seen.entry(s.clone()).or_insert(0);
            out.insert(if *n == 0 {
                s.clone()
            } else {
                format!("{s}-{n}")
            });
            *n += 1;
        }
        for key in ["id=\"", "name=\""] {
            for (i, _) in l.match_indices(key) {
                let v = &l[i + key.len()..];
                if let Some(end) = v.find('"') {
                    out.insert(v[..end].to_string());
                }
            }
        }
    }
    out
}

/// The link targets of a Markdown file's prose, with their line numbers:
/// inline links `[text](target)`, images, and reference definitions.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, l) in prose_lines(text).iter().enumerate() {
        let l = without_code(l);
        for (i, _) in l.match_indices("](") {
            let t = &l[i + 2..];
            let end = t.find([')', ' ']).unwrap_or(t.len());
            out.push((n + 1, t[..end].trim_matches(['<', '>']).to_string()));
        }
        let t = l.trim_start();
        if t.starts_with('[') {
            if let Some((_, target)) = t.split_once("]: ") {
                out.push((n + 1, target.split_whitespace().next().unwrap_or("").into()));
            }
        }
    }
    out
}

/// What is wrong with link `target` of file `from`, if anything.
fn broken(from: &Path, target: &str) -> Option<String> {
    if target.is_empty() {
        return Some("an empty link".into());
    }
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        from.to_path_buf()
    } else {
        from.parent().unwrap().join(path)
    };
    if !file.exists() {
        return Some(format!("{} does not exist", file.display()));
    }
    let anchor = anchor.filter(|_| file.extension().is_some_and(|e| e == "md"))?;
    let text = fs::read_to_string(&file).unwrap();
    if anchors(&text).contains(anchor) {
        None
    } else {
        Some(format!(
            "no heading of {} has anchor #{anchor}",
            file.display()
        ))
    }
}

#[test]
fn every_relative_link_and_anchor_of_the_docs_resolves() {
    let root = root();
    let mut files = vec![root.join("README.md")];
    markdown_under(&root.join("docs"), &mut files);
    assert!(files.len() > 5, "the book's pages are found: {files:?}");
    let mut bad = Vec::new();
    let mut checked = 0;
    for f in &files {
        let text = fs::read_to_string(f).unwrap();
        for (line, target) in links(&text) {
            checked += 1;
            if let Some(why) = broken(f, &target) {
                let name = f.strip_prefix(&root).unwrap_or(f).display().to_string();
                bad.push(format!("{name}:{line}: ({target}): {why}"));
            }
        }
    }
    assert!(checked > 50, "links are found ({checked})");
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn the_link_checker_sees_what_is_broken() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.md");
    let text = "# A `code` Title: here\n\n## A `code` Title: here\n\n```\n# not a heading\n[x](nowhere.md)\n```\n\
                [ok](#a-code-title-here-1) [bad](#not-a-heading) `[skip](gone.md)` [gone](gone.md)\n";
    fs::write(&page, text).unwrap();
    let found: Vec<String> = links(text).into_iter().map(|l| l.1).collect();
    assert_eq!(found, ["#a-code-title-here-1", "#not-a-heading", "gone.md"]);
    assert_eq!(broken(&page, "#a-code-title-here"), None);
    assert_eq!(broken(&page, "#a-code-title-here-1"), None);
    assert!(broken(&page, "#not-a-heading").is_some());
    assert!(broken(&page, "gone.md").is_some());
    assert_eq!(broken(&page, "page.md#a-code-title-here"), None);
}

/// The critpath crates that `Cargo.toml`'s `[dependencies]` names, by the
/// name after `critpath-` (`sdk` for `critpath-sdk`).
fn cargo_deps(toml: &str) -> (String, BTreeSet<String>) {
    let mut name = String::new();
    let mut deps = BTreeSet::new();
    let mut section = String::new();
    for l in toml.lines().map(str::trim) {
        if l.starts_with('[') {
            section = l.to_string();
            continue;
        }
        if section == "[package]" && l.starts_with("name") {
            name = l.split('"').nth(1).unwrap_or("").to_string();
        }
        if section == "[dependencies]" {
            let key = l.split(['=', '.', ' ']).next().unwrap_or("");
            if let Some(short) = key.strip_prefix("critpath-") {
                deps.insert(short.to_string());
            }
        }
    }
    (name, deps)
}

/// The crate table of docs/architecture.md: each row's crate (the first
/// code span) and the crates of its last column, in the table's order.
fn documented_graph(text: &str) -> Vec<(String, BTreeSet<String>)> {
    let mut out = Vec::new();
    let mut in_table = false;
    for l in text.lines() {
        if l.starts_with("| crate | holds | depends on |") {
            in_table = true;
            continue;
        }
        if !in_table || l.starts_with("|---") {
            continue;
        }
        if !l.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = l.trim_matches('|').split(" | ").collect();
        let krate = cells[0].split('`').nth(1).expect("a crate in a code span");
        let deps = cells.last().unwrap().trim();
        let deps = if deps == "nothing" {
            BTreeSet::new()
        } else {
            deps.split(',').map(|d| d.trim().to_string()).collect()
        };
        out.push((krate.to_string(), deps));
    }
    out
}

#[test]
fn the_architecture_page_describes_the_crate_graph_of_the_cargo_files() {
    let root = root();
    let mut manifests: Vec<PathBuf> = fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("Cargo.toml"))
        .filter(|p| p.exists())
        .collect();
    manifests.push(root.join("sdk/rust/Cargo.toml"));
    let actual: BTreeMap<String, BTreeSet<String>> = manifests
        .iter()
        .map(|p| cargo_deps(&fs::read_to_string(p).unwrap()))
        .collect();
    assert!(actual.len() >= 12, "{actual:?}");
    let page = fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let table = documented_graph(&page);
    let documented: BTreeMap<String, BTreeSet<String>> = table.iter().cloned().collect();
    let short = |n: &str| n.strip_prefix("critpath-").unwrap_or(n).to_string();
    let mut wrong = Vec::new();
    for (krate, deps) in &actual {
        match documented.get(krate) {
            None => wrong.push(format!("{krate} is not in the table")),
            Some(d) if d != deps => wrong.push(format!(
                "{krate}: the table says it depends on {d:?}, Cargo.toml on {deps:?}"
            )),
            Some(_) => {}
        }
    }
    for krate in documented.keys().filter(|k| !actual.contains_key(*k)) {
        wrong.push(format!("{krate} is in the table but has no Cargo.toml"));
    }
    // The page says each crate depends only on those listed before it.
    for (i, (krate, deps)) in table.iter().enumerate() {
        let before: BTreeSet<String> = table[..i].iter().map(|r| short(&r.0)).collect();
        for d in deps.iter().filter(|d| !before.contains(*d)) {
            wrong.push(format!("{krate} depends on {d}, listed after it"));
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/architecture.md:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_crate_table_parser_reads_rows_and_cargo_files() {
    let page = "| crate | holds | depends on |\n|---|---|---|\n\
                | `critpath-a` (`crates/a`) | x, y | nothing |\n\
                | `critpath-b` (`crates/b`) | z | a, sdk |\n\nafter\n";
    let t = documented_graph(page);
    assert_eq!(t.len(), 2);
    assert_eq!(t[1].0, "critpath-b");
    assert_eq!(t[1].1, BTreeSet::from(["a".to_string(), "sdk".to_string()]));
    let toml = "[package]\nname = \"critpath-b\"\n[dependencies]\ncritpath-a.workspace = true\n\
                critpath-sdk = { path = \"x\" }\nserde = \"1\"\n[dev-dependencies]\ncritpath-c.workspace = true\n";
    let (name, deps) = cargo_deps(toml);
    assert_eq!(name, "critpath-b");
    assert_eq!(deps, BTreeSet::from(["a".to_string(), "sdk".to_string()]));
}

#[test]
fn the_json_page_gives_each_kind_its_severity() {
    use critpath_trace::{DiagnosticKind, Severity};
    let page = fs::read_to_string(root().join("docs/json.md")).unwrap();
    for sev in Severity::ALL {
        let row = page
            .lines()
            .find(|l| l.starts_with(&format!("| `{sev}` |")))
            .unwrap_or_else(|| panic!("docs/json.md has no row for severity {sev}"));
        let listed: BTreeSet<&str> = row
            .rsplit(" | ")
            .next()
            .unwrap()
            .split(',')
            .map(|k| k.trim().trim_matches(['`', '|', ' ']))
            .collect();
        let actual: BTreeSet<&str> = DiagnosticKind::ALL
            .iter()
            .filter(|k| k.severity() == sev)
            .map(|k| k.as_str())
            .collect();
        assert_eq!(listed, actual, "docs/json.md, severity {sev}");
    }
}
