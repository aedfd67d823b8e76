// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A port's flow-control state: how many of the CM's controlled MADs are outstanding at the
//! MAD layer, and the ordered backlog of those waiting for a slot (`logic::flow` decides).
//!
//! cm.c has no counterpart (6.12's CM posts every MAD at once). The backlog holds MAD send
//! buffers that are built and ours but not posted: a node per buffer, allocated before the
//! port's lock is taken, links them in order, and the buffer's `context[1]` (the id reference
//! `send.rs` puts there) points at its node, tagged, while it waits. That makes both taking a
//! waiting buffer out when its id cancels it and telling a waiting buffer from a posted one
//! O(1), under the port's lock, with no field of the MAD layer's touched.

use crate::bindings;
use core::ptr::null_mut;
use kernel::{ffi, prelude::*};

/// The tag in a waiting buffer's `context[1]` (nodes are at least word-aligned).
const WAITING: usize = 1;

/// The node `buf` waits in, from the tag in its `context[1]`; `None` if it does not wait.
///
/// # Safety
///
/// `buf` must be a live MAD send buffer the CM built: waiting, posted, or its owner's.
unsafe fn waiting_node(buf: *mut bindings::ib_mad_send_buf) -> Option<*mut Node> {
    // SAFETY: `context[1]` is never written by the MAD layer; a posted buffer's is only written
    // by its owner, whose send completion we are not racing (caller: live).
    let ctx = unsafe { (*buf).context[1] };
    // CAST: the pointer's address, to read its tag.
    if (ctx as usize) & WAITING == 0 {
        return None;
    }
    Some(ctx.cast::<u8>().wrapping_sub(WAITING).cast::<Node>())
}

/// One waiting buffer.
struct Node {
    prev: *mut Node,
    next: *mut Node,
    buf: *mut bindings::ib_mad_send_buf,
    /// The buffer's `context[1]` before it was queued.
    owner: *mut ffi::c_void,
}

/// A node allocated ahead, outside any lock, for [`Flow::push`].
pub(crate) struct Spare(KBox<Node>);

impl Spare {
    /// A node, allocated without sleeping (senders may hold an id's spinlock).
    pub(crate) fn new() -> Result<Self> {
        let node = Node {
            prev: null_mut(),
            next: null_mut(),
            buf: null_mut(),
            owner: null_mut(),
        };
        Ok(Self(KBox::new(node, GFP_ATOMIC)?))
    }
}

/// A send buffer that was never posted, taken out of the backlog (or refused a post), with
/// its `context[1]` back as the sender set it; its owner completes or frees it.
pub(crate) struct Unposted(pub(crate) *mut bindings::ib_mad_send_buf);

/// Unposted buffers chained through their `next` field (ours while unposted), in order.
pub(crate) struct UnpostedList {
    head: *mut bindings::ib_mad_send_buf,
    tail: *mut bindings::ib_mad_send_buf,
}

impl UnpostedList {
    /// An empty list.
    pub(crate) const fn new() -> Self {
        Self {
            head: null_mut(),
            tail: null_mut(),
        }
    }

    /// Appends `buf`.
    pub(crate) fn push(&mut self, buf: Unposted) {
        let buf = buf.0;
        // SAFETY: An unposted buffer is ours, `next` included (the MAD layer reads it only
        // when the buffer is posted; it is reset before that).
        unsafe { (*buf).next = null_mut() };
        if self.tail.is_null() {
            self.head = buf;
        } else {
            // SAFETY: `tail` is an unposted buffer of this list.
            unsafe { (*self.tail).next = buf };
        }
        self.tail = buf;
    }
}

impl Drop for UnpostedList {
    fn drop(&mut self) {
        // Every taker completes each buffer of its list.
        debug_assert!(self.head.is_null());
    }
}

impl Iterator for UnpostedList {
    type Item = Unposted;

    fn next(&mut self) -> Option<Unposted> {
        let buf = self.head;
        if buf.is_null() {
            return None;
        }
        // SAFETY: `buf` is an unposted buffer of this list; its `next` goes back to NULL, as
        // `ib_create_send_mad()` left it, before anyone may post it.
        unsafe {
            self.head = (*buf).next;
            (*buf).next = null_mut();
        }
        if self.head.is_null() {
            self.tail = null_mut();
        }
        Some(Unposted(buf))
    }
}

/// A port's flow-control state, behind the port's lock.
///
/// # Invariants
///
/// `head`..`tail` is a doubly-linked list of `queued` nodes made by [`Spare::new`] and owned
/// here; each node's `buf` is a MAD send buffer that is built, not posted, and whose
/// `context[1]` is the node's address tagged with [`WAITING`], the node keeping the buffer's
/// own `context[1]`. No other buffer's `context[1]` carries the tag.
pub(crate) struct Flow {
    head: *mut Node,
    tail: *mut Node,
    queued: u32,
    /// Controlled MADs posted and not yet completed.
    pub(crate) outstanding: u32,
    /// The port's default limit (`logic::flow::derived_limit`), set when its agent registers.
    pub(crate) derived_limit: u32,
    /// The most that ever waited at once.
    pub(crate) high_water: u32,
    /// Sends refused because the backlog was full.
    pub(crate) refused: u64,
}

