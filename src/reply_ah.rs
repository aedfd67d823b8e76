// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Addresses and address handles for the replies the CM sends straight from a received MAD.
//!
//! A REQ for a service nobody listens on, a stale REQ and a SIDR_REQ nobody serves are
//! answered straight from the received MAD (cm.c's `cm_issue_rej()` and
//! `cm_alloc_response_msg()`), and cm.c builds and destroys one address handle per answer:
//! `ib_create_ah_from_wc()` resolves the sender's address (GID table search, route and
//! neighbour lookup on RoCE) and the driver allocates the handle. Under a REQ storm for an
//! unknown service that is most of the CM's cost per REQ. Each device here keeps the last few
//! of these handles for [`TTL_MS`], keyed by everything `ib_init_ah_attr_from_wc()` reads (see
//! `struct ibcm_reply_ah_key` in `include/ib_cm_glue.h`), so equal keys give equal handles.
//!
//! Lifetime: a handle is an [`Arc<ReplyAh>`] shared by the cache and by every send still using
//! it (the send buffer's `context[0]` holds that reference until the send completes); the last
//! reference destroys it. Removal empties the cache before it unregisters the MAD agents, and
//! unregistering completes every send, so no handle outlives the agent's protection domain.
//! Lookups skip expired entries and inserts reuse their slots; the device's sweep work
//! (`device.rs`, armed by every insert) evicts them, so an idle device holds none (nor the
//! source-GID attribute references they carry) for longer than [`TTL_MS`] plus the timer's
//! slack. An entry's handle is created by the first answer that needs it: an entry made for a
//! REQ that found a listener (below) usually never creates one.
//! Staleness is bounded by [`TTL_MS`] too: a peer that changed its MAC address behind the same GID
//! gets its answers at the old address for at most that long (they are answers to requests
//! that failed anyway; the peer retries).
//!
//! The attribute also serves a REQ or SIDR_REQ that finds a listener: the new id's reply
//! address (`cm_id.rs`'s `ReplyPath`, cm.c's `cm_init_av_for_response()`) is a copy of the
//! cached one, so a burst of requests from one peer resolves its address once.

use crate::{
    bindings,
    error::ptr_error,
    logic::ttl_slots::{Evicted as Evicted_, TtlSlots},
};
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::{prelude::*, sync::Arc};

/// How long a cached address (and its handle, made later) is used after it was resolved.
pub(crate) const TTL_MS: u32 = 1000;
/// Handles kept per device (one per recent requester; a linear scan).
pub(crate) const SLOTS: usize = 16;

/// The address of a MAD's sender as `ib_init_ah_attr_from_wc()` computes it, and an address
/// handle for it, created on first use ([`ReplyAh::ah`]): a REQ or SIDR_REQ that finds a
/// listener needs only the address, and each connection's REQ has an address of its own (RoCE
/// v2 flow labels), so most entries never send an answer; both are released when the last
/// reference goes.
///
/// # Invariants
///
/// `attr` was initialised by `ib_init_ah_attr_from_wc()` and holds its references; `ah` is
/// NULL or a live address handle created from `attr` on the protection domain of the MAD agent
/// of the entry's port, set once. Both are owned by this object.
pub(crate) struct ReplyAh {
    attr: bindings::rdma_ah_attr,
    ah: AtomicPtr<bindings::ib_ah>,
}

// SAFETY: An address handle may be used and destroyed from any thread; the attribute is only
// read after construction, and its references may be released from any thread; the handle
// pointer is atomic.
unsafe impl Send for ReplyAh {}
// SAFETY: Shared use only reads, but for the atomic handle pointer.
unsafe impl Sync for ReplyAh {}

