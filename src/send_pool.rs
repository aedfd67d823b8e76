// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Spare MAD send buffers of a port's agent, kept for the port's next sends.
//!
//! cm.c has no counterpart: its `cm_alloc_msg()` creates every send buffer with
//! `ib_create_send_mad()` (a `kzalloc` of the MAD layer's 352-byte work request and the
//! 256-byte MAD: a kmalloc-1k object, zeroed whole) and `cm_free_msg()` frees it when the send
//! completes. Every CM MAD has the same shape (one whole MAD, no RMPP), so a completed buffer
//! can carry the port's next MAD instead: `ib_post_send_mad()` sets up every per-post field
//! afresh (address handle, TID, timeout, retries, its references), which the CM's own
//! retries (`Completed::repost`) already rely on, and 6.12's MAD layer does not touch a
//! buffer once its send handler returned. A buffer's destination QP and P_Key index are fixed
//! when it is created, so the pool keeps only buffers made for QP1 and P_Key index 0 (every
//! RoCE MAD, and IB's default partition); the others are created and freed per send, as cm.c
//! does. The `send_pool_size` tunable bounds the pool (0: no pool).
//!
//! A spare buffer holds a reference to the agent (`ib_create_send_mad` takes it), so device
//! removal closes the pool and frees its buffers before it unregisters the agent.

use crate::{bindings, logic::wire::MAD_LEN};

/// The only P_Key index the pool serves.
pub(crate) const POOL_PKEY_INDEX: u16 = 0;

/// A port's spare send buffers (behind the port's `pool` lock), linked through their
/// `context[0]`.
///
/// # Invariants
///
/// The `len` buffers linked from `head` are send buffers of the port's agent, made for QP1
/// and [`POOL_PKEY_INDEX`] with the CM's MAD shape, whose sends are over (or which never went
/// out): owned by the pool, with no address handle or reference attached; each one's
/// `context[0]` is the next one (NULL for the last). The agent is registered while the pool
/// holds any: removal closes the port's pool (after which it is empty and stays so) and drops
/// what [`SendPool::close`] returned before it unregisters the agent.
pub(crate) struct SendPool {
    head: *mut bindings::ib_mad_send_buf,
    len: u32,
    open: bool,
}

// SAFETY: The buffers are plain memory the pool owns; any thread may take or free them.
unsafe impl Send for SendPool {}

const _: () = assert!(MAD_LEN == 256);

impl SendPool {
    /// An empty, open pool.
    pub(crate) const fn new() -> Self {
        Self {
            head: core::ptr::null_mut(),
            len: 0,
            open: true,
        }
    }

    /// A spare buffer, now the caller's, with its MAD cleared (the encoder writes into an
    /// all-zero MAD) and nothing attached.
    pub(crate) fn take(&mut self) -> Option<*mut bindings::ib_mad_send_buf> {
        let buf = self.head;
        if buf.is_null() {
            return None;
        }
        // SAFETY: `buf` is the pool's (invariants): its `context[0]` links the rest, and its
        // `mad` is one whole MAD, word-aligned (the start of its kmalloc'd block), which
        // nobody else touches. It leaves the list before it is handed out.
        unsafe {
            self.head = (*buf).context[0].cast();
            (*buf).context[0] = core::ptr::null_mut();
            (*(*buf).mad.cast::<[u64; MAD_LEN / 8]>()).fill(0);
        }
        self.len -= 1;
        Some(buf)
    }

    /// Keeps `buf` for a later send, unless the pool is closed or holds `max` already:
    /// `Err(buf)`, still the caller's to free.
    ///
    /// # Safety
    ///
    /// `buf` must be a send buffer of the port's registered agent made for QP1 and
    /// [`POOL_PKEY_INDEX`] with the CM's MAD shape, owned by the caller (its send over or
    /// never posted), with its address handle and references released and its `context`
    /// cleared.
    pub(crate) unsafe fn put(
        &mut self,
        buf: *mut bindings::ib_mad_send_buf,
        max: u32,
    ) -> Result<(), *mut bindings::ib_mad_send_buf> {
        if !self.open || self.len >= max {
            return Err(buf);
        }
        // INVARIANT: `buf` meets the pool's terms (caller) and links the rest.
        // SAFETY: `buf` is ours (caller).
        unsafe { (*buf).context[0] = self.head.cast() };
        self.head = buf;
        self.len += 1;
        Ok(())
    }

    /// Closes the pool (device removal): it keeps nothing from now on, and what it held is
    /// returned, to be dropped (which frees the buffers) outside the pool's lock while the
    /// agent is still registered.
    pub(crate) fn close(&mut self) -> SendPool {
        // INVARIANT: Closed and empty from now on.
        core::mem::replace(
            self,
            Self {
                open: false,
                ..Self::new()
            },
        )
    }

    /// Spare buffers held now, and the first one (the next send's), for the tests.
    #[cfg(ibcm_kunit)]
    pub(crate) fn peek(&self) -> (u32, *mut bindings::ib_mad_send_buf) {
        (self.len, self.head)
    }
}

impl Drop for SendPool {
    /// Frees the spare buffers: a closed pool's are handed over by [`SendPool::close`] while
    /// the agent is registered; a port's own pool is dropped after removal closed it, empty.
    fn drop(&mut self) {
        let mut buf = self.head;
        while !buf.is_null() {
            // SAFETY: A buffer of the list, owned by the pool, of an agent still registered
            // (see above); its `context[0]` links the next one; freed once.
            buf = unsafe {
                let next = (*buf).context[0].cast();
                bindings::ib_free_send_mad(buf);
                next
            };
        }
    }
}
