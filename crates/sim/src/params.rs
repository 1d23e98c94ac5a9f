//! Every parameter of the host + NIC + I/O-bus model, with its default and
//! where that value comes from. `--param NAME=VALUE` overrides any of them.
//!
//! Sources: "paper" is Saidi et al., *Full-System Critical Path Analysis*
//! (§4.1, §4.2, §5.2, Tables 1 and 2); "802.3" the Ethernet standard;
//! "e1000" the Linux driver of the Intel 8254x NIC the paper models.
//! Software costs are calibrated: their proportions follow the paper's
//! Tables 1 and 2 (the share of each function on the critical path), and
//! their sum is set so that the PCI-X run sends ≈ 2.2 Gb/s, as the paper
//! measured. Nothing here says where the bottleneck is: the analysis finds it.

use serde::Serialize;

/// One parameter: name, default, unit, source.
pub struct ParamInfo {
    pub name: &'static str,
    pub unit: &'static str,
    pub source: &'static str,
}

macro_rules! params {
    ($( $(#[doc = $doc:literal])* $name:ident : $default:expr, $unit:literal, $source:literal; )*) => {
        /// The model's parameters (see the module documentation).
        #[derive(Clone, Debug, Serialize)]
        pub struct Params {
            $( $(#[doc = $doc])* pub $name: f64, )*
        }

        impl Default for Params {
            fn default() -> Self {
                Params { $( $name: $default, )* }
            }
        }

        impl Params {
            /// All parameters with their unit and source.
            pub const INFO: &'static [ParamInfo] = &[
                $( ParamInfo { name: stringify!($name), unit: $unit, source: $source }, )*
            ];

            /// Sets a parameter by name.
            pub fn set(&mut self, name: &str, value: f64) -> Result<(), String> {
                match name {
                    $( stringify!($name) => { self.$name = value; Ok(()) } )*
                    _ => Err(format!("unknown model parameter {name}")),
                }
            }

            /// A parameter's value by name.
            pub fn get(&self, name: &str) -> Option<f64> {
                match name {
                    $( stringify!($name) => Some(self.$name), )*
                    _ => None,
                }
            }
        }
    };
}

params! {
    /// Link speed.
    link_gbps: 10.0, "Gb/s", "paper §4.2: a 10 Gb/s link so that the link is not the bottleneck";
    /// Maximum transmission unit (IP packet size).
    mtu: 1500.0, "bytes", "paper §4.1: the standard 1500-byte MTU";
    /// Ethernet header DMA'd with each frame.
    eth_header: 14.0, "bytes", "802.3";
    /// Per-frame bytes on the wire besides the DMA'd frame: FCS 4, preamble 8, gap 12.
    wire_overhead: 24.0, "bytes", "802.3";
    /// PCI bus width.
    pci_width: 4.0, "bytes", "paper §5.2: a 32-bit PCI bus";
    /// PCI bus clock.
    pci_mhz: 66.0, "MHz", "paper §5.2: 66 MHz (2 Gb/s peak)";
    /// PCI-X bus width.
    pcix_width: 8.0, "bytes", "paper §4.2/§5.2: a 64-bit PCI-X bus";
    /// PCI-X bus clock.
    pcix_mhz: 133.0, "MHz", "paper §4.2/§5.2: 133 MHz (4x PCI)";
    /// Bus cycles lost per transaction to arbitration, address and turnaround.
    arb_cycles: 8.0, "cycles", "calibrated: paper §5.2 says part of the bandwidth is lost to arbitration; with these the PCI run sends ≈ 1.8 Gb/s as the paper measured";
    /// Largest data burst of one bus transaction.
    max_burst: 512.0, "bytes", "calibrated with arb_cycles (a common PCI burst limit)";
    /// Size of a DMA descriptor; each is read, then written back.
    desc_bytes: 16.0, "bytes", "paper §5.2: 16-byte descriptors, read then written back per transfer";
    /// Descriptors in the transmit ring.
    ring_size: 256.0, "descriptors", "e1000: default transmit ring of 256";
    /// Descriptors the NIC may fetch ahead of the transmit DMA.
    desc_cache: 64.0, "descriptors", "Intel 8254x: on-chip transmit descriptor cache of 64";
    /// The application's own work per send.
    app_ns: 50.0, "ns", "calibrated: netperf spends minimal time in user code (paper §4.1)";
    /// System call entry and exit.
    syscall_ns: 100.0, "ns", "calibrated";
    /// udp_sendmsg.
    udp_sendmsg_ns: 180.0, "ns", "paper Table 2: 3.3% of the copy-bound path";
    /// sock_alloc_send_skb.
    sock_alloc_send_skb_ns: 180.0, "ns", "paper Table 2: 3.4%";
    /// alloc_skb.
    alloc_skb_ns: 200.0, "ns", "paper Table 2: 3.6%";
    /// __kmalloc.
    kmalloc_ns: 80.0, "ns", "paper Table 2: 1.5%";
    /// kmem_cache_alloc.
    kmem_cache_alloc_ns: 80.0, "ns", "paper Table 2: 1.4%";
    /// ip_append_data.
    ip_append_data_ns: 480.0, "ns", "paper Table 2: 9.5%";
    /// ip_generic_getfrag.
    ip_generic_getfrag_ns: 150.0, "ns", "paper Table 2: 2.8%";
    /// The user-to-kernel copy (__copy_user), bytes per microsecond.
    copy_bytes_per_us: 560.0, "bytes/µs", "paper Table 2: __copy_user is 48% of the copy-bound path at 2.2 Gb/s";
    /// The PAL call that masks interrupts (Call_Pal_Swpipl).
    swpipl_ns: 300.0, "ns", "paper Table 2: 6.1%";
    /// __spin_lock_bh.
    spin_lock_bh_ns: 80.0, "ns", "paper Table 2: 1.5%";
    /// udp_push_pending_frames.
    udp_push_pending_frames_ns: 280.0, "ns", "paper Table 2: 5.5%";
    /// release_sock.
    release_sock_ns: 50.0, "ns", "paper Table 2: 1.3%";
    /// ip_output.
    ip_output_ns: 100.0, "ns", "calibrated";
    /// ip_finish_output.
    ip_finish_output_ns: 140.0, "ns", "paper Table 1: 3.0%";
    /// neigh_resolve_output.
    neigh_resolve_output_ns: 70.0, "ns", "paper Table 1: 2.4%";
    /// dev_queue_xmit after the driver returns.
    dev_queue_xmit_ns: 40.0, "ns", "calibrated";
    /// nf_hook_slow (netfilter on).
    nf_hook_slow_ns: 210.0, "ns", "paper Table 1: 3.4%; netfilter's total set so that disabling it gains 44% (paper §5.3)";
    /// nf_iterate (netfilter on).
    nf_iterate_ns: 450.0, "ns", "paper Table 1: 7.4%";
    /// _read_lock_bh (netfilter on).
    read_lock_bh_ns: 215.0, "ns", "paper Table 1: 3.6%";
    /// ipt_do_table (netfilter on, no rules).
    ipt_do_table_ns: 690.0, "ns", "paper Table 1: 11.4%";
    /// _read_unlock_bh (netfilter on).
    read_unlock_bh_ns: 215.0, "ns", "paper Table 1: 3.6%";
    /// Software checksum (csum_partial), bytes per microsecond: netfilter's
    /// (Linux 2.6.13 checksums in software when netfilter is on, paper §5.3),
    /// and that of fragmented datagrams the NIC cannot checksum.
    csum_bytes_per_us: 2300.0, "bytes/µs", "paper Table 1: csum_partial 10.2% with netfilter on";
    /// ip_fragment, per fragment.
    ip_fragment_ns: 250.0, "ns", "paper Table 1 (16 KiB): 6.5%";
    /// ip_fast_csum (header checksum), per fragment.
    ip_fast_csum_ns: 60.0, "ns", "paper Table 1 (16 KiB)";
    /// ip_copy_metadata, per fragment.
    ip_copy_metadata_ns: 100.0, "ns", "paper Table 1 (16 KiB)";
    /// memcpy of fragment data, bytes per microsecond.
    memcpy_bytes_per_us: 2000.0, "bytes/µs", "paper Table 1 (16 KiB): memcpy 9.6%";
    /// e1000_xmit_frame, per frame.
    xmit_frame_ns: 200.0, "ns", "calibrated";
    /// Writing the ring's tail register (posting a descriptor).
    post_desc_ns: 50.0, "ns", "calibrated: one uncached register write";
}
