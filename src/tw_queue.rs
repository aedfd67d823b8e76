// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A device's timewait queue: its ids in timewait, in deadline order, linked through a
//! [`TwLink`] in each id.
//!
//! Generic over the id type (`CmId`, whose device holds the queue), so that this file and the
//! device do not name the id. Arming, leaving and ending timewait are in `timewait.rs`.

use crate::logic::deadline_list::{self, DeadlineList, Links};
use core::{cell::UnsafeCell, ptr::NonNull};
use kernel::{prelude::*, sync::Arc};

/// An id that can wait in a [`TimewaitQueue`]: it embeds its link.
pub(crate) trait Queued: Sized {
    /// The id's link.
    fn tw_link(&self) -> &TwLink<Self>;
}

/// An id's place in its device's timewait queue.
///
/// # Invariants
///
/// Only read or written by a holder of the lock of the id's device (`CmDevice::inner`, proved
/// by `&mut TimewaitQueue`). Both links are `None` while the id is not queued.
pub(crate) struct TwLink<I>(UnsafeCell<TwNode<I>>);

/// The links and deadline of an id in its device's timewait queue.
struct TwNode<I> {
    prev: Option<NonNull<I>>,
    next: Option<NonNull<I>>,
    deadline: usize,
}

impl<I> Clone for TwNode<I> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<I> Copy for TwNode<I> {}

impl<I> TwLink<I> {
    /// Not queued.
    pub(crate) const fn new() -> Self {
        Self(UnsafeCell::new(TwNode {
            prev: None,
            next: None,
            deadline: 0,
        }))
    }
}

/// Timeout exponents (`av.timeout`, 5 bits): one list each.
const CLASSES: usize = 32;

/// The ids of one device in timewait, by deadline; inside the device lock.
///
/// One list per timeout exponent: the ids of one list wait equally long and the tick count is
/// read under the device lock, so each id goes to its list's tail (an O(1) insertion; the
/// list's own ordered insertion stops at once) and every list stays in deadline order. The
/// earliest deadline is the earliest of the heads of the non-empty lists, which `occupied`
/// names (a scan of all 32 lists was most of the cost of arming timewait).
///
/// # Invariants
///
/// Every node is an id of this device whose queue reference (`Arc::into_raw`) the queue
/// owns, so it is live while queued; it is on the list of its `timewait_class`. Bit `i` of
/// `occupied` is set exactly when list `i` is not empty.
pub(crate) struct TimewaitQueue<I> {
    lists: [DeadlineList<NonNull<I>>; CLASSES],
    occupied: u32,
    /// How many ids are queued.
    len: u32,
}

const _: () = assert!(CLASSES <= u32::BITS as usize);

// SAFETY: The queue owns `Arc<I>` references, which may be sent when `I` is `Send + Sync`; the
// nodes' links are only touched by the holder of the device lock the queue lives in.
unsafe impl<I: Send + Sync> Send for TimewaitQueue<I> {}

/// Access to the links of the queued ids (and of one id being queued or unqueued); only made
/// by [`TimewaitQueue`]'s methods, whose `&mut self` proves the device lock.
struct Nodes<I>(core::marker::PhantomData<I>);

impl<I: Queued> Nodes<I> {
    fn new() -> Self {
        Self(core::marker::PhantomData)
    }

    fn node(&self, n: NonNull<I>) -> TwNode<I> {
        // SAFETY: `n` is a live id of the queue's device (queued, or the caller's); its link is
        // only touched under that device's lock, which our creator holds (`TwLink`'s invariant).
        unsafe { *n.as_ref().tw_link().0.get() }
    }

    fn with(&mut self, n: NonNull<I>, f: impl FnOnce(&mut TwNode<I>)) {
        // SAFETY: As in `node`; the mutable borrow ends before any other node is touched.
        f(unsafe { &mut *n.as_ref().tw_link().0.get() })
    }
}

impl<I: Queued> Links for Nodes<I> {
    type Node = NonNull<I>;
    fn prev(&self, n: Self::Node) -> Option<Self::Node> {
        self.node(n).prev
    }
    fn next(&self, n: Self::Node) -> Option<Self::Node> {
        self.node(n).next
    }
    fn set(&mut self, n: Self::Node, prev: Option<Self::Node>, next: Option<Self::Node>) {
        self.with(n, |t| {
            t.prev = prev;
            t.next = next;
        })
    }
    fn set_prev(&mut self, n: Self::Node, prev: Option<Self::Node>) {
        self.with(n, |t| t.prev = prev)
    }
    fn set_next(&mut self, n: Self::Node, next: Option<Self::Node>) {
        self.with(n, |t| t.next = next)
    }
    fn deadline(&self, n: Self::Node) -> usize {
        self.node(n).deadline
    }
    fn set_deadline(&mut self, n: Self::Node, at: usize) {
        self.with(n, |t| t.deadline = at)
    }
}

