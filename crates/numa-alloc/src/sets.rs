//! Sets of NUMA nodes and CPUs, with the kernel's list syntax (`0-3,5`).
//!
//! This module depends on nothing else in the crate: its own [`SetError`]
//! becomes the crate's [`Error::Parse`](crate::Error::Parse) where it meets
//! the rest.

use core::fmt;
use core::str::FromStr;

/// A list that does not parse, or a node or CPU number a set cannot hold.
/// Converts into the crate's [`Error::Parse`](crate::Error::Parse) with the
/// same fields.
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{Error, NodeSet};
///
/// let e = "3-1".parse::<NodeSet>().unwrap_err();
/// assert!(e.to_string().contains("reversed"), "{e}");
/// assert!(matches!(Error::from(e), Error::Parse { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse `{input}`: {reason}")]
pub struct SetError {
    /// The text (or the number) given.
    pub input: String,
    /// What is wrong with it and what is expected.
    pub reason: String,
}

/// The largest number of NUMA nodes Linux supports (`CONFIG_NODES_SHIFT=10`).
pub const MAX_NODES: usize = 1024;
const NODE_WORDS: usize = MAX_NODES / 64;

/// The largest CPU number a [`CpuSet`] accepts from text (Linux's `NR_CPUS` limit).
pub const MAX_CPUS: usize = 8192;

/// A set of NUMA node numbers (`0..MAX_NODES`).
///
/// A fixed-size bitmask: `Copy`, and building or reading one never allocates,
/// so the global allocator can carry one in its policies. It prints and
/// parses the kernel's list syntax.
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::NodeSet;
///
/// let nodes: NodeSet = "0-2,5".parse()?;
/// assert_eq!(nodes.len(), 4);
/// assert_eq!(nodes.iter().collect::<Vec<_>>(), [0, 1, 2, 5]);
/// assert_eq!(nodes.to_string(), "0-2,5");
/// assert!("7-3".parse::<NodeSet>().is_err());
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NodeSet {
    words: [u64; NODE_WORDS],
}

impl NodeSet {
    /// The empty set.
    pub const fn new() -> Self {
        Self { words: [0; NODE_WORDS] }
    }

    /// The set holding only `node`.
    ///
    /// # Panics
    ///
    /// If `node >= MAX_NODES`. Use [`NodeSet::try_single`] for untrusted input.
    pub const fn single(node: usize) -> Self {
        assert!(node < MAX_NODES, "node number out of range");
        let mut s = Self::new();
        s.words[node / 64] |= 1 << (node % 64);
        s
    }

    /// The set holding only `node`, or an error if `node` is out of range.
    pub fn try_single(node: usize) -> Result<Self, SetError> {
        let mut s = Self::new();
        s.try_insert(node)?;
        Ok(s)
    }

    /// Adds `node`; returns whether it was new.
    ///
    /// # Panics
    ///
    /// If `node >= MAX_NODES`. Use [`NodeSet::try_insert`] for untrusted input.
    pub fn insert(&mut self, node: usize) -> bool {
        assert!(node < MAX_NODES, "node {node} out of range (at most {})", MAX_NODES - 1);
        let (w, b) = (node / 64, 1u64 << (node % 64));
        let new = self.words[w] & b == 0;
        self.words[w] |= b;
        new
    }

    /// Adds `node`, or fails if it is not below [`MAX_NODES`].
    pub fn try_insert(&mut self, node: usize) -> Result<bool, SetError> {
        if node >= MAX_NODES {
            return Err(SetError {
                input: node.to_string(),
                reason: format!("node numbers go up to {}", MAX_NODES - 1),
            });
        }
        Ok(self.insert(node))
    }

    /// Removes `node`; returns whether it was present.
    pub fn remove(&mut self, node: usize) -> bool {
        if node >= MAX_NODES {
            return false;
        }
        let (w, b) = (node / 64, 1u64 << (node % 64));
        let had = self.words[w] & b != 0;
        self.words[w] &= !b;
        had
    }

    /// Whether `node` is in the set.
    pub const fn contains(&self, node: usize) -> bool {
        node < MAX_NODES && self.words[node / 64] & (1 << (node % 64)) != 0
    }

    /// The number of nodes in the set.
    pub const fn len(&self) -> usize {
        let mut n = 0;
        let mut i = 0;
        while i < NODE_WORDS {
            n += self.words[i].count_ones() as usize;
            i += 1;
        }
        n
    }

    /// Whether the set is empty.
    pub const fn is_empty(&self) -> bool {
        let mut i = 0;
        while i < NODE_WORDS {
            if self.words[i] != 0 {
                return false;
            }
            i += 1;
        }
        true
    }

    /// The lowest node, if any.
    pub fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    /// The `i`-th node in ascending order, if the set has more than `i` nodes.
    pub fn nth(&self, mut i: usize) -> Option<usize> {
        for (w, &word) in self.words.iter().enumerate() {
            let c = word.count_ones() as usize;
            if i < c {
                let mut word = word;
                for _ in 0..i {
                    word &= word - 1;
                }
                return Some(w * 64 + word.trailing_zeros() as usize);
            }
            i -= c;
        }
        None
    }

