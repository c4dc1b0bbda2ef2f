//! Circles in a directed graph: its strongly connected components
//! (Tarjan) and the elementary cycles inside one.

use std::collections::BTreeSet;

/// The strongly connected components of more than one node of the graph on
/// nodes `0..n`, each sorted, in order of their smallest node.
pub(super) fn components(n: usize, edges: &BTreeSet<(usize, usize)>) -> Vec<Vec<usize>> {
    let mut out_edges = vec![Vec::new(); n];
    for &(a, b) in edges {
        out_edges[a].push(b);
    }
    let mut t =
        Tarjan { out_edges, index: vec![None; n], low: vec![0; n], on_stack: vec![false; n], ..Tarjan::default() };
    for v in 0..n {
        if t.index[v].is_none() {
            t.visit(v);
        }
    }
    let mut comps: Vec<Vec<usize>> = t.comps.into_iter().filter(|c| c.len() > 1).collect();
    for c in &mut comps {
        c.sort_unstable();
    }
    comps.sort();
    comps
}

#[derive(Default)]
struct Tarjan {
    out_edges: Vec<Vec<usize>>,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next: usize,
    comps: Vec<Vec<usize>>,
}

impl Tarjan {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for k in 0..self.out_edges[v].len() {
            let w = self.out_edges[v][k];
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            self.comps.push(comp);
        }
    }
}

/// The elementary cycles through the nodes of `comp` (a sorted component)
/// that `keep` accepts, each starting at its smallest node, shortest
/// first; and whether the search stopped early, after `budget` steps.
pub(super) fn cycles(
    comp: &[usize],
    edges: &BTreeSet<(usize, usize)>,
    keep: &dyn Fn(&[usize]) -> bool,
    budget: usize,
) -> (Vec<Vec<usize>>, bool) {
    let succ = |v: usize| edges.range((v, 0)..=(v, usize::MAX)).map(|&(_, w)| w).filter(|w| comp.contains(w));
    let mut found = Vec::new();
    let mut steps = 0usize;
    for &s in comp {
        // Depth-first over the nodes above `s`: every cycle is found once, from its smallest node.
        let mut path = vec![s];
        let mut iters: Vec<Vec<usize>> = vec![succ(s).collect()];
        while let Some(next) = iters.last_mut() {
            steps += 1;
            if steps > budget {
                found.sort_by_key(Vec::len);
                return (found, true);
            }
            match next.pop() {
                Some(w) if w == s => {
                    if keep(&path) {
                        found.push(path.clone());
                    }
                }
                Some(w) if w > s && !path.contains(&w) => {
                    path.push(w);
                    iters.push(succ(w).collect());
                }
                Some(_) => {}
                None => {
                    iters.pop();
                    path.pop();
                }
            }
        }
    }
    found.sort_by_key(Vec::len);
    (found, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(e: &[(usize, usize)]) -> BTreeSet<(usize, usize)> {
        e.iter().copied().collect()
    }

    #[test]
    fn components_are_the_circles() {
        // 0 -> 1 -> 2 -> 0, 2 -> 3, 3 <-> 4, 5 alone.
        let g = graph(&[(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 3)]);
        assert_eq!(components(6, &g), vec![vec![0, 1, 2], vec![3, 4]]);
        assert!(components(3, &graph(&[(0, 1), (1, 2)])).is_empty());
    }

    #[test]
    fn every_elementary_cycle_once_shortest_first() {
        // Two cycles through 0: 0 -> 1 -> 0 and 0 -> 1 -> 2 -> 0; none through 2 alone.
        let g = graph(&[(0, 1), (1, 0), (1, 2), (2, 0)]);
        let (all, cut) = cycles(&[0, 1, 2], &g, &|_| true, 1000);
        assert_eq!((all, cut), (vec![vec![0, 1], vec![0, 1, 2]], false));
        let (long, _) = cycles(&[0, 1, 2], &g, &|c| c.len() > 2, 1000);
        assert_eq!(long, vec![vec![0, 1, 2]]);
        assert!(cycles(&[0, 1, 2], &g, &|_| true, 2).1, "a search past its budget says so");
    }
}