impl<I> TimewaitQueue<I> {
    /// Empty.
    pub(crate) const fn new() -> Self {
        // INVARIANT: No list has a node, no bit is set.
        Self {
            lists: [const { DeadlineList::new() }; CLASSES],
            occupied: 0,
            len: 0,
        }
    }

    /// Whether no id is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.occupied == 0
    }

    /// How many ids are queued (in timewait).
    pub(crate) fn len(&self) -> u32 {
        self.len
    }
}

impl<I: Queued> TimewaitQueue<I> {
    /// The list with the earliest head, and that head.
    fn earliest(&self) -> Option<(usize, NonNull<I>)> {
        let nodes = Nodes::<I>::new();
        let mut best: Option<(usize, NonNull<I>)> = None;
        let mut bits = self.occupied;
        while bits != 0 {
            // CAST: a bit index below 32.
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if let Some(n) = self.lists[i].first() {
                let sooner = best.map_or(true, |(_, b)| {
                    deadline_list::before(nodes.deadline(n), nodes.deadline(b))
                });
                if sooner {
                    best = Some((i, n));
                }
            }
        }
        best
    }

    /// Queues `id` (of this device, not queued) on list `class` until tick `at`; whether it is
    /// now the earliest of all.
    pub(crate) fn insert(&mut self, id: Arc<I>, class: u8, at: usize) -> bool {
        // INVARIANT: the queue takes over the reference; its list is not empty any more.
        // SAFETY: `Arc::into_raw` never returns NULL.
        let n = unsafe { NonNull::new_unchecked(Arc::into_raw(id).cast_mut()) };
        let i = usize::from(class) % CLASSES;
        self.lists[i].insert(&mut Nodes::<I>::new(), n, at);
        self.occupied |= 1 << i;
        self.len += 1;
        self.earliest().is_some_and(|(_, e)| e == n)
    }

    /// Clears list `i`'s bit if it has become empty.
    fn update_occupied(&mut self, i: usize) {
        if self.lists[i].is_empty() {
            // INVARIANT: the bit follows the list.
            self.occupied &= !(1 << i);
        }
    }

    /// Takes `id` (of this device, queued on list `class` if at all) off the queue, with the
    /// queue's reference, if queued.
    pub(crate) fn remove(&mut self, id: &I, class: u8) -> Option<Arc<I>> {
        let n = NonNull::from(id);
        let i = usize::from(class) % CLASSES;
        if !self.lists[i].remove(&mut Nodes::<I>::new(), n) {
            return None;
        }
        self.update_occupied(i);
        self.len -= 1;
        // SAFETY: It was queued, so the queue owned this reference (type invariant).
        Some(unsafe { Arc::from_raw(n.as_ptr()) })
    }

    /// Takes the earliest id off if its deadline has come (or in any case if `all`).
    pub(crate) fn pop_due(&mut self, now: usize, all: bool) -> Option<Arc<I>> {
        let (i, _) = self.earliest()?;
        let n = self.lists[i].pop_due(&mut Nodes::<I>::new(), now, all)?;
        self.update_occupied(i);
        self.len -= 1;
        // SAFETY: As in `remove`.
        Some(unsafe { Arc::from_raw(n.as_ptr()) })
    }

    /// Ticks until the earliest deadline, `None` if the queue is empty.
    pub(crate) fn next_delay(&self, now: usize) -> Option<usize> {
        let (i, _) = self.earliest()?;
        self.lists[i].next_delay(&Nodes::<I>::new(), now)
    }
}

impl<I> Drop for TimewaitQueue<I> {
    fn drop(&mut self) {
        // Cannot happen: a queued id holds a reference to its device (so the device, and this
        // queue in it, outlive it), and removal ends every queued timewait (`end_all`). Should
        // it happen, the ids stay leaked rather than touched: their device is going away.
        if !self.is_empty() {
            pr_warn!("a device's timewait queue was dropped with ids queued (leaked)\n");
        }
    }
}