    /// The nodes in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + Clone + '_ {
        bits(&self.words)
    }

    /// The nodes in both sets.
    pub fn intersection(&self, other: &Self) -> Self {
        let mut out = *self;
        for (a, b) in out.words.iter_mut().zip(other.words) {
            *a &= b;
        }
        out
    }

    /// The nodes in either set.
    pub fn union(&self, other: &Self) -> Self {
        let mut out = *self;
        for (a, b) in out.words.iter_mut().zip(other.words) {
            *a |= b;
        }
        out
    }

    /// Whether every node of `self` is in `other`.
    pub fn is_subset(&self, other: &Self) -> bool {
        self.words.iter().zip(other.words).all(|(a, b)| a & !b == 0)
    }

    /// The raw mask as the kernel reads it: bit `n % 64` of word `n / 64` is node `n`.
    pub const fn as_words(&self) -> &[u64] {
        &self.words
    }

    /// Builds a set from a raw kernel mask; words past [`MAX_NODES`] are ignored.
    pub fn from_words(words: &[u64]) -> Self {
        let mut s = Self::new();
        for (d, w) in s.words.iter_mut().zip(words) {
            *d = *w;
        }
        s
    }
}

impl FromIterator<usize> for NodeSet {
    /// # Panics
    ///
    /// If a node is `>= MAX_NODES`.
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut s = Self::new();
        for n in iter {
            s.insert(n);
        }
        s
    }
}

impl fmt::Display for NodeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_list(f, self.iter())
    }
}

impl fmt::Debug for NodeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeSet({self})")
    }
}

impl FromStr for NodeSet {
    type Err = SetError;

    fn from_str(s: &str) -> Result<Self, SetError> {
        let mut set = Self::new();
        parse_list(s, "node", MAX_NODES, |n| {
            set.insert(n);
        })?;
        Ok(set)
    }
}

/// A set of CPU numbers (operating-system numbering, as in `/proc/cpuinfo`).
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::CpuSet;
///
/// let cpus: CpuSet = "0,2-3".parse()?;
/// assert!(cpus.contains(2) && !cpus.contains(1));
/// assert_eq!(cpus.to_string(), "0,2-3");
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct CpuSet {
    // Invariant: no trailing zero words, so equal sets compare equal.
    words: Vec<u64>,
}

impl CpuSet {
    /// The empty set.
    pub const fn new() -> Self {
        Self { words: Vec::new() }
    }

    /// The set holding only `cpu`.
    pub fn single(cpu: usize) -> Self {
        let mut s = Self::new();
        s.insert(cpu);
        s
    }

    /// Adds `cpu`; returns whether it was new.
    pub fn insert(&mut self, cpu: usize) -> bool {
        let w = cpu / 64;
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        let b = 1u64 << (cpu % 64);
        let new = self.words[w] & b == 0;
        self.words[w] |= b;
        new
    }

    /// Removes `cpu`; returns whether it was present.
    pub fn remove(&mut self, cpu: usize) -> bool {
        let had = self.contains(cpu);
        if had {
            self.words[cpu / 64] &= !(1u64 << (cpu % 64));
            self.trim();
        }
        had
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        self.words.get(cpu / 64).is_some_and(|w| w & (1 << (cpu % 64)) != 0)
    }

    /// The number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The lowest CPU, if any.
    pub fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    /// The CPUs in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + Clone + '_ {
        bits(&self.words)
    }

    /// The CPUs in both sets.
    pub fn intersection(&self, other: &Self) -> Self {
        let mut s = Self { words: self.words.iter().zip(&other.words).map(|(a, b)| a & b).collect() };
        s.trim();
        s
    }

    /// The CPUs in either set.
    pub fn union(&self, other: &Self) -> Self {
        let (long, short) = if self.words.len() >= other.words.len() { (self, other) } else { (other, self) };
        let mut s = long.clone();
        for (a, b) in s.words.iter_mut().zip(&short.words) {
            *a |= b;
        }
        s
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &Self) -> bool {
        self.words.iter().enumerate().all(|(i, a)| a & !other.words.get(i).copied().unwrap_or(0) == 0)
    }

    /// The raw mask, as `sched_setaffinity` reads it.
    pub fn as_words(&self) -> &[u64] {
        &self.words
    }

    /// Builds a set from a raw mask.
    pub fn from_words(words: &[u64]) -> Self {
        let mut s = Self { words: words.to_vec() };
        s.trim();
        s
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }
}

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut s = Self::new();
        for c in iter {
            s.insert(c);
        }
        s
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_list(f, self.iter())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

impl FromStr for CpuSet {
    type Err = SetError;

    fn from_str(s: &str) -> Result<Self, SetError> {
        let mut set = Self::new();
        parse_list(s, "CPU", MAX_CPUS, |c| {
            set.insert(c);
        })?;
        Ok(set)
    }
}

