//! Access to a queue the caller owns: no transaction can run on it, so its
//! nodes are walked with plain loads and freed at once.

use core::fmt;
use core::iter::FusedIterator;
use core::marker::PhantomData;

use super::{QNode, TQueue};
use crate::collections::LinkMut;
use crate::word::TPtr;

impl<V> TQueue<V> {
    /// Every element, front first, through exclusive access (no
    /// transaction can run on the queue while it is borrowed mutably, so
    /// none is needed).
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::{atomically, TQueue};
    ///
    /// let mut q = TQueue::new();
    /// atomically(|tx| { q.push_back(tx, 1u32)?; q.push_back(tx, 2) });
    /// for v in q.iter_mut() {
    ///     *v *= 10;
    /// }
    /// assert_eq!(q.drain().collect::<Vec<_>>(), [10, 20]);
    /// assert_eq!(atomically(|tx| q.pop_front(tx)), None);
    /// ```
    pub fn iter_mut(&mut self) -> QueueIterMut<'_, V> {
        QueueIterMut { cur: self.head.get_mut_raw(), _queue: PhantomData }
    }

    /// Empties the queue and gives its elements back, front first;
    /// elements the iterator does not reach are freed when it is dropped.
    pub fn drain(&mut self) -> QueueIntoIter<V> {
        let head = self.head.get_mut_raw();
        self.head.set_mut_raw(None);
        self.tail.set_mut_raw(None);
        QueueIntoIter { cur: head, _owns: PhantomData }
    }
}

impl<V> IntoIterator for TQueue<V> {
    type Item = V;
    type IntoIter = QueueIntoIter<V>;

    /// The elements, front first; nodes are freed as they are passed (the
    /// rest when the iterator is dropped).
    fn into_iter(mut self) -> QueueIntoIter<V> {
        // The queue is dropped empty: every node now belongs to the iterator.
        self.drain()
    }
}

impl<'a, V> IntoIterator for &'a mut TQueue<V> {
    type Item = &'a mut V;
    type IntoIter = QueueIterMut<'a, V>;

    fn into_iter(self) -> QueueIterMut<'a, V> {
        self.iter_mut()
    }
}

/// The elements of a [`TQueue`] borrowed mutably: see [`TQueue::iter_mut`].
pub struct QueueIterMut<'a, V> {
    cur: Option<TPtr<QNode<V>>>,
    _queue: PhantomData<&'a mut QNode<V>>,
}

impl<'a, V> Iterator for QueueIterMut<'a, V> {
    type Item = &'a mut V;

    fn next(&mut self) -> Option<&'a mut V> {
        let p = self.cur?;
        // SAFETY: the queue is borrowed mutably for 'a: no transaction runs
        // on it, every linked node is alive for 'a and nothing else
        // references it; each node is linked once (from `head` or its
        // predecessor; `tail` is not followed) and the walk only moves
        // forward, so this is the only `&mut` made to it for 'a.
        let QNode { value, next } = unsafe { &mut *p.as_ptr() };
        self.cur = next.get_mut_raw();
        Some(value)
    }
}

impl<V> FusedIterator for QueueIterMut<'_, V> {}

/// The elements of a [`TQueue`] by value: see its `IntoIterator` impl and
/// [`TQueue::drain`]. It owns the nodes it has not passed yet and frees
/// them when dropped.
pub struct QueueIntoIter<V> {
    cur: Option<TPtr<QNode<V>>>,
    _owns: PhantomData<QNode<V>>,
}

impl<V> Iterator for QueueIntoIter<V> {
    type Item = V;

    fn next(&mut self) -> Option<V> {
        let p = self.cur?;
        // SAFETY: the iterator owns the chain from `cur` (detached from a
        // queue nobody else can reach); each node is linked once and freed
        // here once, after which `cur` moves past it.
        let QNode { value, next } = *unsafe { p.into_box() };
        self.cur = { next }.get_mut_raw();
        Some(value)
    }
}

impl<V> FusedIterator for QueueIntoIter<V> {}

impl<V> Drop for QueueIntoIter<V> {
    fn drop(&mut self) {
        while self.next().is_some() {}
    }
}

impl<V> fmt::Debug for QueueIterMut<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueIterMut").finish_non_exhaustive()
    }
}

impl<V> fmt::Debug for QueueIntoIter<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueIntoIter").finish_non_exhaustive()
    }
}
