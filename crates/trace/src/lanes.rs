//! Lanes: the extra SMs an importer makes for one service or thread whose
//! spans or slices overlap without one calling the other (`SM#2`, `SM#3`,
//! ...), so that each SM is in one state at a time. A lane's states are
//! its service's: what-ifs and the aggregate over many requests name them
//! by the service.

/// The name of lane `i` (from 0) of `base`: `base` itself, then `base#2`...
pub fn lane_name(base: &str, i: usize) -> String {
    match i {
        0 => base.to_string(),
        _ => format!("{base}#{}", i + 1),
    }
}

/// The SM whose lane `name` is (`SM` of `SM#N`, N digits), if it is one.
pub fn lane_of(name: &str) -> Option<&str> {
    match name.rsplit_once('#') {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => Some(base),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_names_its_base_back() {
        assert_eq!(lane_name("db", 0), "db");
        assert_eq!(lane_name("db", 1), "db#2");
        assert_eq!(lane_of(&lane_name("db", 1)), Some("db"));
        assert_eq!(lane_of("db"), None);
        assert_eq!(lane_of("db#"), None);
        assert_eq!(lane_of("db#x"), None);
    }
}
