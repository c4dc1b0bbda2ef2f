//! A FIFO queue.

use core::fmt;
use core::marker::PhantomData;

use super::{Link, node};
use crate::error::TxError;
use crate::tvar::TVar;
use crate::txops::TxOps;
use crate::word::TPtr;

struct QNode<V> {
    value: V,
    next: Link<QNode<V>>,
}

/// A FIFO queue: a linked list with head and tail links (STAMP's work
/// queues). A push and a pop on a queue with several elements touch
/// different words; on a short queue they conflict, as they must.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, TQueue};
///
/// let q = TQueue::new();
/// atomically(|tx| { q.push_back(tx, 1u32)?; q.push_back(tx, 2) });
/// assert_eq!(atomically(|tx| q.pop_front(tx)), Some(1));
/// assert_eq!(atomically(|tx| q.len(tx)), 1);
/// ```
pub struct TQueue<V> {
    head: Link<QNode<V>>,
    tail: Link<QNode<V>>,
    _owns: PhantomData<QNode<V>>,
}

impl<V: Copy + Send + Sync + 'static> TQueue<V> {
    /// An empty queue.
    pub fn new() -> Self {
        TQueue { head: TVar::new(None), tail: TVar::new(None), _owns: PhantomData }
    }

    /// Appends `v`.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn push_back<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, v: V) -> Result<(), TxError> {
        let fresh = tx.alloc(QNode { value: v, next: TVar::new(None) })?;
        match tx.read(&self.tail)? {
            // SAFETY: read in the running transaction.
            Some(t) => tx.write(unsafe { &node(t).next }, Some(fresh))?,
            None => tx.write(&self.head, Some(fresh))?,
        }
        tx.write(&self.tail, Some(fresh))
    }

    /// Removes and returns the first element.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn pop_front<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<Option<V>, TxError> {
        let Some(h) = tx.read(&self.head)? else { return Ok(None) };
        // SAFETY: read in the running transaction.
        let n = unsafe { node(h) };
        let next = tx.read(&n.next)?;
        tx.write(&self.head, next)?;
        if next.is_none() {
            tx.write(&self.tail, None)?;
        }
        let v = n.value;
        // SAFETY: allocated by `push_back`; unlinked from `head` (and `tail`
        // when it was the last) above; freed once.
        unsafe { tx.free(h)? };
        Ok(Some(v))
    }

    /// The first element, left in place.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn peek_front<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<Option<V>, TxError> {
        // SAFETY: read in the running transaction.
        Ok(tx.read(&self.head)?.map(|h| unsafe { node(h) }.value))
    }

    /// Whether the queue is empty.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn is_empty<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<bool, TxError> {
        Ok(tx.read(&self.head)?.is_none())
    }

    /// The number of elements (walks the queue).
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn len<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<usize, TxError> {
        Ok(self.to_vec(tx)?.len())
    }

    /// The elements, front first.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn to_vec<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<Vec<V>, TxError> {
        let mut out = Vec::new();
        let mut cur = tx.read(&self.head)?;
        while let Some(p) = cur {
            // SAFETY: read in the running transaction.
            let n = unsafe { node(p) };
            out.push(n.value);
            cur = tx.read(&n.next)?;
        }
        Ok(out)
    }
}

impl<V: Copy + Send + Sync + 'static> Default for TQueue<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> Drop for TQueue<V> {
    fn drop(&mut self) {
        let mut cur = self.head.load_word();
        while let Some(p) = TPtr::<QNode<V>>::from_addr(cur as usize) {
            // SAFETY: `&mut self`: no transaction can reach the queue; each
            // linked node is owned by it and freed once here.
            let n = unsafe { p.into_box() };
            cur = n.next.load_word();
        }
    }
}

impl<V> fmt::Debug for TQueue<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TQueue").finish_non_exhaustive()
    }
}

mod owned;
pub use owned::{QueueIntoIter, QueueIterMut};