fn bits(words: &[u64]) -> impl Iterator<Item = usize> + Clone + '_ {
    words.iter().enumerate().flat_map(|(i, &w)| {
        let mut w = w;
        core::iter::from_fn(move || {
            if w == 0 {
                return None;
            }
            let b = w.trailing_zeros() as usize;
            w &= w - 1;
            Some(i * 64 + b)
        })
    })
}

/// Writes ascending numbers in list syntax, ranges of three or more as `a-b`
/// (and pairs as `a-b` too, as the kernel does).
fn write_list(f: &mut fmt::Formatter<'_>, mut it: impl Iterator<Item = usize>) -> fmt::Result {
    let Some(mut start) = it.next() else { return Ok(()) };
    let mut end = start;
    let mut first = true;
    let mut flush = |f: &mut fmt::Formatter<'_>, a: usize, b: usize| {
        let sep = if first { "" } else { "," };
        first = false;
        if a == b { write!(f, "{sep}{a}") } else { write!(f, "{sep}{a}-{b}") }
    };
    for n in it {
        if n == end + 1 {
            end = n;
        } else {
            flush(f, start, end)?;
            start = n;
            end = n;
        }
    }
    flush(f, start, end)
}

/// Parses `a,b-c,...` (whitespace around items ignored; empty input is the
/// empty set) and calls `add` for every number.
fn parse_list(s: &str, what: &str, limit: usize, mut add: impl FnMut(usize)) -> Result<(), SetError> {
    let err = |reason: String| SetError { input: s.to_owned(), reason };
    let s = s.trim();
    if s.is_empty() {
        return Ok(());
    }
    for item in s.split(',') {
        let item = item.trim();
        let num = |t: &str| -> Result<usize, SetError> {
            let t = t.trim();
            let n: usize =
                t.parse().map_err(|_| err(format!("`{t}` is not a {what} number (expected a list like `0-3,5`)")))?;
            if n >= limit {
                return Err(err(format!("{what} {n} is out of range: {what} numbers go up to {}", limit - 1)));
            }
            Ok(n)
        };
        match item.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(err(format!("range `{item}` is reversed (write the smaller {what} first)")));
                }
                (a..=b).for_each(&mut add);
            }
            None => add(num(item)?),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn list_syntax() {
        let s: NodeSet = " 0-3, 5 ,7-8".parse().unwrap();
        assert_eq!(s.to_string(), "0-3,5,7-8");
        assert_eq!(s.len(), 7);
        assert_eq!(s.nth(4), Some(5));
        assert_eq!(s.nth(7), None);
        assert_eq!("".parse::<NodeSet>().unwrap(), NodeSet::new());
        assert_eq!(NodeSet::new().to_string(), "");
        for bad in ["x", "1-", "-1", "3-1", "1,,2", "1024", "0-1024"] {
            let e = bad.parse::<NodeSet>().unwrap_err().to_string();
            assert!(e.contains(bad.trim()) || e.contains("out of range") || e.contains("reversed"), "{bad}: {e}");
        }
        let c: CpuSet = "8191".parse().unwrap();
        assert!(c.contains(8191));
        assert!("8192".parse::<CpuSet>().is_err());
    }

    #[test]
    fn set_algebra() {
        let a: NodeSet = "0-3".parse().unwrap();
        let b: NodeSet = "2-5".parse().unwrap();
        assert_eq!(a.intersection(&b).to_string(), "2-3");
        assert_eq!(a.union(&b).to_string(), "0-5");
        assert!(a.intersection(&b).is_subset(&a));
        assert!(!a.is_subset(&b));
        let c: CpuSet = "0-70".parse().unwrap();
        let d: CpuSet = "64-200".parse().unwrap();
        assert_eq!(c.intersection(&d).to_string(), "64-70");
        assert_eq!(c.union(&d).to_string(), "0-200");
        let mut e = CpuSet::single(100);
        assert!(e.remove(100));
        assert_eq!(e, CpuSet::new());
    }

    proptest! {
        #[test]
        fn node_list_round_trips(nodes in proptest::collection::btree_set(0usize..MAX_NODES, 0..40)) {
            let set: NodeSet = nodes.iter().copied().collect();
            let text = set.to_string();
            let back: NodeSet = text.parse().unwrap();
            prop_assert_eq!(back, set);
            prop_assert_eq!(back.iter().collect::<Vec<_>>(), nodes.iter().copied().collect::<Vec<_>>());
            for (i, n) in nodes.iter().enumerate() {
                prop_assert_eq!(set.nth(i), Some(*n));
            }
        }

        #[test]
        fn cpu_list_round_trips(cpus in proptest::collection::btree_set(0usize..2000, 0..60)) {
            let set: CpuSet = cpus.iter().copied().collect();
            let back: CpuSet = set.to_string().parse().unwrap();
            prop_assert_eq!(&back, &set);
            prop_assert_eq!(CpuSet::from_words(set.as_words()), set);
        }
    }
}
