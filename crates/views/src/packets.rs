//! The text view of packet lives: time per layer, shares, per-send costs
//! and a timeline of the first packets, a letter per layer.

use crate::text::{dur, grid, notes};
use critpath_kernel::packets::{Packets, LAYERS};

/// Shares per layer, per-buffer costs and a timeline of the first packets.
pub fn packets_table(p: &Packets, name: &str) -> String {
    let mut o = format!(
        "{name}: {} packets ({} delivered to a thread, {} unfinished)",
        p.packets, p.delivered, p.unfinished
    );
    if p.sends > 0 {
        o.push_str(&format!(
            " from {} send calls, {:.0} bytes per call",
            p.sends, p.bytes_per_send
        ));
    }
    o.push_str("\n\n");
    let rows: Vec<Vec<String>> = p
        .layers
        .iter()
        .map(|l| {
            let per_send = p
                .per_send_ns
                .iter()
                .find(|(n, _)| *n == l.layer)
                .map_or("-".to_string(), |(_, v)| dur(v.round() as u64));
            vec![
                l.layer.clone(),
                l.packets.to_string(),
                dur(l.mean_ns.round() as u64),
                per_send,
                dur(l.total_ns),
                format!("{:.1}%", 100.0 * l.share),
            ]
        })
        .collect();
    o.push_str(&grid(
        &["layer", "packets", "mean", "per send", "total", "share"],
        &rows,
        &[false, true, true, true, true, true],
    ));
    if p.packets == 0 {
        o.push_str("(no packet was followed to the end of its life)\n");
    }
    if !p.timeline.is_empty() {
        o.push_str(&format!(
            "\ntimeline of the first {} packets (letters: {})\n",
            p.timeline.len(),
            LAYERS
                .iter()
                .map(|l| format!("{}={l}", letter(l)))
                .collect::<Vec<_>>()
                .join(" ")
        ));
        let t0 = p.timeline.iter().map(|r| r.start).min().unwrap_or(0);
        let rows: Vec<Vec<String>> = p
            .timeline
            .iter()
            .map(|r| {
                let total: u64 = r.layers.iter().map(|l| l.1).sum();
                vec![
                    r.skb.clone(),
                    r.len.to_string(),
                    r.sender.clone().unwrap_or_else(|| "-".into()),
                    r.receiver.clone().unwrap_or_else(|| "-".into()),
                    format!("+{}", dur(r.start - t0)),
                    dur(total),
                    bar(&r.layers, total, 40),
                ]
            })
            .collect();
        o.push_str(&grid(
            &[
                "skb", "len", "sender", "receiver", "start", "life", "layers",
            ],
            &rows,
            &[false, true, false, false, true, true, false],
        ));
    }
    notes(&mut o, &p.notes);
    o
}

fn letter(layer: &str) -> char {
    match layer {
        "socket" => 'k',
        "syscall" => 'y',
        "softirq" => 'S',
        "stack" => 's',
        "copy" => 'c',
        _ => layer.chars().next().unwrap_or('?'),
    }
}

/// A packet's life drawn in `width` columns, a letter per layer.
fn bar(layers: &[(String, u64)], total: u64, width: usize) -> String {
    let mut o = String::new();
    let mut acc = 0u64;
    for (name, ns) in layers {
        acc += ns;
        let upto = if total == 0 {
            0
        } else {
            (acc as f64 / total as f64 * width as f64).round() as usize
        };
        let mut n = upto.saturating_sub(o.chars().count());
        if n == 0 && *ns > 0 && o.chars().count() < width {
            n = 1;
        }
        o.extend(std::iter::repeat_n(letter(name), n));
    }
    o
}
