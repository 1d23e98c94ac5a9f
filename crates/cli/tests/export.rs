//! `critpath export` end to end: Perfetto/Chrome JSON that re-imports to the
//! same critical path, and CSV and Parquet tables that match the analysis.

mod common;

use common::*;
use serde_json::Value;

#[test]
fn perfetto_json_round_trips_to_the_same_path() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let o = run(&[
        "export",
        &example("nic-fig3.jsonl"),
        "--format",
        "perfetto",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let ev = doc["traceEvents"].as_array().unwrap();
    let names: Vec<&str> = ev
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    for sm in [
        "nic.descfetch",
        "nic.tx",
        "nic.txfifo",
        "critical path (830 ns)",
    ] {
        assert!(names.contains(&sm), "{names:?}");
    }
    // DMA packet slices add up to its total: 2 x 300 ns.
    let dma: f64 = ev
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "DMA packet")
        .map(|e| e["dur"].as_f64().unwrap())
        .sum();
    assert!((dma - 0.6).abs() < 1e-9, "{dma} µs");
    let crit: Vec<&Value> = ev.iter().filter(|e| e["cat"] == "critical").collect();
    assert_eq!(crit.len(), 7);
    assert_eq!(
        ev.iter().filter(|e| e["ph"] == "s").count(),
        ev.iter().filter(|e| e["ph"] == "f").count()
    );
    // Our own Chrome importer reads it back: the same path.
    let v = json_of(&["analyze", out.to_str().unwrap(), "--json"]);
    assert_eq!(v["critical_path"]["length_ns"], 830);
    assert_eq!(crit_of(&v, "DMA packet"), 600);
    assert_eq!(crit_of(&v, "transmit"), 120);
}

fn crit_of(v: &Value, state: &str) -> u64 {
    v["states"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["state"] == state)
        .map(|s| s["critical_ns"].as_u64().unwrap())
        .sum()
}

#[test]
fn csv_and_parquet_tables_match_the_analysis() {
    let dir = tempfile::tempdir().unwrap();
    let a = json_of(&["analyze", &example("nic-fig3.jsonl"), "--json", "--path"]);
    let csv_out = dir.path().join("s.csv");
    assert!(run(&[
        "export",
        &example("nic-fig3.jsonl"),
        "--format",
        "csv",
        "-o",
        csv_out.to_str().unwrap()
    ])
    .status
    .success());
    let text = std::fs::read_to_string(&csv_out).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("sys,sm,state,visits,total_ns,critical_ns,criticality")
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), a["states"].as_array().unwrap().len());
    assert!(
        rows[0].starts_with("local,nic.tx,DMA packet,2,600,600,0.72"),
        "{}",
        rows[0]
    );
    let path = std::fs::read_to_string(dir.path().join("s-path.csv")).unwrap();
    assert_eq!(
        path.lines().count() - 1,
        a["path"].as_array().unwrap().len()
    );
    assert!(
        path.contains("100,100,local,nic.tx,wait desc,nic.descfetch,true"),
        "{path}"
    );

    let pq = dir.path().join("s.parquet");
    assert!(run(&[
        "export",
        &example("nic-fig3.jsonl"),
        "--format",
        "parquet",
        "-o",
        pq.to_str().unwrap()
    ])
    .status
    .success());
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let r = SerializedFileReader::new(std::fs::File::open(&pq).unwrap()).unwrap();
    assert_eq!(r.metadata().file_metadata().num_rows() as usize, rows.len());
    let cols: Vec<String> = r
        .metadata()
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    assert_eq!(
        cols,
        [
            "sys",
            "sm",
            "state",
            "visits",
            "total_ns",
            "critical_ns",
            "criticality"
        ]
    );
    let r =
        SerializedFileReader::new(std::fs::File::open(dir.path().join("s-path.parquet")).unwrap())
            .unwrap();
    assert_eq!(r.metadata().file_metadata().num_rows(), 7);
}

