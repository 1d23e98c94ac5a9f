//! The .cpt reader on small committed files (plain and zstd chunks), their
//! round trip through the writer, and cut or corrupt files.

mod common;

use common::*;
use critpath_readers::{Codec, CptReader, CptWriter, JsonlReader};
use critpath_trace::{Location, RecordSource};
use std::io::Cursor;

fn jsonl_lines() -> Vec<String> {
    let mut r = JsonlReader::new(Cursor::new(bytes("small.jsonl")), "small.jsonl");
    let (recs, errs) = drain(&mut r);
    assert!(errs.is_empty());
    text(&recs, &r)
}

fn cpt_lines(body: Vec<u8>) -> (Vec<String>, Vec<critpath_trace::ReadError>) {
    let mut r = CptReader::new(Cursor::new(body), "t.cpt").unwrap();
    let (recs, errs) = drain(&mut r);
    (text(&recs, &r), errs)
}

fn write(codec: Codec) -> Vec<u8> {
    let mut src = JsonlReader::new(Cursor::new(bytes("small.jsonl")), "small.jsonl");
    let (recs, _) = drain(&mut src);
    let mut w = CptWriter::new(Vec::new(), codec).unwrap();
    for r in &recs {
        w.write(r, src.strings()).unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn committed_files_read_as_the_jsonl_they_were_made_from() {
    for name in ["small.cpt", "small-zstd.cpt"] {
        let (lines, errs) = cpt_lines(bytes(name));
        assert!(errs.is_empty(), "{name}: {errs:?}");
        assert_eq!(lines, jsonl_lines(), "{name}");
    }
}

#[test]
fn the_writer_makes_the_committed_files() {
    assert_eq!(write(Codec::None), bytes("small.cpt"));
    assert_eq!(cpt_lines(write(Codec::Zstd)).0, jsonl_lines());
}

#[test]
fn a_cut_file_is_a_fatal_error_at_an_offset() {
    let body = bytes("small.cpt");
    let (_, errs) = cpt_lines(body[..body.len() - 20].to_vec());
    let e = errs.last().unwrap();
    assert!(e.fatal && e.message.contains("truncated"), "{e}");
    assert!(matches!(e.location, Location::Offset(_)));
    let mut bad = body.clone();
    bad[30] ^= 0xff;
    let (_, errs) = cpt_lines(bad);
    assert!(errs.last().unwrap().message.contains("checksum"));
    let Err(e) = CptReader::new(Cursor::new(b"CRITPAT".to_vec()), "t.cpt") else {
        panic!("a short header must fail");
    };
    assert!(e.message.contains("header"));
}

#[test]
fn a_waited_recv_round_trips_through_jsonl_and_cpt() {
    let src = concat!(
        "{\"t\":1,\"ev\":\"send\",\"sm\":\"h\",\"id\":7}\n",
        "{\"t\":2,\"ev\":\"recv\",\"sm\":\"w\",\"id\":7,\"state\":\"run\",\"waited\":true}\n",
        "{\"t\":3,\"ev\":\"send\",\"sm\":\"h\",\"id\":8}\n",
        "{\"t\":4,\"ev\":\"recv\",\"sm\":\"w\",\"id\":8,\"state\":\"run\"}\n",
    );
    let mut r = JsonlReader::new(Cursor::new(src.as_bytes().to_vec()), "w.jsonl");
    let (recs, errs) = drain(&mut r);
    assert!(errs.is_empty(), "{errs:?}");
    let lines = text(&recs, &r);
    assert!(lines[1].ends_with(",\"waited\":true}"), "{}", lines[1]);
    assert!(!lines[3].contains("waited"), "{}", lines[3]);
    let mut w = CptWriter::new(Vec::new(), Codec::None).unwrap();
    for rec in &recs {
        w.write(rec, r.strings()).unwrap();
    }
    let (back, errs) = cpt_lines(w.finish().unwrap());
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(back, lines);
}

#[test]
fn a_held_point_round_trips_through_jsonl_and_cpt() {
    let src = concat!(
        "{\"t\":1,\"ev\":\"state\",\"sm\":\"w\",\"state\":\"runnable\"}\n",
        "{\"t\":5,\"ev\":\"held\",\"sm\":\"w\",\"on\":\"h\",\"on_state\":\"running\"}\n",
        "{\"t\":6,\"ev\":\"held\",\"thread\":3,\"on\":\"h\",\"on_state\":\"running:syscall:read\"}\n",
    );
    let mut r = JsonlReader::new(Cursor::new(src.as_bytes().to_vec()), "h.jsonl");
    let (recs, errs) = drain(&mut r);
    assert!(errs.is_empty(), "{errs:?}");
    let lines = text(&recs, &r);
    assert_eq!(
        lines[1],
        "{\"t\":5,\"ev\":\"held\",\"sm\":\"w\",\"on\":\"h\",\"on_state\":\"running\"}"
    );
    let mut w = CptWriter::new(Vec::new(), Codec::Zstd).unwrap();
    for rec in &recs {
        w.write(rec, r.strings()).unwrap();
    }
    let (back, errs) = cpt_lines(w.finish().unwrap());
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(back, lines);
    // Without its holder's state, a held point is refused with the field.
    let bad = "{\"t\":1,\"ev\":\"held\",\"sm\":\"w\",\"on\":\"h\"}\n";
    let mut r = JsonlReader::new(Cursor::new(bad.as_bytes().to_vec()), "h.jsonl");
    let (_, errs) = drain(&mut r);
    assert!(errs[0].message.contains("on_state"), "{errs:?}");
}

#[test]
fn string_ids_travel_inline_and_never_fill_the_string_table() {
    // 100k messages, each with an id of its own, then the same trace read
    // back: the reader's table keeps the SM and state names alone, and
    // each recv's id has the text its send had.
    let mut strings = critpath_trace::Interner::new();
    let (a, b, run) = (
        strings.intern("a"),
        strings.intern("b"),
        strings.intern("run"),
    );
    let mut w = CptWriter::new(Vec::new(), Codec::Zstd).unwrap();
    for i in 0..100_000u64 {
        let id = strings.transient_link(&format!("msg-{i}"));
        let send = critpath_trace::Event::Send {
            who: critpath_trace::Who::Sm(a),
            id,
        };
        let recv = critpath_trace::Event::Recv {
            who: critpath_trace::Who::Sm(b),
            id,
            state: run,
            waited: i % 2 == 0,
        };
        for (t, ev) in [(2 * i, send), (2 * i + 1, recv)] {
            let r = critpath_trace::Record {
                t,
                sys: critpath_trace::Sym::LOCAL,
                ev,
            };
            w.write(&r, &strings).unwrap();
        }
    }
    let mut r = CptReader::new(Cursor::new(w.finish().unwrap()), "ids.cpt").unwrap();
    let mut batch = Vec::new();
    let mut seen = 0u64;
    loop {
        r.next_batch(&mut batch, 256).unwrap();
        if batch.is_empty() {
            break;
        }
        for (rec, _) in &batch {
            let id = match rec.ev {
                critpath_trace::Event::Send { id, .. } | critpath_trace::Event::Recv { id, .. } => {
                    id
                }
                _ => panic!("only sends and recvs"),
            };
            let critpath_trace::LinkId::Str { sym, key } = id else {
                panic!("a string id")
            };
            let text = format!("msg-{}", seen / 2);
            assert_eq!(r.strings().resolve(sym), text);
            assert_eq!(key, critpath_trace::strings::link_key(&text));
            seen += 1;
        }
    }
    assert_eq!(seen, 200_000);
    assert_eq!(r.strings().len(), 4, "local, a, b and run");
}

/// The end marker's record count, at its place in a file `body`.
fn set_end_count(body: &mut [u8], n: u64) {
    let at = body.len() - 16;
    assert_eq!(body[at], b'E');
    body[at + 4..at + 12].copy_from_slice(&n.to_le_bytes());
}

#[test]
fn an_end_marker_that_miscounts_is_an_error_after_the_records() {
    let mut body = bytes("small.cpt");
    let end = body.len() - 16;
    set_end_count(&mut body, 999);
    let (lines, errs) = cpt_lines(body);
    assert_eq!(lines, jsonl_lines());
    assert_eq!(errs.len(), 1, "{errs:?}");
    let e = &errs[0];
    assert!(!e.fatal);
    assert_eq!(e.location, Location::Offset(end as u64));
    assert!(
        e.message
            .contains("the end marker says the file holds 999 records, but 13 were read"),
        "{e}"
    );
}

#[test]
fn bytes_after_the_end_marker_are_an_error_at_their_offset() {
    let mut body = bytes("small.cpt");
    let end = body.len();
    body.extend_from_slice(b"junkjunk");
    let (lines, errs) = cpt_lines(body.clone());
    assert_eq!(lines, jsonl_lines());
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].location, Location::Offset(end as u64));
    assert!(
        errs[0].message.starts_with(&format!(
            "8 bytes after the end marker at byte offset {} not read",
            end - 16
        )),
        "{}",
        errs[0]
    );
    // With a miscount too, both are said.
    set_end_count(&mut body[..end], 3);
    let (_, errs) = cpt_lines(body);
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs[0].message.contains("says the file holds 3 records"));
    assert!(errs[1].message.contains("8 bytes after the end marker"));
}

