// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The timewait queue of a device, and the USER_ESTABLISHED work item of `ib_cm_notify()`
//! (the work functions that end a timewait and deliver USER_ESTABLISHED are in
//! `entry/work.rs`).
//!
//! Stands for `cm_create_timewait_info()`, the timer half of `cm_enter_timewait()`,
//! `cm_timewait_handler()`, `cm_establish()` and `cm_establish_handler()` in cm.c. cm.c
//! allocates a `cm_timewait_info` with its own `delayed_work` per connection; here an id in
//! timewait is linked into its device's [`TimewaitQueue`] (24 bytes in the id: two links and a
//! deadline, kept in deadline order by `logic::deadline_list`), and one `delayed_work` per
//! device, armed for the earliest deadline, ends every due timewait. A queued id holds one
//! reference. Destroy takes the id off the queue: a timewait whose id is gone has nothing left
//! to do (cm.c lets it fire and finds no id). A device going down queues no id, as in cm.c, and
//! removal ends the timewaits still queued at once (cm.c's already queued timers fire later).

use crate::{
    bindings,
    cm_id::{CmId, CmIdInner, TwNode},
    device::{jiffies, CmDevice},
    logic::{
        deadline_list::{self, DeadlineList, Links},
        timeout,
    },
    wq,
};
use core::ptr::NonNull;
use kernel::{
    new_work,
    prelude::*,
    sync::Arc,
    workqueue::{impl_has_work, Work},
};

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
/// Every node is a `CmId` of this device whose queue reference (`Arc::into_raw`) the queue
/// owns, so it is live while queued; it is on the list of its `timewait_class`. Bit `i` of
/// `occupied` is set exactly when list `i` is not empty.
pub(crate) struct TimewaitQueue {
    lists: [DeadlineList<NonNull<CmId>>; CLASSES],
    occupied: u32,
}

const _: () = assert!(CLASSES <= u32::BITS as usize);

// SAFETY: The queue owns `Arc<CmId>` references (`CmId` is `Send + Sync`); the nodes' links are
// only touched by the holder of the device lock the queue lives in.
unsafe impl Send for TimewaitQueue {}

/// Access to the links of the queued ids (and of one id being queued or unqueued); only made
/// by [`TimewaitQueue`]'s methods, whose `&mut self` proves the device lock.
struct Nodes;

impl Nodes {
    fn node(&self, n: NonNull<CmId>) -> TwNode {
        // SAFETY: `n` is a live id of the queue's device (queued, or the caller's); its link is
        // only touched under that device's lock, which our creator holds (`TwLink`'s invariant).
        unsafe { *n.as_ref().timewait.0.get() }
    }

    fn with(&mut self, n: NonNull<CmId>, f: impl FnOnce(&mut TwNode)) {
        // SAFETY: As in `node`; the mutable borrow ends before any other node is touched.
        f(unsafe { &mut *n.as_ref().timewait.0.get() })
    }
}

impl Links for Nodes {
    type Node = NonNull<CmId>;
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

impl TimewaitQueue {
    /// Empty.
    pub(crate) const fn new() -> Self {
        // INVARIANT: No list has a node, no bit is set.
        Self {
            lists: [const { DeadlineList::new() }; CLASSES],
            occupied: 0,
        }
    }

