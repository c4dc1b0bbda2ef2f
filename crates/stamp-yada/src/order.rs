//! The order in which STAMP's yada takes its bad elements: the initial
//! ones shuffled by STAMP's `queue_shuffle` (its ring buffer, its
//! Mersenne Twister seeded with 0), then all of them through STAMP's
//! binary heap, which puts elements that encroach on a segment first and
//! otherwise leaves the order to the heap's sifting. The sequential
//! version follows it exactly, so its final mesh is the C program's.

/// STAMP's `queue_t` grown by pushes from its initial capacity of 2, then
/// shuffled by `queue_shuffle`: returns the items in pop order.
///
/// # Examples
///
/// ```
/// use skelaff_stamp_yada::stamp_shuffle;
///
/// let v = stamp_shuffle((0..10).collect(), 0);
/// let mut sorted = v.clone();
/// sorted.sort();
/// assert_eq!(sorted, (0..10).collect::<Vec<_>>());
/// assert_ne!(v, sorted);
/// ```
pub fn stamp_shuffle<T: Copy>(items: Vec<T>, seed: u32) -> Vec<T> {
    let n = items.len();
    if n == 0 {
        return items;
    }
    // The ring after `n` pushes: capacity doubles (from 2) whenever the
    // next push would meet `pop`; each growth copies the elements to the
    // front and sets `pop = capacity - 1`.
    let mut capacity = 2usize;
    let mut pop = capacity - 1;
    let mut push = 0usize;
    // `len` elements are in the ring before each push.
    for len in 0..n {
        if (push + 1) % capacity == pop {
            capacity *= 2;
            pop = capacity - 1;
            push = len;
        }
        push += 1;
        push %= capacity;
    }
    let mut ring: Vec<Option<T>> = vec![None; capacity];
    for (i, item) in items.into_iter().enumerate() {
        ring[(pop + 1 + i) % capacity] = Some(item);
    }
    let mut mt = rand_mt::Mt::new(seed);
    let base = pop + 1;
    for _ in 0..n {
        let r1 = mt.next_u32() as usize % n;
        let r2 = mt.next_u32() as usize % n;
        ring.swap((base + r1) % capacity, (base + r2) % capacity);
    }
    (0..n).filter_map(|i| ring[(base + i) % capacity]).collect()
}

/// STAMP's `heap_t` (a binary max-heap, numbered from 1 as STAMP's; kept
/// here from index 0, so STAMP's slot `i` is `items[i - 1]`) with yada's
/// comparison: elements that encroach on a segment are greater, all others
/// equal.
#[derive(Debug)]
pub(crate) struct StampHeap<T> {
    items: Vec<(T, bool)>,
}

impl<T: Copy> StampHeap<T> {
    pub(crate) fn new() -> Self {
        StampHeap { items: Vec::new() }
    }

    fn compare(&self, a: usize, b: usize) -> i8 {
        match (self.items[a - 1].1, self.items[b - 1].1) {
            (true, false) => 1,
            (false, true) => -1,
            _ => 0,
        }
    }

    /// `heap_insert`: append, then sift up while the parent is less.
    pub(crate) fn insert(&mut self, item: T, encroaches: bool) {
        self.items.push((item, encroaches));
        let mut i = self.items.len();
        while i > 1 {
            let parent = i / 2;
            if self.compare(parent, i) >= 0 {
                break;
            }
            self.items.swap(parent - 1, i - 1);
            i = parent;
        }
    }

    /// `heap_remove`: take the top, move the last to the top, heapify.
    pub(crate) fn remove(&mut self) -> Option<T> {
        if self.items.is_empty() {
            return None;
        }
        let top = self.items.swap_remove(0).0;
        let size = self.items.len();
        let mut i = 1;
        loop {
            let (l, r) = (2 * i, 2 * i + 1);
            let mut max = if l <= size && self.compare(l, i) > 0 { l } else { i };
            if r <= size && self.compare(r, max) > 0 {
                max = r;
            }
            if max == i {
                break;
            }
            self.items.swap(i - 1, max - 1);
            i = max;
        }
        Some(top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mersenne_twister_matches_the_reference() {
        // The first outputs of MT19937 seeded with 5489 (the reference
        // implementation's default seed).
        let mut mt = rand_mt::Mt::new(5489);
        assert_eq!([mt.next_u32(), mt.next_u32(), mt.next_u32()], [3_499_211_612, 581_869_302, 3_890_346_734]);
    }

    #[test]
    fn heap_puts_encroaching_elements_first() {
        let mut h = StampHeap::new();
        for (i, enc) in [(1, false), (2, true), (3, false), (4, true), (5, false)] {
            h.insert(i, enc);
        }
        let order: Vec<i32> = std::iter::from_fn(|| h.remove()).collect();
        assert_eq!(order.len(), 5);
        assert!(order[..2].iter().all(|x| [2, 4].contains(x)), "{order:?}");
    }

    #[test]
    fn shuffle_of_one_and_of_none() {
        assert_eq!(stamp_shuffle(vec![7], 0), vec![7]);
        assert!(stamp_shuffle(Vec::<u8>::new(), 0).is_empty());
    }
}