/// `cat a.cpt b.cpt`: both files are read, the second's strings by their
/// own numbers.
#[test]
fn concatenated_files_read_as_one_trace() {
    let first = concat!(
        "{\"t\":1,\"ev\":\"state\",\"sm\":\"a\",\"state\":\"x\"}\n",
        "{\"t\":2,\"ev\":\"send\",\"sm\":\"a\",\"id\":\"m1\"}\n",
    );
    let second = concat!(
        "{\"t\":3,\"ev\":\"state\",\"sm\":\"b\",\"state\":\"y\"}\n",
        "{\"t\":4,\"ev\":\"recv\",\"sm\":\"b\",\"id\":\"m1\",\"state\":\"x\"}\n",
        "{\"t\":5,\"ev\":\"state\",\"sm\":\"a\",\"state\":\"y\",\"sys\":\"h\"}\n",
    );
    for codec in [Codec::None, Codec::Zstd] {
        let cpt = |src: &str| {
            let mut r = JsonlReader::new(Cursor::new(src.as_bytes().to_vec()), "t.jsonl");
            let (recs, _) = drain(&mut r);
            let mut w = CptWriter::new(Vec::new(), codec).unwrap();
            for rec in &recs {
                w.write(rec, r.strings()).unwrap();
            }
            w.finish().unwrap()
        };
        let mut both = cpt(first);
        both.extend(cpt(second));
        let mut r = CptReader::new(Cursor::new(both), "t.cpt").unwrap();
        let (recs, errs) = drain(&mut r);
        assert!(errs.is_empty(), "{errs:?}");
        let want: Vec<String> = format!("{first}{second}")
            .lines()
            .map(|l| {
                let mut r = JsonlReader::new(Cursor::new(l.as_bytes().to_vec()), "l");
                let (recs, _) = drain(&mut r);
                text(&recs, &r).remove(0)
            })
            .collect();
        assert_eq!(text(&recs, &r), want);
        // One name, one symbol: `a` of both files is one SM.
        let sm = |ev: &critpath_trace::Event| match ev {
            critpath_trace::Event::State {
                who: critpath_trace::Who::Sm(s),
                ..
            } => *s,
            _ => panic!("{ev:?}"),
        };
        let (a1, a2) = (sm(&recs[0].ev), sm(&recs[4].ev));
        assert_eq!(a1, a2);
    }
}

