//! Cost of one annotation event: `cargo run --release -p critpath-sdk
//! --example overhead [EVENTS]`; run it with CRITPATH_OUT set and unset.
fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let _sm = critpath_sdk::sm("bench");
    let t0 = std::time::Instant::now();
    for i in 0..n {
        critpath_sdk::state(if i & 1 == 1 { "a" } else { "b" });
    }
    let ns = t0.elapsed().as_nanos() as f64 / n as f64;
    let on = std::env::var_os("CRITPATH_OUT").is_some();
    println!(
        "rust: {ns:.1} ns/event ({} events, CRITPATH_OUT {})",
        n,
        if on { "set" } else { "unset" }
    );
}
