//! Which span called which, as a tree: whether one span is an ancestor of
//! another (its parent, its parent's parent, ...), answered at once from
//! the spans' places in a walk of the tree (a span's descendants are
//! visited between its entry and its exit).

/// Each span's entry and exit in a depth-first walk from the roots.
pub(super) struct Ancestry {
    /// `(entry, exit)` of each span; `None` for a span no root reaches (on
    /// a cycle of parents).
    visit: Vec<Option<(u32, u32)>>,
}

impl Ancestry {
    /// The tree of `parent` (each span's parent, by index).
    pub(super) fn new(parent: &[Option<usize>]) -> Self {
        let n = parent.len();
        // Children lists, one after the other (`first[p]..first[p + 1]`).
        let mut first = vec![0usize; n + 1];
        for p in parent.iter().flatten() {
            first[p + 1] += 1;
        }
        for i in 0..n {
            first[i + 1] += first[i];
        }
        let mut fill = first.clone();
        let mut kids = vec![0usize; first[n]];
        for (c, p) in parent.iter().enumerate() {
            if let Some(p) = *p {
                kids[fill[p]] = c;
                fill[p] += 1;
            }
        }
        let mut visit = vec![None; n];
        let mut clock = 0u32;
        // The walk's stack: a span and the next of its children to visit.
        let mut stack: Vec<(usize, usize)> = Vec::new();
        for root in (0..n).filter(|&i| parent[i].is_none()) {
            stack.push((root, first[root]));
            visit[root] = Some((clock, 0));
            clock += 1;
            while let Some((at, next)) = stack.last_mut() {
                let at = *at;
                if *next == first[at + 1] {
                    stack.pop();
                    visit[at] = visit[at].map(|(entry, _)| (entry, clock));
                    continue;
                }
                let c = kids[*next];
                *next += 1;
                visit[c] = Some((clock, 0));
                clock += 1;
                stack.push((c, first[c]));
            }
        }
        Ancestry { visit }
    }

    /// Is span `a` an ancestor of span `d` (never of itself)?
    pub(super) fn is_ancestor(&self, a: usize, d: usize) -> bool {
        match (self.visit[a], self.visit[d]) {
            (Some((ain, aout)), Some((din, dout))) => ain < din && dout <= aout,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_are_the_chain_of_parents() {
        // 0 ← 1 ← 2, 0 ← 3; 4 alone; 5 ↔ 6 a cycle.
        let parent = [None, Some(0), Some(1), Some(0), None, Some(6), Some(5)];
        let t = Ancestry::new(&parent);
        assert!(t.is_ancestor(0, 1) && t.is_ancestor(0, 2) && t.is_ancestor(1, 2));
        assert!(t.is_ancestor(0, 3));
        // Siblings, a span and itself, other trees, a cycle: not.
        assert!(!t.is_ancestor(1, 3) && !t.is_ancestor(3, 2));
        assert!(!t.is_ancestor(2, 1) && !t.is_ancestor(0, 0));
        assert!(!t.is_ancestor(0, 4) && !t.is_ancestor(4, 0));
        assert!(!t.is_ancestor(5, 6) && !t.is_ancestor(6, 5));
    }
}
