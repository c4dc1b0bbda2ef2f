//! What a collection's `verify` finds broken.

/// An invariant of a transactional collection that does not hold: what
/// `verify` of [`TMap`](super::TMap), [`TBTreeMap`](super::TBTreeMap) or
/// [`TSkipMap`](super::TSkipMap) reports. A collection changed only through
/// its own methods never shows one; each names the invariant and where it
/// broke.
///
/// # Examples
///
/// ```
/// use skelaff_stm::collections::Broken;
///
/// let e = Broken::Overfull { len: 9, cap: 8 };
/// assert_eq!(e.to_string(), "a B-tree node holds 9 keys (at most 8)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Broken {
    /// A red-black tree's keys are not in search order.
    #[error("keys out of order")]
    KeysOutOfOrder,
    /// A red-black tree's child does not name its parent.
    #[error("a child's parent link does not point back")]
    ParentLink,
    /// Two red red-black nodes in a row.
    #[error("a red node has a red child")]
    RedRed,
    /// Paths of a red-black tree with different numbers of black nodes.
    #[error("black heights differ")]
    BlackHeights,
    /// A red root.
    #[error("the root is red")]
    RedRoot,
    /// A root with a parent link.
    #[error("the root has a parent")]
    RootParent,
    /// A B-tree node with more keys than it can hold.
    #[error("a B-tree node holds {len} keys (at most {cap})")]
    Overfull {
        /// Keys held.
        len: usize,
        /// The most a node holds.
        cap: usize,
    },
    /// A B-tree node's keys out of order.
    #[error("a node's keys are not strictly increasing")]
    NodeOrder,
    /// A B-tree key outside the range its parent gives it.
    #[error("a key lies outside its parent's separators")]
    OutsideSeparators,
    /// An inner B-tree node with no key.
    #[error("an inner node without separators")]
    NoSeparators,
    /// An inner B-tree node with an empty child slot.
    #[error("an inner node lacks a child")]
    MissingChild,
    /// B-tree leaves at different depths.
    #[error("leaves at different depths")]
    UnevenLeaves,
    /// A skip list's top level above the most it may have.
    #[error("the top level is {top}, above the most, {max}")]
    TopTooHigh {
        /// The top level.
        top: usize,
        /// The most allowed.
        max: usize,
    },
    /// A skip-list level above the top level that still holds nodes.
    #[error("level {level} holds nodes but lies above the top level {top}")]
    AboveTop {
        /// The level.
        level: usize,
        /// The top level.
        top: usize,
    },
    /// A skip-list level out of key order.
    #[error("level {level} is not in strictly ascending key order")]
    LevelOrder {
        /// The level.
        level: usize,
    },
    /// A skip-list node with a level count outside `1..=top`.
    #[error("a node has {levels} level(s), outside 1..={top} (the top level)")]
    NodeLevels {
        /// The node's levels.
        levels: usize,
        /// The top level.
        top: usize,
    },
    /// A skip-list level that links a node level 0 does not hold.
    #[error("level {level} links a node that level 0 does not hold")]
    Stray {
        /// The level.
        level: usize,
    },
    /// A skip-list node missing from one of its levels.
    #[error("a node with {levels} level(s) is missing from level {level}")]
    Missing {
        /// The node's levels.
        levels: usize,
        /// The level that lacks it.
        level: usize,
    },
    /// A skip-list node linked on a level above its own.
    #[error("a node with {levels} level(s) is linked on level {level}")]
    Extra {
        /// The node's levels.
        levels: usize,
        /// The level that links it.
        level: usize,
    },
}