impl ReplyAh {
    /// Resolves the address of the sender of a received MAD (`ib_init_ah_attr_from_wc()`).
    ///
    /// # Safety
    ///
    /// `agent` must be registered and stay so for the call; `wc` and `grh` must be valid. May
    /// sleep.
    pub(crate) unsafe fn resolve(
        agent: *mut bindings::ib_mad_agent,
        wc: *const bindings::ib_wc,
        grh: *const bindings::ib_grh,
    ) -> Result<Self> {
        let mut attr = core::mem::MaybeUninit::<bindings::rdma_ah_attr>::uninit();
        // SAFETY: Valid agent, completion and header (caller); the output is ours.
        let ret = unsafe { bindings::ibcm_glue_reply_attr_init(agent, wc, grh, attr.as_mut_ptr()) };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: On success the helper initialised `attr`; no handle yet. An
        // `rdma_ah_attr` holds no pointer to itself, so it may move.
        // SAFETY: Initialised by the helper.
        let attr = unsafe { attr.assume_init() };
        Ok(Self {
            attr,
            ah: AtomicPtr::new(core::ptr::null_mut()),
        })
    }

    /// The handle, for a send buffer (valid while this object lives), created now if no send
    /// has needed it yet (the rest of `ib_create_ah_from_wc()`). Two first sends racing both
    /// create one; the loser destroys its own.
    ///
    /// # Safety
    ///
    /// `agent` must be the registered MAD agent of the port this address was resolved on and
    /// stay so for the call. May sleep.
    pub(crate) unsafe fn ah(
        &self,
        agent: *mut bindings::ib_mad_agent,
    ) -> Result<*mut bindings::ib_ah> {
        let ah = self.ah.load(Ordering::Acquire);
        if !ah.is_null() {
            return Ok(ah);
        }
        // SAFETY: `agent` is registered (caller); the attribute is initialised (invariant).
        // The helper hands `rdma_create_ah()` a private copy, so the shared attribute, which
        // other threads may be reading, is never written.
        let new = unsafe { bindings::ibcm_glue_reply_ah_create(agent, &self.attr) };
        if let Some(e) = ptr_error(new, ENOMEM) {
            return Err(e);
        }
        // INVARIANT: set once, from NULL, to a handle created from `attr` on the agent's PD.
        match self.ah.compare_exchange(
            core::ptr::null_mut(),
            new,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => Ok(new),
            Err(won) => {
                // SAFETY: Ours, never used.
                unsafe { bindings::ibcm_glue_destroy_ah(new) };
                Ok(won)
            }
        }
    }

    /// Copies the address into `dst`, which then holds references of its own
    /// (`rdma_copy_ah_attr()`).
    ///
    /// # Safety
    ///
    /// `dst` must be valid for writes and hold no references (uninitialised or destroyed).
    pub(crate) unsafe fn copy_attr_to(&self, dst: *mut bindings::rdma_ah_attr) {
        // SAFETY: `self.attr` is initialised (type invariant); `dst` is writable (caller).
        unsafe { bindings::rdma_copy_ah_attr(dst, &self.attr) };
    }
}

impl Drop for ReplyAh {
    fn drop(&mut self) {
        let ah = *self.ah.get_mut();
        // SAFETY: By the type invariant both are live (or the handle NULL) and ours;
        // `rdma_destroy_ah()` without the SLEEPABLE flag may be called in any context.
        unsafe {
            if !ah.is_null() {
                bindings::ibcm_glue_destroy_ah(ah);
            }
            bindings::rdma_destroy_ah_attr(&mut self.attr);
        }
    }
}

/// The key of a reply's address handle.
pub(crate) type Key = bindings::ibcm_reply_ah_key;

fn same(a: &Key, b: &Key) -> bool {
    a.sgid == b.sgid
        && a.dgid == b.dgid
        && a.flow_class == b.flow_class
        && a.vlan_id == b.vlan_id
        && a.slid == b.slid
        && a.sl == b.sl
        && a.path_bits == b.path_bits
        && a.net_type == b.net_type
        && a.has_grh == b.has_grh
}

// The key keeps the work completion's whole source LID (OPA LIDs are 32 bits wide): this does
// not compile if the two fields' types differ.
#[allow(dead_code)]
fn key_slid_is_wc_slid(wc: &bindings::ib_wc, key: &mut Key) {
    key.slid = wc.slid;
}