// SAFETY: The raw pointers are nodes and send buffers owned by this state, used only under
// the port's lock by whoever holds it, from any thread.
unsafe impl Send for Flow {}

impl Flow {
    /// No message outstanding or waiting.
    pub(crate) const fn new() -> Self {
        // INVARIANT: an empty list.
        Self {
            head: null_mut(),
            tail: null_mut(),
            queued: 0,
            outstanding: 0,
            derived_limit: crate::logic::flow::DEFAULT_RECV_QUEUE / 4,
            high_water: 0,
            refused: 0,
        }
    }

    /// How many wait.
    pub(crate) fn queued(&self) -> u32 {
        self.queued
    }

    /// Queues `buf` at the tail, in `spare`.
    ///
    /// # Safety
    ///
    /// `buf` must be a built MAD send buffer that the caller owns and has not posted; it
    /// belongs to the backlog until [`Flow::pop`] or [`Flow::remove`] gives it back.
    pub(crate) unsafe fn push(&mut self, spare: Spare, buf: *mut bindings::ib_mad_send_buf) {
        let node = KBox::into_raw(spare.0);
        // SAFETY: `node` is ours (just released from its box); `buf` is the caller's, not
        // posted, so its `context[1]` is ours to swap.
        unsafe {
            (*node).buf = buf;
            (*node).owner = (*buf).context[1];
            (*node).prev = self.tail;
            (*node).next = null_mut();
            (*buf).context[1] = node.cast::<u8>().wrapping_add(WAITING).cast();
            if self.tail.is_null() {
                self.head = node;
            } else {
                (*self.tail).next = node;
            }
        }
        // INVARIANT: linked at the tail, tagged, counted.
        self.tail = node;
        self.queued += 1;
        self.high_water = self.high_water.max(self.queued);
    }

    /// Takes the head of the backlog out, its `context[1]` restored.
    pub(crate) fn pop(&mut self) -> Option<Unposted> {
        let node = self.head;
        if node.is_null() {
            return None;
        }
        // SAFETY: `node` is the head node of the list (type invariants).
        Some(unsafe { self.unlink(node) })
    }

    /// Takes `buf` out of the backlog if it waits there, its `context[1]` restored.
    ///
    /// # Safety
    ///
    /// `buf` must be a live MAD send buffer built by the CM for this port: waiting here,
    /// posted, or its owner's.
    pub(crate) unsafe fn remove(
        &mut self,
        buf: *mut bindings::ib_mad_send_buf,
    ) -> Option<Unposted> {
        // SAFETY: The caller's contract.
        let node = unsafe { waiting_node(buf) }?;
        // SAFETY: Only a buffer queued here carries the tag (type invariants), and its node is
        // in this list: the caller names this port's buffers only.
        Some(unsafe { self.unlink(node) })
    }

    /// Lets `buf`, if it waits here, go out once when its turn comes, with no retries (its id
    /// forgets it: destroy's DREQ, which cm.c sends once before it cancels it); whether it
    /// waits here.
    ///
    /// # Safety
    ///
    /// As [`Flow::remove`].
    pub(crate) unsafe fn send_once(&mut self, buf: *mut bindings::ib_mad_send_buf) -> bool {
        // SAFETY: As in `remove`.
        if unsafe { waiting_node(buf) }.is_none() {
            return false;
        }
        // SAFETY: A waiting buffer is ours (type invariants); the MAD layer reads these two
        // fields when the buffer is posted.
        unsafe {
            (*buf).timeout_ms = 0;
            (*buf).retries = 0;
        }
        true
    }

    /// Unlinks and frees `node`, giving its buffer back.
    ///
    /// # Safety
    ///
    /// `node` must be in this list.
    unsafe fn unlink(&mut self, node: *mut Node) -> Unposted {
        // SAFETY: `node` and its neighbours are nodes of this list (caller, type invariants);
        // its buffer is ours while it waits.
        let buf = unsafe {
            let (prev, next) = ((*node).prev, (*node).next);
            if prev.is_null() {
                self.head = next;
            } else {
                (*prev).next = next;
            }
            if next.is_null() {
                self.tail = prev;
            } else {
                (*next).prev = prev;
            }
            let buf = (*node).buf;
            (*buf).context[1] = (*node).owner;
            drop(KBox::from_raw(node));
            buf
        };
        // INVARIANT: unlinked, untagged, uncounted.
        self.queued -= 1;
        Unposted(buf)
    }
}

impl Drop for Flow {
    fn drop(&mut self) {
        // Device removal completes every waiting buffer before the agents go (a buffer left
        // would hold its agent's reference, and unregistering the agent would wait for it):
        // only the nodes of a backlog that was never used are left to free, none.
        debug_assert!(self.head.is_null());
        while self.pop().is_some() {}
    }
}
