//! The names a program uses to describe an array: how it is accessed (the
//! hints a compiler extracts or a programmer writes), which implementation
//! it may have, and whether it may use large pages.

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// How the elements of an array are visited.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessPattern {
    /// In index order (a scan, a loop over `i` reading `a[i]`).
    Sequential,
    /// In no predictable order (`a[b[i]]`, neighbour lists).
    #[default]
    Random,
}

skelaff_numa_alloc::enum_names! {
    AccessPattern {
        Sequential => "sequential",
        Random => "random",
    }
    parse: Error = unknown_pattern;
}

fn unknown_pattern(given: &str) -> Error {
    Error::UnknownName(skelaff_numa_alloc::UnknownName {
        what: "access pattern",
        given: given.to_owned(),
        allowed: AccessPattern::VARIANTS,
    })
}

/// What the program says about an array's accesses (the paper's §3 and
/// Fig. 2): the inputs of [`select`](crate::select::select).
///
/// The default describes an array about which nothing is known: written,
/// indexed by anything, randomly: it is distributed.
///
/// # Examples
///
/// ```
/// use skelaff_arrays::{AccessHints, AccessPattern};
///
/// // Green-Marl's `Sum(w: t.InNbrs)`: the neighbour list is read-only, read in order.
/// let edges = AccessHints::new().read_only().pattern(AccessPattern::Sequential);
/// // `t.pg_rank_nxt = val` inside `Foreach (t: G.Nodes)`: written by the loop's index only.
/// let next = AccessHints::new().loop_indexed();
/// assert!(edges.is_read_only() && !edges.is_loop_indexed());
/// assert!(next.is_loop_indexed());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize)]
pub struct AccessHints {
    read_only: bool,
    loop_indexed: bool,
    pattern: AccessPattern,
}

impl AccessHints {
    /// Nothing known: written, not loop-indexed, random.
    pub const fn new() -> Self {
        AccessHints { read_only: false, loop_indexed: false, pattern: AccessPattern::Random }
    }

    /// The parallel phase only reads the array (it is written while it is
    /// built, or between phases through [`repl_sync`](crate::Array::repl_sync)).
    pub const fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// Every access is `a[i]` where `i` is the parallel loop's variable, so
    /// a static schedule makes each thread touch only its own range.
    pub const fn loop_indexed(mut self) -> Self {
        self.loop_indexed = true;
        self
    }

    /// The order of accesses.
    pub const fn pattern(mut self, pattern: AccessPattern) -> Self {
        self.pattern = pattern;
        self
    }

    /// Whether the array is read-only.
    pub const fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether every access is indexed by the parallel loop's variable.
    pub const fn is_loop_indexed(&self) -> bool {
        self.loop_indexed
    }

    /// The access pattern.
    pub const fn access_pattern(&self) -> AccessPattern {
        self.pattern
    }
}

impl core::fmt::Display for AccessHints {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let rw = if self.read_only { "read-only" } else { "written" };
        let ix = if self.loop_indexed { ", loop-indexed" } else { "" };
        write!(f, "{rw}{ix}, {}", self.pattern)
    }
}

/// The four array implementations of the paper's §3.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Implementation {
    /// The whole array on one node.
    Single,
    /// Pages spread evenly over the nodes (the kernel's page interleave).
    Distributed,
    /// One full copy per node with CPUs; each thread reads its own node's copy.
    Replicated,
    /// Element ranges owned by nodes, each range's pages on its owner.
    Partitioned,
}

skelaff_numa_alloc::enum_names! {
    Implementation {
        Single => "single",
        Distributed => "distributed",
        Replicated => "replicated",
        Partitioned => "partitioned",
    }
    parse: Error = unknown_implementation;
}

fn unknown_implementation(given: &str) -> Error {
    Error::UnknownName(skelaff_numa_alloc::UnknownName {
        what: "array implementation",
        given: given.to_owned(),
        allowed: Implementation::VARIANTS,
    })
}

/// Which implementation to use: chosen from the hints, or fixed.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Choice {
    /// The paper's Fig. 2 rules decide.
    #[default]
    Auto,
    /// [`Implementation::Single`].
    Single,
    /// [`Implementation::Distributed`].
    Distributed,
    /// [`Implementation::Replicated`].
    Replicated,
    /// [`Implementation::Partitioned`].
    Partitioned,
}

skelaff_numa_alloc::enum_names! {
    Choice {
        Auto => "auto",
        Single => "single",
        Distributed => "distributed",
        Replicated => "replicated",
        Partitioned => "partitioned",
    }
    parse: Error = unknown_choice;
}

fn unknown_choice(given: &str) -> Error {
    Error::UnknownName(skelaff_numa_alloc::UnknownName {
        what: "array implementation",
        given: given.to_owned(),
        allowed: Choice::VARIANTS,
    })
}

impl Choice {
    /// The fixed implementation, or `None` for [`Choice::Auto`].
    pub const fn fixed(self) -> Option<Implementation> {
        match self {
            Choice::Auto => None,
            Choice::Single => Some(Implementation::Single),
            Choice::Distributed => Some(Implementation::Distributed),
            Choice::Replicated => Some(Implementation::Replicated),
            Choice::Partitioned => Some(Implementation::Partitioned),
        }
    }
}

impl From<Implementation> for Choice {
    fn from(i: Implementation) -> Self {
        match i {
            Implementation::Single => Choice::Single,
            Implementation::Distributed => Choice::Distributed,
            Implementation::Replicated => Choice::Replicated,
            Implementation::Partitioned => Choice::Partitioned,
        }
    }
}

/// Whether an array may use large pages.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LargePages {
    /// Large pages where they are available and the array spans at least
    /// one (see [`select`](crate::select::select)).
    #[default]
    Auto,
    /// Base pages only.
    Off,
    /// Transparent huge pages (`MADV_HUGEPAGE`), where the kernel has them.
    Transparent,
    /// Explicit huge pages from the hugetlbfs pool, where it has room.
    Explicit,
}

skelaff_numa_alloc::enum_names! {
    LargePages {
        Auto => "auto",
        Off => "off",
        Transparent => "transparent",
        Explicit => "explicit",
    }
    parse: Error = unknown_large_pages;
}

fn unknown_large_pages(given: &str) -> Error {
    Error::UnknownName(skelaff_numa_alloc::UnknownName {
        what: "large-page setting",
        given: given.to_owned(),
        allowed: LargePages::VARIANTS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_allowed_ones() {
        for name in Choice::VARIANTS {
            assert_eq!(name.parse::<Choice>().unwrap().to_string(), *name);
        }
        for name in Implementation::VARIANTS {
            let i: Implementation = name.parse().unwrap();
            assert_eq!(Choice::from(i).fixed(), Some(i));
        }
        assert_eq!(Choice::Auto.fixed(), None);
        let e = "replicate".parse::<Choice>().unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown array implementation `replicate`; expected one of: auto, single, distributed, replicated, partitioned"
        );
        assert!("huge".parse::<LargePages>().unwrap_err().to_string().contains("auto, off, transparent, explicit"));
        assert!("zigzag".parse::<AccessPattern>().unwrap_err().to_string().contains("sequential, random"));
    }

    #[test]
    fn hints_display_what_they_say() {
        let h = AccessHints::new().read_only().loop_indexed().pattern(AccessPattern::Sequential);
        assert_eq!(h.to_string(), "read-only, loop-indexed, sequential");
        assert_eq!(AccessHints::default(), AccessHints::new());
        assert_eq!(AccessHints::new().to_string(), "written, random");
    }
}