/// One cached reply address.
pub(crate) struct Entry {
    port_num: u32,
    key: Key,
    ah: Arc<ReplyAh>,
}

/// Handles removed from the cache, dropped by the caller after it unlocks: their references
/// only, not the whole entries (a sweep's frame would otherwise hold several copies of 16
/// keys).
pub(crate) type Evicted = Evicted_<Arc<ReplyAh>, SLOTS>;

/// The cached handles of one device; lives behind the device's cache lock. The slot and
/// expiry policy is `logic::ttl_slots`: lookups skip expired handles, inserts reuse their slots
/// first, and the device's sweep work ([`ReplyAhCache::next_sweep`], armed by every insert)
/// evicts them, so no handle (nor the source-GID attribute reference it holds) outlives
/// [`TTL_MS`] by more than the sweep timer's slack.
pub(crate) struct ReplyAhCache {
    slots: TtlSlots<Entry, SLOTS>,
    /// Set by [`ReplyAhCache::close`] when the device goes: nothing is cached any more.
    closed: bool,
}

impl ReplyAhCache {
    /// An empty cache whose handles live `ttl` jiffies.
    pub(crate) const fn new(ttl: usize) -> Self {
        Self {
            slots: TtlSlots::new(ttl),
            closed: false,
        }
    }

    /// The live handle for `key` on `port_num` at jiffies `now`.
    pub(crate) fn get(&self, port_num: u32, key: &Key, now: usize) -> Option<Arc<ReplyAh>> {
        self.slots
            .find(now, |e| e.port_num == port_num && same(&e.key, key))
            .map(|e| e.ah.clone())
    }

    /// Stores a new handle created at `now` (unless the cache is closed: it is handed back),
    /// in an expired or free slot, or in place of the entries in turn; returns what it
    /// replaced or refused, for the caller to drop after unlocking.
    pub(crate) fn insert(
        &mut self,
        port_num: u32,
        key: Key,
        now: usize,
        ah: Arc<ReplyAh>,
    ) -> Option<Entry> {
        let entry = Entry { port_num, key, ah };
        if self.closed {
            return Some(entry);
        }
        self.slots.insert(now, entry)
    }

    /// Whether new handles are still cached (the device is not going away).
    pub(crate) fn is_open(&self) -> bool {
        !self.closed
    }

    /// How long a handle lives, in jiffies.
    pub(crate) fn ttl(&self) -> usize {
        self.slots.ttl()
    }

    /// The sweep at `now`: evicts what has expired and says in how many jiffies the next
    /// entry expires (`None`: the cache is empty, no sweep is needed until the next insert).
    pub(crate) fn next_sweep(&mut self, now: usize) -> (Evicted, Option<usize>) {
        let evicted = self.slots.expire(now, |e| e.ah);
        (evicted, self.slots.next_expiry(now))
    }

    /// The address of each slot's handle object (0 for an empty slot), for the white-box
    /// tests.
    #[cfg(ibcm_kunit)]
    pub(crate) fn addresses(&self) -> [usize; SLOTS] {
        let mut out = [0; SLOTS];
        for (o, e) in out.iter_mut().zip(self.slots.entries()) {
            if let Some(e) = e {
                // CAST: an address, compared only.
                *o = core::ptr::from_ref::<ReplyAh>(&e.ah) as usize;
            }
        }
        out
    }

    /// How many entries have made their address handle, for the white-box tests.
    #[cfg(ibcm_kunit)]
    pub(crate) fn handles(&self) -> usize {
        self.slots
            .entries()
            .flatten()
            .filter(|e| !e.ah.ah.load(Ordering::Acquire).is_null())
            .count()
    }

    /// Empties the cache; with `close`, nothing is cached afterwards (device removal). The
    /// caller drops the handles after unlocking.
    pub(crate) fn take_all(&mut self, close: bool) -> Evicted {
        self.closed |= close;
        self.slots.take_all(|e| e.ah)
    }
}