#[test]
fn export_errors() {
    let o = run(&[
        "export",
        &example("nic-fig3.jsonl"),
        "--format",
        "svg",
        "-o",
        "/tmp/x.svg",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&[
        "export",
        &example("nic-fig3.jsonl"),
        "--format",
        "csv",
        "-o",
        "/nonexistent/dir/x.csv",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot write"));
}

#[test]
fn cgraph_as_svg() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g.svg");
    let o = run(&[
        "cgraph",
        &example("nic-fig3.jsonl"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"));
    // Edge labels, red for the most critical edges, dashed inter-SM edges.
    assert!(svg.contains(">DMA packet<"), "state labels");
    assert!(
        svg.contains("stroke=\"#5c0000ff\""),
        "DMA edges coloured by criticality"
    );
    assert!(svg.contains("stroke-dasharray"), "inter-SM edges dashed");
    assert!(svg.contains("nic.txfifo"), "SM names in node labels");
    // The same graph draws the same bytes, run after run (the layout
    // crate's font classes come in a hash map's order).
    assert!(
        svg.matches("font-family").count() >= 2,
        "several font classes"
    );
    for _ in 0..4 {
        let again = dir.path().join("again.svg");
        run(&[
            "cgraph",
            &example("nic-fig3.jsonl"),
            "-o",
            again.to_str().unwrap(),
        ]);
        assert!(
            std::fs::read_to_string(&again).unwrap() == svg,
            "another drawing"
        );
    }
}

#[test]
fn report_is_one_self_contained_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    let o = run(&[
        "report",
        &example("nic-fig3.jsonl"),
        "-o",
        out.to_str().unwrap(),
        "--next",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        !html.contains("<script src") && !html.contains("<link "),
        "everything inline"
    );
    assert!(html.contains("<svg") && html.contains("critpathReady"));
    assert!(
        html.contains("\"length_ns\":830"),
        "the analysis is embedded"
    );
    // Comments only, an empty file, a .cpt of no records, a foreign file:
    // a clear error, exit 2, as for every command, and no report.
    let cpt = dir.path().join("e.cpt");
    let empty = [
        write(dir.path(), "e.jsonl", "# nothing\n"),
        write(dir.path(), "e0.jsonl", ""),
        write(
            dir.path(),
            "e1.jsonl",
            "{\"t\":0,\"sm\":\"a\",\"ev\":\"state\",\"state\":\"s\"}\n",
        ),
    ];
    let (one, cptp) = (empty[2].to_str().unwrap(), cpt.to_str().unwrap());
    assert!(run(&["convert", one, cptp]).status.success());
    // The one record, dropped: a header and no chunk.
    let whole = std::fs::read(&cpt).unwrap();
    std::fs::write(&cpt, &whole[..16]).unwrap();
    for (p, says) in [
        (&empty[0], "holds no records"),
        (&empty[1], "the file is empty"),
        (&cpt, "nothing to analyze"),
    ] {
        let html = dir.path().join("e.html");
        let o = run(&["report", p.to_str().unwrap(), "-o", html.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", p.display());
        assert!(err.contains(says), "{}: {err}", p.display());
        assert!(!html.exists(), "{}", p.display());
    }
    let png = write(dir.path(), "x.png", "\u{89}PNG\r\n");
    assert_eq!(
        run(&[
            "report",
            png.to_str().unwrap(),
            "-o",
            dir.path().join("x.html").to_str().unwrap()
        ])
        .status
        .code(),
        Some(2)
    );
}

/// The report's page takes the path's segments from the edges the walk
/// hands over, not from a path kept whole: the links the reader inferred
/// are marked there as on the path `analyze --path` prints.
#[test]
fn the_reports_segments_mark_the_links_the_reader_inferred() {
    let trace = example("viztracer/spawn.json");
    let a = json_of(&["analyze", &trace, "--json", "--path"]);
    let marked = |segs: &[Value]| -> Vec<(u64, String)> {
        (segs.iter())
            .filter(|s| s["inferred"] == true && s["end_ns"] != s["start_ns"])
            .map(|s| (s["end_ns"].as_u64().unwrap(), s["sm"].to_string()))
            .collect()
    };
    let on_path = marked(a["path"].as_array().unwrap());
    assert!(!on_path.is_empty(), "the example's path has inferred links");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    let o = run(&["report", &trace, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&out).unwrap();
    let at = html.find("\"segments\":").expect("the page's segments") + 11;
    let segs: Value = serde_json::Deserializer::from_str(&html[at..])
        .into_iter()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(marked(segs.as_array().unwrap()), on_path);
}

#[test]
fn a_huge_cgraph_svg_draws_its_heaviest_edges() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (0..2000)
        .map(|i| {
            format!(
                "{{\"t\":{},\"sm\":\"sm{}\",\"ev\":\"state\",\"state\":\"s{i}\"}}\n",
                i * 10,
                i % 7
            )
        })
        .collect();
    let p = write(dir.path(), "wide.jsonl", &body);
    let out = dir.path().join("w.svg");
    let o = run(&["cgraph", p.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("hidden"));
    assert!(std::fs::read_to_string(&out).unwrap().contains("<svg"));
}