#[test]
fn a_file_concatenated_twice_reads_once_and_says_why() {
    let one = bytes("small.cpt");
    let mut two = one.clone();
    two.extend_from_slice(&one);
    let (lines, errs) = cpt_lines(two);
    let once = jsonl_lines();
    // The second copy's records before the first's last time are out of
    // order; those at its last time are read again.
    assert!(lines.starts_with(&once), "{lines:?}");
    assert!(!errs.is_empty() && errs.iter().all(|e| !e.fatal));
    assert_eq!(errs.len() + lines.len(), 2 * once.len());
    assert!(
        errs[0].message.contains(&format!(
            "of the .cpt file concatenated at byte offset {} is before t=",
            one.len()
        )),
        "{}",
        errs[0]
    );
}

#[test]
fn a_time_past_i64_max_is_an_error_at_its_offset() {
    use critpath_trace::{Event, Interner, Record, Sym, Who};
    let mut s = Interner::new();
    let (a, x) = (s.intern("a"), s.intern("x"));
    let rec = |t| Record {
        t,
        sys: Sym::LOCAL,
        ev: Event::State {
            who: Who::Sm(a),
            state: x,
        },
    };
    let mut w = CptWriter::new(Vec::new(), Codec::None).unwrap();
    for t in [10, i64::MAX as u64, i64::MAX as u64 + 5] {
        w.write(&rec(t), &s).unwrap();
    }
    let (lines, errs) = cpt_lines(w.finish().unwrap());
    assert_eq!(
        lines.len(),
        2,
        "the records up to i64::MAX are read: {lines:?}"
    );
    let e = errs.last().expect("an error");
    assert!(
        e.fatal && e.message.contains("a time past 2^63 - 1 ns"),
        "{e}"
    );
    assert!(matches!(e.location, Location::Offset(_)), "{e}");
}