    /// The list with the earliest head, and that head.
    fn earliest(&self) -> Option<(usize, NonNull<CmId>)> {
        let nodes = Nodes;
        let mut best: Option<(usize, NonNull<CmId>)> = None;
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
    fn insert(&mut self, id: Arc<CmId>, class: u8, at: usize) -> bool {
        // INVARIANT: the queue takes over the reference; its list is not empty any more.
        // SAFETY: `Arc::into_raw` never returns NULL.
        let n = unsafe { NonNull::new_unchecked(Arc::into_raw(id).cast_mut()) };
        let i = usize::from(class) % CLASSES;
        self.lists[i].insert(&mut Nodes, n, at);
        self.occupied |= 1 << i;
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
    fn remove(&mut self, id: &CmId, class: u8) -> Option<Arc<CmId>> {
        let n = NonNull::from(id);
        let i = usize::from(class) % CLASSES;
        if !self.lists[i].remove(&mut Nodes, n) {
            return None;
        }
        self.update_occupied(i);
        // SAFETY: It was queued, so the queue owned this reference (type invariant).
        Some(unsafe { Arc::from_raw(n.as_ptr()) })
    }

    /// Takes the earliest id off if its deadline has come (or in any case if `all`).
    fn pop_due(&mut self, now: usize, all: bool) -> Option<Arc<CmId>> {
        let (i, _) = self.earliest()?;
        let n = self.lists[i].pop_due(&mut Nodes, now, all)?;
        self.update_occupied(i);
        // SAFETY: As in `remove`.
        Some(unsafe { Arc::from_raw(n.as_ptr()) })
    }

    /// Ticks until the earliest deadline, `None` if the queue is empty.
    fn next_delay(&self, now: usize) -> Option<usize> {
        let (i, _) = self.earliest()?;
        self.lists[i].next_delay(&Nodes, now)
    }

    /// Whether no id is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.occupied == 0
    }
}

impl Drop for TimewaitQueue {
    fn drop(&mut self) {
        // Cannot happen: a queued id holds a reference to its device (so the device, and this
        // queue in it, outlive it), and removal ends every queued timewait (`end_all`). Should
        // it happen, the ids stay leaked rather than touched: their device is going away.
        if !self.is_empty() {
            pr_warn!("a device's timewait queue was dropped with ids queued (leaked)\n");
        }
    }
}

/// Queues the id for `conv(av.timeout)` ms of timewait. Called with the id lock held (`g`); takes
/// the device lock, under which device removal's `going_down` and its final run of the queue
/// are ordered with the arming (cm.c queues under `cm.lock`).
pub(crate) fn arm(id: &Arc<CmId>, g: &mut CmIdInner) {
    if g.timewait_armed {
        return;
    }
    let mut dev = id.dev.inner.lock();
    if dev.going_down {
        return;
    }
    let wq = wq::wq();
    if wq.is_null() {
        return;
    }
    let class = g.av.as_ref().map_or(0, |av| av.timeout);
    let ms = timeout::conv_ms(class);
    let delay = kernel::time::msecs_to_jiffies(ms);
    let first = dev
        .timewait
        .insert(id.clone(), class, jiffies().wrapping_add(delay));
    g.timewait_armed = true;
    g.timewait_class = class;
    if first {
        // The device's timer was later (or idle): move it up. `mod_delayed_work` may be called
        // under a spinlock.
        // SAFETY: `wq` lives until module exit, after every device is removed; the work is
        // the device's, initialised with it and live while the device is (removal runs it a
        // last time and queues nothing after `going_down`).
        unsafe { bindings::ibcm_glue_mod_delayed_work(wq, id.dev.timewait.get(), delay) };
    }
}

/// Takes an id being destroyed out of the device's timewait list of `class`, once destroy
/// has cleared its `timewait_armed` (under the id lock, in `conn::destroy_actions`). An expiry
/// already running for it finds `timewait_armed` cleared and does nothing; one that got past
/// that check either fails to take a use (destroy dropped the bias) and does nothing, or holds
/// one, which destroy waits for: no event reaches a destroyed id.
pub(crate) fn leave(id: &CmId, class: u8) {
    let queued = id.dev.inner.lock().timewait.remove(id, class);
    // The queue's reference, dropped outside the lock.
    drop(queued);
}

/// Removal: ends every timewait still queued on a device marked `going_down` and waits until
/// that is done; nothing is queued on it afterwards.
pub(crate) fn end_all(dev: &CmDevice) {
    let wq = wq::wq();
    if wq.is_null() {
        return;
    }
    // SAFETY: The work is the device's and live; `wq` is live (see `arm`). Flushing may sleep:
    // removal runs in process context.
    unsafe {
        bindings::ibcm_glue_mod_delayed_work(wq, dev.timewait.get(), 0);
        bindings::ibcm_glue_flush_delayed_work(dev.timewait.get());
    }
    if !dev.inner.lock().timewait.is_empty() {
        pr_warn!("timewait queue not empty after device removal ended it\n");
    }
}

/// The USER_ESTABLISHED work queued by `ib_cm_notify(IB_EVENT_COMM_EST)`. It holds only
/// memory (an `Arc`), not a use: a destroy that runs first makes it find nothing, as cm.c's
/// lookup by comm ID does.
#[pin_data]
pub(crate) struct EstablishWork {
    #[pin]
    work: Work<EstablishWork>,
    /// The id to deliver USER_ESTABLISHED to.
    pub(crate) id: Arc<CmId>,
}

impl_has_work! {
    impl HasWork<Self> for EstablishWork { self.work }
}

impl EstablishWork {
    /// Allocates the work (`GFP_ATOMIC`: `ib_cm_notify` may run in hard-IRQ context).
    pub(crate) fn new(id: &Arc<CmId>) -> Result<Pin<KBox<EstablishWork>>> {
        KBox::pin_init(
            pin_init!(EstablishWork { work <- new_work!("EstablishWork::work"), id: id.clone() }),
            GFP_ATOMIC,
        )
    }
}

/// The next id of `dev` whose timewait is due (all of them once the device is going down),
/// taken off the queue; or, when none is, `None` after arming the device's timewait work
/// (`dw`) for the next deadline.
pub(crate) fn next_due(dev: &CmDevice, dw: *mut bindings::delayed_work) -> Option<Arc<CmId>> {
    let mut inner = dev.inner.lock();
    let now = jiffies();
    let all = inner.going_down;
    if let Some(id) = inner.timewait.pop_due(now, all) {
        return Some(id);
    }
    let wq = wq::wq();
    match inner.timewait.next_delay(now) {
        Some(delay) if !all && !wq.is_null() => {
            // A sooner arming by `arm` stays: queueing a pending work is a no-op.
            // SAFETY: As in `arm`; `dw` is the device's timewait work (caller).
            unsafe { bindings::ibcm_glue_queue_delayed_work_jiffies(wq, dw, delay) };
        }
        _ => {}
    }
    None
}

/// Claims the expiry of an id [`next_due`] returned: false if destroy got there first.
pub(crate) fn claim_expiry(id: &CmId) -> bool {
    let mut g = id.inner.lock();
    if !g.timewait_armed {
        return false;
    }
    g.timewait_armed = false;
    true
}
