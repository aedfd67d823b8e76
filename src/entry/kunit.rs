// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! White-box KUnit suites, compiled in only for test builds (`IBCM_KUNIT=1` in Kbuild, which
//! passes `--cfg ibcm_kunit`).
//!
//! The mechanism, for 6.12 (whose kernel crate has no KUnit suite macro): a `static mut`
//! `kunit_suite` whose `test_cases` points at a zero-terminated `static mut` array of
//! `kunit_case`, and a `#[used]` pointer to the suite in the `.kunit_test_suites` section. The
//! module loader collects that section and KUnit runs the suite when the module goes live,
//! i.e. at insmod, after `init` has registered the ib_client. Expectations use
//! [`expect!`], which marks the case failed and carries on (no forced unwind, so a failing
//! case still frees what it allocated).

use crate::{
    bindings,
    cm_id::{CmDevice, CmId},
    listen::ListenReservation,
    logic::service_id::{AssignAllocator, ServiceId, ASSIGN, ASSIGN_LAST},
};
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{ffi, prelude::*, sync::Arc};

/// Marks the current case failed with `$msg`.
macro_rules! fail {
    ($msg:expr) => {
        // SAFETY: Both strings are NUL-terminated statics.
        unsafe {
            bindings::ibcm_glue_kunit_fail(
                concat!(file!(), "\0").as_ptr().cast(),
                // CAST: line numbers fit in an int.
                line!() as ffi::c_int,
                concat!($msg, "\0").as_ptr().cast(),
            )
        }
    };
}

/// Marks the current case failed if `$cond` is false, and goes on.
macro_rules! expect {
    ($cond:expr) => {
        if !$cond {
            fail!(stringify!($cond));
        }
    };
}

/// Like `?` for test set-up: on error, fail the case and return.
macro_rules! require {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(_) => {
                fail!(concat!("failed: ", stringify!($e)));
                return;
            }
        }
    };
}

extern "C" fn handler_a(_: *mut bindings::ib_cm_id, _: *const bindings::ib_cm_event) -> ffi::c_int {
    0
}

// Returns something else than `handler_a`, so the two can never be folded into one function
// (the sharing rule compares handler addresses).
extern "C" fn handler_b(_: *mut bindings::ib_cm_id, _: *const bindings::ib_cm_event) -> ffi::c_int {
    1
}

/// A device-less CM state: the listener tree and allocator without an HCA.
fn fake_device() -> Result<Arc<CmDevice>> {
    CmDevice::new(core::ptr::null_mut(), kernel::alloc::KVec::new())
}

fn new_id(dev: &Arc<CmDevice>, h: bindings::ib_cm_handler) -> Result<Arc<CmId>> {
    CmId::new(dev.clone(), h, core::ptr::null_mut(), false)
}

/// `ib_destroy_cm_id()` of one handle reference (the caller keeps its `Arc` for checks).
fn destroy(id: &Arc<CmId>) -> bool {
    id.destroy_with(0);
    true
}

/// `ib_cm_insert_listen()`'s core: insert, or share with the same handler.
fn insert_listen(
    dev: &Arc<CmDevice>,
    h: bindings::ib_cm_handler,
    sid: u64,
    assign: bool,
) -> Result<Arc<CmId>> {
    let fresh = new_id(dev, h)?;
    let res = ListenReservation::new(GFP_KERNEL)?;
    fresh.listen(ServiceId::new(sid), assign, fresh.handler_addr(), res)
}

const SID: u64 = 0x0000_0000_0106_1C06;

extern "C" fn tree_share_and_release(_test: *mut bindings::kunit) {
    let dev = require!(fake_device());
    let a = require!(insert_listen(&dev, Some(handler_a), SID, false));
    expect!(a.state() == bindings::ib_cm_state_IB_CM_LISTEN);
    expect!(a.service_id() == ServiceId::new(SID));
    let b = require!(insert_listen(&dev, Some(handler_a), SID, false));
    expect!(Arc::ptr_eq(&a, &b));
    expect!(dev.inner.lock().listen.share_count(ServiceId::new(SID)) == Some(2));
    // A different handler may not share: -EINVAL.
    expect!(insert_listen(&dev, Some(handler_b), SID, false).err() == Some(EINVAL));
    // Another service ID is an independent listener.
    let c = require!(insert_listen(&dev, Some(handler_b), SID + 1, false));
    expect!(!Arc::ptr_eq(&a, &c));
    expect!(dev.inner.lock().listen.len() == 2);
    // One destroy per share: the first leaves the listener in place.
    expect!(destroy(&b));
    expect!(dev.inner.lock().listen.share_count(ServiceId::new(SID)) == Some(1));
    expect!(a.state() == bindings::ib_cm_state_IB_CM_LISTEN);
    expect!(destroy(&a));
    expect!(dev
        .inner
        .lock()
        .listen
        .share_count(ServiceId::new(SID))
        .is_none());
    expect!(a.state() == bindings::ib_cm_state_IB_CM_IDLE);
    expect!(a.is_destroyed());
    expect!(destroy(&c));
    expect!(dev.inner.lock().listen.len() == 0);
}

extern "C" fn listen_never_shares(_test: *mut bindings::kunit) {
    let dev = require!(fake_device());
    let a = require!(insert_listen(&dev, Some(handler_a), SID, false));
    let id = require!(new_id(&dev, Some(handler_a)));
    let res = require!(ListenReservation::new(GFP_KERNEL));
    expect!(id.listen(ServiceId::new(SID), false, None, res).err() == Some(EBUSY));
    expect!(id.state() == bindings::ib_cm_state_IB_CM_IDLE);
    // A listening id cannot listen again.
    let res = require!(ListenReservation::new(GFP_KERNEL));
    expect!(a.listen(ServiceId::new(SID + 7), false, None, res).err() == Some(EINVAL));
    expect!(destroy(&a));
    expect!(destroy(&id));
}

extern "C" fn assign_allocator(_test: *mut bindings::kunit) {
    let dev = require!(fake_device());
    let first = require!(insert_listen(&dev, Some(handler_a), 0, true));
    let second = require!(insert_listen(&dev, Some(handler_a), 0, true));
    expect!(first.service_id() == ASSIGN);
    expect!(second.service_id() == ServiceId::new(ASSIGN.get() + 1));
    // Assigned listeners are never shared: each gets its own ID.
    expect!(!Arc::ptr_eq(&first, &second));
    // Each device counts on its own.
    let other = require!(fake_device());
    let third = require!(insert_listen(&other, Some(handler_a), 0, true));
    expect!(third.service_id() == ASSIGN);
    expect!(destroy(&first) && destroy(&second) && destroy(&third));

    // Near the end of the range: the last ID, then an error, never a wrap.
    let end = require!(fake_device());
    end.inner
        .lock()
        .listen
        .set_allocator(AssignAllocator::starting_at(ASSIGN_LAST));
    let last = require!(insert_listen(&end, Some(handler_a), 0, true));
    expect!(last.service_id() == ASSIGN_LAST);
    expect!(insert_listen(&end, Some(handler_a), 0, true).err() == Some(ENOSPC));
    expect!(destroy(&last));
}

static PIN_RELEASED: AtomicBool = AtomicBool::new(false);

extern "C" fn destroy_waits_for_handlers(_test: *mut bindings::kunit) {
    let dev = require!(fake_device());
    let l = require!(insert_listen(&dev, Some(handler_a), SID, false));
    expect!(l.users() == 1);
    // What the REQ path does: look the listener up and pin it for the handler call.
    let pinned = dev.inner.lock().listen.find(ServiceId::new(SID));
    expect!(pinned.is_some());
    expect!(l.users() == 2);
    PIN_RELEASED.store(false, Ordering::SeqCst);
    let worker = pinned.clone();
    let spawned = kernel::workqueue::system().try_spawn(GFP_KERNEL, move || {
        sleep_ms(200);
        PIN_RELEASED.store(true, Ordering::SeqCst);
        if let Some(w) = worker {
            w.listener_put();
        }
    });
    if spawned.is_err() {
        // Undo the pin ourselves so the destroy below cannot hang.
        if let Some(p) = &pinned {
            p.listener_put();
        }
        expect!(spawned.is_ok());
    }
    // Erases at once (no new lookups), then sleeps until the pin is released.
    expect!(destroy(&l));
    expect!(PIN_RELEASED.load(Ordering::SeqCst));
    expect!(l.users() == 0);
    expect!(dev.inner.lock().listen.find(ServiceId::new(SID)).is_none());
}

/// Holds a use of `id` for `ms` on the system workqueue (what a handler call in flight does);
/// without a worker the use is given back at once.
fn hold_use_for(id: &Arc<CmId>, ms: u32) -> bool {
    id.add_user();
    let worker = id.clone();
    let spawned = kernel::workqueue::system().try_spawn(GFP_KERNEL, move || {
        sleep_ms(ms);
        worker.put_user();
    });
    if spawned.is_err() {
        id.put_user();
        return false;
    }
    true
}

/// A destroy that waits for callbacks longer than the id's budget (retries x timeout x 5/4:
/// 1 x 1000 ms here, 1250 ms) is counted on the device (and logged); one that waits less is
/// not.
extern "C" fn destroy_wait_reports_over_budget(_test: *mut bindings::kunit) {
    let dev = require!(fake_device());
    let before = dev.slow_destroys();
    let quick = require!(new_id(&dev, Some(handler_a)));
    let slow = require!(new_id(&dev, Some(handler_a)));
    for id in [&quick, &slow] {
        let mut g = id.inner.lock();
        g.conn.max_cm_retries = 1;
        g.conn.timeout_ms = 1000;
    }
    expect!(hold_use_for(&quick, 300));
    expect!(destroy(&quick));
    expect!(quick.users() == 0);
    expect!(dev.slow_destroys() == before);
    expect!(hold_use_for(&slow, 1600));
    expect!(destroy(&slow));
    expect!(slow.users() == 0);
    expect!(dev.slow_destroys() == before + 1);
}

// --- a timewait expiry racing a destroy ---

/// Iterations of [`timewait_expiry_races_destroy`] whose destroy has returned (an id's context
/// is its iteration number plus one).
static TW_DONE: AtomicU64 = AtomicU64::new(0);
static TW_EXITS: AtomicU32 = AtomicU32::new(0);
static TW_LATE: AtomicBool = AtomicBool::new(false);

extern "C" fn timewait_handler(
    cm_id: *mut bindings::ib_cm_id,
    event: *const bindings::ib_cm_event,
) -> ffi::c_int {
    // SAFETY: The CM passes its live id and event for the call.
    let (iter, kind) = unsafe { ((*cm_id).context as usize as u64, (*event).event) };
    if kind == bindings::ib_cm_event_type_IB_CM_TIMEWAIT_EXIT {
        TW_EXITS.fetch_add(1, Ordering::SeqCst);
    }
    if iter <= TW_DONE.load(Ordering::SeqCst) {
        TW_LATE.store(true, Ordering::SeqCst);
    }
    0
}

/// Ids in timewait (1 ms, the shortest) destroyed before, around and after their expiry: the
/// expiry either delivers TIMEWAIT_EXIT before the destroy returns or nothing at all, every
/// use is given back, and the device's queue ends empty.
extern "C" fn timewait_expiry_races_destroy(_test: *mut bindings::kunit) {
    const ROUNDS: u64 = 45;
    let dev = require!(fake_device());
    // The device's timer may still be armed for an id destroyed before its expiry: stop it
    // before the device goes, on every way out (device removal does this in `shut_down`).
    struct StopTimer<'a>(&'a CmDevice);
    impl Drop for StopTimer<'_> {
        fn drop(&mut self) {
            self.0.timewait.retire();
        }
    }
    let _stop = StopTimer(&dev);
    TW_DONE.store(0, Ordering::SeqCst);
    TW_EXITS.store(0, Ordering::SeqCst);
    TW_LATE.store(false, Ordering::SeqCst);
    for i in 1..=ROUNDS {
        let ctx = i as usize as *mut ffi::c_void;
        let id = require!(CmId::new(dev.clone(), Some(timewait_handler), ctx, false));
        {
            let mut g = id.inner.lock();
            id.set_state(crate::logic::state::State::Timewait.raw());
            crate::timewait::arm(&id, &mut g);
            expect!(g.timewait_armed);
        }
        // Destroy at once, after a busy wait of up to about a tick, or after a sleep past the
        // expiry, in turn.
        match i % 3 {
            0 => {}
            1 => {
                for _ in 0..(i * 2000) {
                    core::hint::spin_loop();
                }
            }
            _ => sleep_ms(((i % 4) + 1) as u32),
        }
        expect!(destroy(&id));
        TW_DONE.store(i, Ordering::SeqCst);
        expect!(id.users() == 0);
    }
    // Let a last expiry run that would be late.
    sleep_ms(20);
    expect!(!TW_LATE.load(Ordering::SeqCst));
    let exits = TW_EXITS.load(Ordering::SeqCst);
    // Both sides of the race happened: some expiries came first, some destroys did.
    expect!(exits > 0);
    expect!(u64::from(exits) < ROUNDS);
    expect!(dev.inner.lock().timewait.is_empty());
}

// --- the CM's own events when allocations fail ---

static OWN_KIND: AtomicU32 = AtomicU32::new(u32::MAX);
static OWN_COUNT: AtomicU32 = AtomicU32::new(0);

extern "C" fn own_event_handler(
    _cm_id: *mut bindings::ib_cm_id,
    event: *const bindings::ib_cm_event,
) -> ffi::c_int {
    // SAFETY: The CM passes a live event for the call.
    OWN_KIND.store(unsafe { (*event).event }, Ordering::SeqCst);
    OWN_COUNT.fetch_add(1, Ordering::SeqCst);
    0
}

/// A REQ timeout (`cm_process_send_error`: REQ_ERROR, the id back to IDLE) and a timewait
/// expiry (`cm_timewait_handler`: TIMEWAIT_EXIT, IDLE) reach the ULP while every event
/// allocation that may fail does, as under failslab: cm.c cannot fail there, so neither may
/// ours (before, the id stayed in REQ_SENT or TIMEWAIT with no timer left to end it).
extern "C" fn own_events_survive_alloc_failure(_test: *mut bindings::kunit) {
    use crate::logic::state::State;
    let dev = require!(fake_device());
    for (state, expected) in [
        (
            State::Timewait,
            bindings::ib_cm_event_type_IB_CM_TIMEWAIT_EXIT,
        ),
        (State::ReqSent, bindings::ib_cm_event_type_IB_CM_REQ_ERROR),
    ] {
        let id = require!(CmId::new(
            dev.clone(),
            Some(own_event_handler),
            core::ptr::null_mut(),
            false
        ));
        OWN_KIND.store(u32::MAX, Ordering::SeqCst);
        OWN_COUNT.store(0, Ordering::SeqCst);
        {
            let mut g = id.inner.lock();
            id.set_state(state.raw());
            // Due now: the expiry below ends it as the device's timewait work would.
            g.timewait_armed = state == State::Timewait;
        }
        crate::event::FAIL_ALLOCS.store(true, Ordering::SeqCst);
        if state == State::Timewait {
            crate::entry::work::expire(id.clone());
        } else {
            // The REQ's MAD timed out (`ib_mad` ran out of retries).
            crate::conn::send_done(
                &id,
                Some(State::ReqSent),
                bindings::ib_wc_status_IB_WC_RESP_TIMEOUT_ERR,
            );
        }
        crate::event::FAIL_ALLOCS.store(false, Ordering::SeqCst);
        expect!(OWN_COUNT.load(Ordering::SeqCst) == 1);
        expect!(OWN_KIND.load(Ordering::SeqCst) == expected);
        expect!(id.cm_state() == State::Idle);
        expect!(destroy(&id));
        expect!(id.users() == 0);
    }
}

/// A received MAD's event is made in a slot (no allocation) and, when its id has no deliverer,
/// delivered from there by the thread that made it. When another thread is delivering,
/// `lock_for_event` boxes it before the lock, with an allocation that cannot fail (failslab,
/// here `FAIL_ALLOCS`, leaves it alone): it queues pointing into the MAD it keeps, and its slot
/// keeps none.
extern "C" fn pending_event_boxed_only_to_queue(_test: *mut bindings::kunit) {
    use crate::conn::{deliver_or_put, lock_for_event, queue_event, recv_event};
    use crate::logic::{state, wire::MAD_HDR_LEN, wire::MAD_LEN};
    use crate::recv_wc::{RecvWork, RELEASED};
    let dev = require!(fake_device());
    let id = require!(new_id(&dev, Some(own_event_handler)));
    let released = || RELEASED.load(Ordering::SeqCst);
    let before = released();
    let bytes = [0x5Au8; MAD_LEN];
    let users = id.users();

    // No deliverer: the event stays in its slot and this thread delivers it.
    OWN_KIND.store(u32::MAX, Ordering::SeqCst);
    OWN_COUNT.store(0, Ordering::SeqCst);
    let wc = require!(RecvWork::stand_in(&bytes));
    id.add_user();
    let mut slot = None;
    // `recv_event` gives the use back if it makes no event.
    let Some(ev) = recv_event(&id, &wc, 8, &mut slot) else {
        fail!("no event");
        expect!(destroy(&id));
        return;
    };
    let (mut g, ev) = lock_for_event(&id, ev);
    expect!(!ev.is_boxed());
    let out = queue_event(&id, &mut g, ev, state::Event::RtuReceived);
    expect!(id.has_deliverer(&g));
    drop(g);
    expect!(out.as_ref().is_some_and(|e| !e.is_boxed()));
    deliver_or_put(&id, out);
    expect!(OWN_COUNT.load(Ordering::SeqCst) == 1);
    expect!(OWN_KIND.load(Ordering::SeqCst) == bindings::ib_cm_event_type_IB_CM_RTU_RECEIVED);
    expect!(!id.has_deliverer(&id.inner.lock()) && id.users() == users);
    drop(slot);
    drop(wc);
    expect!(released() == before + 1);

    // Another thread delivers, and every allocation that may fail fails: the event is still
    // boxed before the lock and queued.
    let wc = require!(RecvWork::stand_in(&bytes));
    id.add_user();
    expect!(id.claim_delivery(&mut id.inner.lock()));
    let mut slot = None;
    let Some(ev) = recv_event(&id, &wc, 8, &mut slot) else {
        fail!("no event");
        id.end_delivery(&mut id.inner.lock());
        expect!(destroy(&id));
        return;
    };
    crate::event::FAIL_ALLOCS.store(true, Ordering::SeqCst);
    let (mut g, ev) = lock_for_event(&id, ev);
    crate::event::FAIL_ALLOCS.store(false, Ordering::SeqCst);
    expect!(ev.is_boxed());
    expect!(queue_event(&id, &mut g, ev, state::Event::RtuReceived).is_none());
    let queued = g.events.pop();
    expect!(g.events.pop().is_none());
    id.end_delivery(&mut g);
    drop(g);
    id.put_user();
    expect!(id.users() == users);
    expect!(slot.as_ref().is_some_and(|e| e.ev.private_data.is_null()));
    drop(slot);
    match queued {
        Some(queued) => {
            let pd = queued.ev.private_data.cast_const();
            expect!(pd == wc.mad()[MAD_HDR_LEN + 8..].as_ptr().cast());
            expect!(queued.ev.event == bindings::ib_cm_event_type_IB_CM_RTU_RECEIVED);
            // The receive work is done; the queued event still holds the MAD.
            drop(wc);
            expect!(released() == before + 1);
            drop(queued);
        }
        None => {
            fail!("nothing queued");
            drop(wc);
        }
    }
    expect!(released() == before + 2);
    expect!(OWN_COUNT.load(Ordering::SeqCst) == 1);
    expect!(destroy(&id));
    expect!(id.users() == 0);
}

/// A send after device removal began fails with `-EINVAL`, as cm.c's `cm_alloc_msg` finds the
/// port's MAD agent gone (it once gave `-ENODEV`). The id has an address, so the send gets as
/// far as the device's send gate.
extern "C" fn send_after_removal_gets_einval(_test: *mut bindings::kunit) {
    use crate::logic::state::State;
    let dev = require!(fake_device());
    let id = require!(CmId::new(
        dev.clone(),
        Some(handler_a),
        core::ptr::null_mut(),
        false
    ));
    // An all-zero attribute holds no GID reference: dropping the address releases nothing.
    let av = require!(crate::av::Av::new(1, 0, 0, bindings::rdma_ah_attr::default()).boxed());
    {
        let mut g = id.inner.lock();
        g.av = Some(av);
        id.set_state(State::RepRcvd.raw());
    }
    dev.mark_going_down();
    // The gate refuses (the device has no ports either, which would give EINVAL too: the
    // case shows the gate's errno, as it did when it was ENODEV).
    expect!(dev.enter_send().is_none());
    expect!(crate::conn::rep_rtu::send_rtu(&id, &[]) == Err(EINVAL));
    expect!(id.cm_state() == State::RepRcvd);
    expect!(destroy(&id));
}

/// The REQ/QP tables' insert with a [`crate::remote::Vacancy`] from an earlier lookup: it links
/// at the places found when the tables have not changed since, and walks again when they have
/// (an entry added or removed between the two), so the trees hold every entry under its keys
/// either way, and a key taken in between is still refused. Each entry leaves the tables
/// through the link its insert returned, and is gone from both trees then.
extern "C" fn conn_tables_vacancy_hint(_test: *mut bindings::kunit) {
    use crate::remote::{tables, ConnReservation, QpKey, ReqKey, Taken};
    let dev = require!(fake_device());
    let ids: [Arc<CmId>; 4] = [
        require!(new_id(&dev, Some(handler_a))),
        require!(new_id(&dev, Some(handler_a))),
        require!(new_id(&dev, Some(handler_a))),
        require!(new_id(&dev, Some(handler_a))),
    ];
    const GUID: u64 = 0x0002_c903_0000_1234;
    let keys = |i: u32| {
        (
            ReqKey {
                ca_guid: GUID,
                comm_id: 0x100 + i,
            },
            QpKey {
                ca_guid: GUID,
                qpn: 0x40 + i,
            },
        )
    };
    // The CM's own tables (the only ones there are), under their lock for each step; the
    // keys are the test's own, and the steps are checked by what they leave in the tables.
    let holder = |k: &ReqKey, q: &QpKey| tables().lock().conns.holder(k, q);
    let holder_is = |i: u32, want: &CmId| {
        let (k, q) = keys(i);
        matches!(holder(&k, &q), Err(Taken::Req(h)) if core::ptr::eq(&*h, want))
    };
    let insert = |i: u32, id: &Arc<CmId>, hint| {
        let (k, q) = keys(i);
        let res = ConnReservation::new(GFP_KERNEL).map_err(|_| ())?;
        let done = tables().lock().conns.insert(k, q, id, res, hint);
        done.map_err(|_| ())
    };
    let remove = |link, id: &CmId| tables().lock().conns.remove(link, id).is_some();
    let mut links = [None, None, None, None];
    // A hint taken, then the tables change (entry 1 added): entry 0 still lands right.
    let (k0, q0) = keys(0);
    let stale = holder(&k0, &q0).ok();
    expect!(stale.is_some());
    links[1] = insert(1, &ids[1], None).ok();
    links[0] = insert(0, &ids[0], stale).ok();
    // A fresh hint is used as it is.
    let (k2, q2) = keys(2);
    let fresh = holder(&k2, &q2).ok();
    expect!(fresh.is_some());
    links[2] = insert(2, &ids[2], fresh).ok();
    // A key taken after the hint was given is refused, not linked twice.
    let (k3, q3) = keys(3);
    let late = holder(&k3, &q3).ok();
    links[3] = insert(3, &ids[3], None).ok();
    expect!(links.iter().all(Option::is_some));
    expect!(insert(3, &ids[0], late).is_err());
    for (i, id) in ids.iter().enumerate() {
        // CAST: 0..4.
        expect!(holder_is(i as u32, id));
    }
    // A QP key alone is found too (the stale-connection check).
    let other = ReqKey {
        ca_guid: GUID,
        comm_id: 0x999,
    };
    expect!(matches!(holder(&other, &keys(2).1), Err(Taken::Qp(h)) if Arc::ptr_eq(&h, &ids[2])));
    for (i, id) in ids.iter().enumerate() {
        if let Some(link) = links[i].take() {
            expect!(remove(link, id));
        }
        // CAST: 0..4.
        let (k, q) = keys(i as u32);
        // Out of both trees: neither key is held any more.
        expect!(holder(&k, &q).is_ok());
    }
    // Removal changed the tables: a hint from before it is not trusted.
    let before = holder(&k0, &q0).ok();
    links[1] = insert(1, &ids[1], None).ok();
    links[0] = insert(0, &ids[0], before).ok();
    expect!(holder_is(0, &ids[0]) && holder_is(1, &ids[1]));
    for (i, id) in ids.iter().enumerate().take(2) {
        let link = links[i].take();
        expect!(link.is_some_and(|link| remove(link, id)));
    }
    for id in &ids {
        destroy(id);
    }
}

// --- the receive path, with real MADs between the two local rxe devices ---
//
// The test build registers these cases too; they run at insmod in the single-guest check run,
// where rxe0 (10.0.0.1) and rxe1 (10.0.0.2) exist on a veth pair. Each case sends a crafted
// MAD from rxe1's agent to rxe0's QP1 through the CM's own send path; rxe0 receives it through
// the MAD layer like any MAD, and what rxe0's CM sends back is read from the capture buffer
// (every MAD the CM sends is copied there in test builds) and decoded field by field.
use crate::logic::wire::{
    conn::Req, decode_mad, sidr::SidrReq, CmMessage, MAD_LEN as WIRE_MAD_LEN,
};
use core::sync::atomic::{AtomicU32, AtomicU64};

/// A device looked up by name, with its CM state; the ib_core reference is dropped on drop.
struct TestDev {
    ib: *mut bindings::ib_device,
    cm: Arc<CmDevice>,
}

impl TestDev {
    fn get(name: &'static core::ffi::CStr) -> Option<Self> {
        // SAFETY: Plain lookup by name; the reference is released in `drop`.
        let ib = unsafe {
            bindings::ib_device_get_by_name(
                name.as_ptr().cast(),
                bindings::rdma_driver_id_RDMA_DRIVER_UNKNOWN,
            )
        };
        if ib.is_null() {
            return None;
        }
        // SAFETY: `ib` is held.
        match unsafe { CmDevice::get(ib) } {
            Ok(cm) => Some(Self { ib, cm }),
            Err(_) => {
                // SAFETY: Releases the reference taken above.
                unsafe { bindings::ib_device_put(ib) };
                None
            }
        }
    }
}

impl Drop for TestDev {
    fn drop(&mut self) {
        // SAFETY: Releases the reference taken in `get`.
        unsafe { bindings::ib_device_put(self.ib) };
    }
}

/// An address from rxe1 to rxe0's QP1.
struct TestAv(kernel::alloc::KBox<kernel::types::Opaque<bindings::rdma_ah_attr>>);

impl TestAv {
    fn new(from: &TestDev, to: &TestDev) -> Option<Self> {
        let av = kernel::alloc::KBox::new(kernel::types::Opaque::uninit(), GFP_KERNEL).ok()?;
        // SAFETY: Live devices; `av` is ours to initialise.
        let ret = unsafe { bindings::ibcm_glue_test_av(from.ib, to.ib, av.get()) };
        if ret != 0 {
            return None;
        }
        Some(Self(av))
    }
}

impl Drop for TestAv {
    fn drop(&mut self) {
        // SAFETY: Initialised by `ibcm_glue_test_av`; released once.
        unsafe { bindings::rdma_destroy_ah_attr(self.0.get()) };
    }
}

/// rxe0, rxe1 and an address from rxe1 to rxe0, or a failed case.
fn two_devices() -> Option<(TestDev, TestDev, TestAv)> {
    let (Some(d0), Some(d1)) = (TestDev::get(c"rxe0"), TestDev::get(c"rxe1")) else {
        fail!("rxe0 and rxe1 must exist");
        return None;
    };
    let Some(av) = TestAv::new(&d1, &d0) else {
        fail!("no address from rxe1 to rxe0");
        return None;
    };
    Some((d0, d1, av))
}

/// A REQ as rdma_cm would send it along `av`, with recognisable values (the primary path's
/// GIDs are the address's, so the passive side can build its address from the path).
fn test_req(service_id: u64, comm_id: u32, av: &TestAv) -> Req<'static> {
    let mut p = [0u8; crate::logic::wire::PAYLOAD_LEN];
    let (mut sgid, mut dgid) = ([0u8; 16], [0u8; 16]);
    // SAFETY: `av` holds an initialised attribute; the outputs are 16 bytes each.
    unsafe { bindings::ibcm_glue_test_av_gids(av.0.get(), sgid.as_mut_ptr(), dgid.as_mut_ptr()) };
    p[56..72].copy_from_slice(&sgid);
    p[72..88].copy_from_slice(&dgid);
    p[93] = 64;
    p[0..4].copy_from_slice(&comm_id.to_be_bytes());
    p[8..16].copy_from_slice(&service_id.to_be_bytes());
    p[16..24].copy_from_slice(&0x0002_C903_00AB_CDEFu64.to_be_bytes());
    p[32..36].copy_from_slice(&[0x00, 0x04, 0x56, 0x02]); // QPN 0x456, responder resources 2
    p[39] = 3; // initiator depth
    p[43] = 20 << 3;
    p[44..48].copy_from_slice(&[0x12, 0x34, 0x56, (18 << 3) | 7]);
    p[48..50].copy_from_slice(&0xFFFFu16.to_be_bytes());
    p[50] = (3 << 4) | 6; // MTU 3, RNR retry 6 (distinct from the retry count 7)
    p[51] = 15 << 4;
    p[95] = 17 << 3;
    Req::decode_with(&p, crate::logic::wire::field::Bytes::new(&TEST_REQ_PD))
}

/// The private data of [`test_req`]: byte `i` is `0xA0 ^ i`.
static TEST_REQ_PD: [u8; crate::logic::wire::conn::REQ_PRIVATE_DATA] = {
    let mut pd = [0u8; crate::logic::wire::conn::REQ_PRIVATE_DATA];
    let mut i = 0;
    while i < pd.len() {
        // CAST: the index is below 92.
        pd[i] = 0xA0 ^ i as u8;
        i += 1;
    }
    pd
};

/// Sends `msg` from rxe1 to rxe0 and waits up to 3 s for rxe0's CM to send a MAD of
/// attribute `answer` with transaction ID `tid`; returns it.
fn exchange(
    from: &TestDev,
    av: &TestAv,
    msg: &CmMessage<'_>,
    tid: u64,
    answer: u16,
) -> Option<[u8; WIRE_MAD_LEN]> {
    exchange_expecting(from, av, msg, tid, tid, answer)
}

/// [`exchange`] with the answer expected under transaction ID `want` (`msg` goes with `tid`).
fn exchange_expecting(
    from: &TestDev,
    av: &TestAv,
    msg: &CmMessage<'_>,
    tid: u64,
    want: u64,
    answer: u16,
) -> Option<[u8; WIRE_MAD_LEN]> {
    let mut out = [0u8; WIRE_MAD_LEN];
    let start = capture(u32::MAX, &mut out);
    let dest = crate::send::Dest::Av {
        attr: av.0.get(),
        remote_qpn: 1,
        pkey_index: 0,
    };
    // SAFETY: `av` lives across the call.
    if unsafe { crate::send::send(&from.cm, 1, dest, msg, tid, 0, false) }.is_err() {
        return None;
    }
    for _ in 0..60 {
        sleep_ms(50);
        let count = capture(u32::MAX, &mut out);
        for index in start..count {
            capture(index, &mut out);
            let tid_ok = out[8..16] == want.to_be_bytes();
            if tid_ok && u16::from_be_bytes([out[16], out[17]]) == answer {
                return Some(out);
            }
        }
    }
    None
}

/// Sleeps `ms` milliseconds (the test cases and their helpers run in process context).
fn sleep_ms(ms: u32) {
    // SAFETY: Plain sleep; every caller runs in process context.
    unsafe { bindings::msleep(ms) }
}

/// The number of MADs rxe0's CM sent since capture began; with `index` below it, also copies
/// that MAD into `out`.
fn capture(index: u32, out: &mut [u8; WIRE_MAD_LEN]) -> u32 {
    // SAFETY: `out` is `WIRE_MAD_LEN` (256) writable bytes; an out-of-range index only returns
    // the count.
    unsafe { bindings::ibcm_glue_capture_get(index, out.as_mut_ptr()) }
}

const UNKNOWN_SID: u64 = 0x0000_0000_0106_FFF0;
const LISTEN_SID: u64 = 0x0000_0000_0106_FFF1;
const MRA_SID: u64 = 0x0000_0000_0106_FFF2;

/// Whether rxe0's CM sent a MAD of attribute `attr` with transaction ID `tid` since capture
/// index `start`.
fn captured_since(start: u32, attr: u16, tid: u64) -> bool {
    let mut out = [0u8; WIRE_MAD_LEN];
    let count = capture(u32::MAX, &mut out);
    (start..count).any(|index| {
        capture(index, &mut out);
        out[8..16] == tid.to_be_bytes() && u16::from_be_bytes([out[16], out[17]]) == attr
    })
}

static MRA_ID: core::sync::atomic::AtomicPtr<bindings::ib_cm_id> =
    core::sync::atomic::AtomicPtr::new(core::ptr::null_mut());

/// Answers a REQ with an MRA (service timeout 20) and keeps the id in MRA_REQ_SENT.
extern "C" fn mra_handler(
    id: *mut bindings::ib_cm_id,
    ev: *const bindings::ib_cm_event,
) -> ffi::c_int {
    // SAFETY: The CM passes a live id and event for the duration of the call.
    if unsafe { (*ev).event } != bindings::ib_cm_event_type_IB_CM_REQ_RECEIVED {
        return 0;
    }
    // SAFETY: `id` is live; no private data.
    if unsafe { crate::entry::abi::ibcm_rs_send_cm_mra(id, 20, core::ptr::null(), 0) } != 0 {
        return -(bindings::EINVAL as i32);
    }
    MRA_ID.store(id, Ordering::SeqCst);
    0
}

// A retransmitted REQ for an id in MRA_REQ_SENT gets the MRA again, with the TID of the
// exchange (the id's, cm.c's `cm_id_priv->tid` in `cm_format_mra`), not the retransmission's,
// and is counted as a duplicate.
extern "C" fn dup_req_gets_mra_with_the_ids_tid(_test: *mut bindings::kunit) {
    let Some((d0, d1, av)) = two_devices() else {
        return;
    };
    let listener = require!(insert_listen(&d0.cm, Some(mra_handler), MRA_SID, false));
    MRA_ID.store(core::ptr::null_mut(), Ordering::SeqCst);
    let (tid1, tid2) = (0x0000_CAFE_0000_0021u64, 0x0000_CAFE_0000_0022u64);
    let req = test_req(MRA_SID, 0x6677_0001, &av);
    let first = exchange(&d1, &av, &CmMessage::Req(req.clone()), tid1, 0x11);
    expect!(first.is_some());
    let id = MRA_ID.load(Ordering::SeqCst);
    expect!(!id.is_null());
    // SAFETY: `id` is the handler's live handle (destroyed below).
    expect!(id.is_null() || unsafe { (*id).state } == bindings::ib_cm_state_IB_CM_MRA_REQ_SENT);
    let start = capture(u32::MAX, &mut [0u8; WIRE_MAD_LEN]);
    let again = exchange_expecting(&d1, &av, &CmMessage::Req(req), tid2, tid1, 0x11);
    expect!(again.is_some());
    expect!(!captured_since(start, 0x11, tid2));
    if let Some(mad) = again {
        match decode_mad(&mad) {
            Ok((_, CmMessage::Mra(m))) => {
                expect!(m.remote_comm_id == 0x6677_0001 && m.message_mraed == 0);
                expect!(m.service_timeout == 20);
            }
            _ => fail!("an MRA"),
        }
    }
    if !id.is_null() {
        // SAFETY: The handler's handle, destroyed once.
        unsafe { crate::entry::abi::ibcm_rs_destroy_cm_id(id) };
    }
    expect!(destroy(&listener));
}

extern "C" fn req_without_listener_gets_rej(_test: *mut bindings::kunit) {
    let Some((_d0, d1, av)) = two_devices() else {
        return;
    };
    let req = test_req(UNKNOWN_SID, 0x1122_3344, &av);
    let mad = exchange(&d1, &av, &CmMessage::Req(req), 0x0000_CAFE_0000_0001, 0x12);
    expect!(mad.is_some());
    let Some(mad) = mad else { return };
    match decode_mad(&mad) {
        Ok((hdr, CmMessage::Rej(rej))) => {
            expect!(hdr.tid == 0x0000_CAFE_0000_0001);
            expect!(hdr.attr_mod == 0);
            expect!(rej.remote_comm_id == 0x1122_3344);
            // cm.c's quirk: bytes 4-7 of the REQ (reserved + vendor ID, here 0).
            expect!(rej.local_comm_id == 0);
            expect!(rej.message_rejected == 0);
            expect!(rej.reason == 8);
            expect!(rej.ari_length == 0);
            expect!(rej.private_data.as_slice().iter().all(|b| *b == 0));
        }
        _ => fail!("a REJ"),
    }
}

/// Spare send buffers (`send_pool.rs`): a completed MAD's buffer goes back to its port's pool,
/// the next send to QP1 with P_Key index 0 takes it (the last one back, first), and its MAD is
/// cleared before the next message is encoded: a DREQ sent in a spare buffer whose MAD holds
/// garbage must go out with its empty private data all zeros.
extern "C" fn spare_send_buffers_are_reused_cleared(_test: *mut bindings::kunit) {
    use crate::logic::wire::{conn::Dreq, field::Bytes, MAD_HDR_LEN};
    let Some((_d0, d1, av)) = two_devices() else {
        return;
    };
    let Some(port) = d1.cm.port(1) else {
        fail!("rxe1 has a port 1");
        return;
    };
    // A REQ to no listener (answered with a REJ) leaves at least its buffer in the pool.
    let req = test_req(UNKNOWN_SID, 0x6677_0101, &av);
    expect!(exchange(&d1, &av, &CmMessage::Req(req), 0x0000_CAFE_0000_0031, 0x12).is_some());
    sleep_ms(200);
    let (spare, b) = {
        let pool = port.pool();
        let (n, b) = pool.peek();
        if !b.is_null() {
            // SAFETY: The pool's buffer, untouched by anyone else while its lock is held; its
            // MAD is 256 bytes.
            unsafe { core::ptr::write_bytes((*b).mad.cast::<u8>(), 0xFF, WIRE_MAD_LEN) };
        }
        (n, b)
    };
    expect!(spare >= 1 && !b.is_null());
    // Room for one more: a DREQ made in a new buffer would be kept too, and seen.
    expect!(spare < crate::tunables::send_pool_size());
    // A DREQ for no connection: rxe0 answers with a DREP (`cm_issue_drep`).
    let tid = 0x0000_CAFE_0000_0032u64;
    let dreq = CmMessage::Dreq(Dreq {
        local_comm_id: 0x6677_0102,
        remote_comm_id: 0x6677_0103,
        remote_qpn_eecn: 0x456,
        private_data: Bytes::EMPTY,
    });
    let mut out = [0u8; WIRE_MAD_LEN];
    let start = capture(u32::MAX, &mut out);
    expect!(exchange(&d1, &av, &dreq, tid, 0x16).is_some());
    let count = capture(u32::MAX, &mut out);
    let mut seen = false;
    for index in start..count {
        capture(index, &mut out);
        if out[8..16] == tid.to_be_bytes() && out[16..18] == [0x00, 0x15] {
            seen = true;
            expect!(out[MAD_HDR_LEN..MAD_HDR_LEN + 4] == 0x6677_0102u32.to_be_bytes());
            expect!(out[MAD_HDR_LEN + 12..].iter().all(|b| *b == 0));
        }
    }
    expect!(seen);
    // The DREQ went in that buffer, which is back on top once the send completed (well within
    // the DREP's round trip and the wait): a new buffer would be on top, one more spare.
    sleep_ms(200);
    expect!(port.pool().peek() == (spare, b));
}

extern "C" fn sidr_without_listener_gets_unsupported(_test: *mut bindings::kunit) {
    let Some((_d0, d1, av)) = two_devices() else {
        return;
    };
    let pd = [7; crate::logic::wire::sidr::SIDR_REQ_PRIVATE_DATA];
    let sidr = SidrReq {
        request_id: 0x0BAD_F00D,
        pkey: 0xFFFF,
        service_id: UNKNOWN_SID,
        private_data: crate::logic::wire::field::Bytes::new(&pd),
    };
    let mad = exchange(
        &d1,
        &av,
        &CmMessage::SidrReq(sidr),
        0x0000_CAFE_0000_0002,
        0x18,
    );
    expect!(mad.is_some());
    let Some(mad) = mad else { return };
    match decode_mad(&mad) {
        Ok((hdr, CmMessage::SidrRep(rep))) => {
            expect!(hdr.tid == 0x0000_CAFE_0000_0002);
            expect!(rep.request_id == 0x0BAD_F00D);
            expect!(rep.status == 1);
            expect!(rep.service_id == UNKNOWN_SID);
            expect!(rep.qpn == 0 && rep.qkey == 0 && rep.info_length == 0);
        }
        _ => fail!("a SIDR_REP"),
    }
}

/// Expects a REJ INVALID_SERVICE_ID for comm ID `comm` in `mad`.
fn expect_rej_unknown(mad: Option<[u8; WIRE_MAD_LEN]>, comm: u32) {
    match mad.as_ref().map(|m| decode_mad(m)) {
        Some(Ok((_, CmMessage::Rej(rej)))) => {
            expect!(rej.remote_comm_id == comm);
            expect!(rej.reason == 8);
        }
        _ => fail!("a REJ"),
    }
}

/// The cached reply handles of a device that are in use.
fn cached(dev: &CmDevice) -> KVec<usize> {
    let mut out = KVec::new();
    for a in dev.reply_ah_addresses().into_iter().filter(|a| *a != 0) {
        if out.push(a, GFP_KERNEL).is_err() {
            fail!("allocation");
        }
    }
    out
}

// Answers without an id reuse one address handle per sender for reply_ah::TTL_MS; with no
// traffic the sweep evicts it once the TTL has passed, and the next answer makes a new one.
extern "C" fn rejects_share_a_reply_ah(_test: *mut bindings::kunit) {
    let Some((d0, d1, av)) = two_devices() else {
        return;
    };
    d0.cm.clear_reply_ahs();
    let req = |comm| CmMessage::Req(test_req(UNKNOWN_SID, comm, &av));
    expect_rej_unknown(
        exchange(&d1, &av, &req(0x5151_0001), 0x0000_CAFE_0000_0011, 0x12),
        0x5151_0001,
    );
    let first = cached(&d0.cm);
    expect!(first.len() == 1);
    // The answer made the entry's handle, and the next answer reuses it.
    expect!(d0.cm.reply_ah_handles() == 1);
    expect_rej_unknown(
        exchange(&d1, &av, &req(0x5151_0002), 0x0000_CAFE_0000_0012, 0x12),
        0x5151_0002,
    );
    let second = cached(&d0.cm);
    expect!(second.len() == 1 && first.first() == second.first());
    expect!(d0.cm.reply_ah_handles() == 1);
    sleep_ms(crate::reply_ah::TTL_MS + 200);
    expect!(cached(&d0.cm).is_empty());
    expect_rej_unknown(
        exchange(&d1, &av, &req(0x5151_0003), 0x0000_CAFE_0000_0013, 0x12),
        0x5151_0003,
    );
    let third = cached(&d0.cm);
    expect!(third.len() == 1 && third.first() != first.first());
    d0.cm.clear_reply_ahs();
    expect!(cached(&d0.cm).is_empty());
}

// The debugfs `ids` walk finds every published id of its device, one at a time, and only
// those.
extern "C" fn debugfs_walk_finds_published_ids(_test: *mut bindings::kunit) {
    let Ok(dev) = fake_device() else {
        fail!("allocation");
        return;
    };
    let (Ok(a), Ok(b), Ok(hidden)) = (
        CmId::new(dev.clone(), Some(handler_a), core::ptr::null_mut(), true),
        CmId::new(dev.clone(), Some(handler_a), core::ptr::null_mut(), true),
        new_id(&dev, Some(handler_a)),
    ) else {
        fail!("allocation");
        return;
    };
    let (mut seen_a, mut seen_b, mut seen_hidden, mut n) = (false, false, false, 0);
    let mut index = 0u32;
    while let Some((id, at)) = crate::comm_id::next_of_device(index, &dev) {
        seen_a |= Arc::ptr_eq(&id, &a);
        seen_b |= Arc::ptr_eq(&id, &b);
        seen_hidden |= Arc::ptr_eq(&id, &hidden);
        expect!(core::ptr::eq::<CmDevice>(&*id.dev, &*dev));
        n += 1;
        match at.checked_add(1) {
            Some(i) => index = i,
            None => break,
        }
    }
    // Only this (fake) device's two published ids, though other devices' ids are live too.
    expect!(seen_a && seen_b && !seen_hidden);
    expect!(n == 2);
    destroy(&a);
    destroy(&b);
    destroy(&hidden);
}

static SEEN_EVENTS: AtomicU32 = AtomicU32::new(0);
static SEEN_QPN: AtomicU32 = AtomicU32::new(0);
static SEEN_PSN: AtomicU32 = AtomicU32::new(0);
static SEEN_STATE: AtomicU32 = AtomicU32::new(0);
static SEEN_SID: AtomicU64 = AtomicU64::new(0);
static SEEN_GUID: AtomicU64 = AtomicU64::new(0);
static SEEN_MISC: AtomicU64 = AtomicU64::new(0);
static SEEN_FLAGS: AtomicU32 = AtomicU32::new(0);

/// Records what a REQ event carries and refuses it with -EINVAL (the CM then sends REJ 28).
extern "C" fn recording_handler(
    id: *mut bindings::ib_cm_id,
    ev: *const bindings::ib_cm_event,
) -> ffi::c_int {
    // SAFETY: The CM passes a live id and event for the duration of the call.
    unsafe {
        if (*ev).event != bindings::ib_cm_event_type_IB_CM_REQ_RECEIVED {
            return -(bindings::EINVAL as i32);
        }
        let p = (*ev).param.req_rcvd.as_ref();
        SEEN_QPN.store(p.remote_qpn, Ordering::SeqCst);
        SEEN_PSN.store(p.starting_psn, Ordering::SeqCst);
        SEEN_STATE.store((*id).state, Ordering::SeqCst);
        SEEN_GUID.store(u64::from_be(p.remote_ca_guid), Ordering::SeqCst);
        SEEN_SID.store(u64::from_be((*p.primary_path).service_id), Ordering::SeqCst);
        let pd = (*ev).private_data.cast::<u8>();
        let misc = u64::from(p.responder_resources)
            | u64::from(p.initiator_depth) << 8
            | u64::from(p.local_cm_response_timeout()) << 16
            | u64::from(p.remote_cm_response_timeout()) << 24
            // Read with the C compiler's layout (see glue.c: bindgen misplaces these).
            | u64::from(bindings::ibcm_glue_test_req_event_retries(p) & 0xFF) << 32
            | u64::from(bindings::ibcm_glue_test_req_event_retries(p) >> 8) << 40
            | u64::from(*pd) << 48
            | u64::from(*pd.add(91)) << 56;
        SEEN_MISC.store(misc, Ordering::SeqCst);
        let flags = u32::from(u16::from_be((*p.primary_path).pkey) == 0xFFFF)
            | u32::from(p.bth_pkey == 0xFFFF) << 1
            | u32::from(!p.listen_id.is_null()) << 2
            | u32::from(!p.ppath_sgid_attr.is_null()) << 3
            | u32::from(p.alternate_path.is_null()) << 4
            | u32::from(p.port == 1) << 5;
        SEEN_FLAGS.store(flags, Ordering::SeqCst);
    }
    SEEN_EVENTS.fetch_add(1, Ordering::SeqCst);
    -(bindings::EINVAL as i32)
}

extern "C" fn req_with_listener_is_dispatched(_test: *mut bindings::kunit) {
    let Some((d0, d1, av)) = two_devices() else {
        return;
    };
    let listener = require!(insert_listen(
        &d0.cm,
        Some(recording_handler),
        LISTEN_SID,
        false
    ));
    d0.cm.clear_reply_ahs();
    SEEN_EVENTS.store(0, Ordering::SeqCst);
    let req = test_req(LISTEN_SID, 0x5566_7788, &av);
    let mad = exchange(&d1, &av, &CmMessage::Req(req), 0x0000_CAFE_0000_0003, 0x12);
    expect!(SEEN_EVENTS.load(Ordering::SeqCst) == 1);
    expect!(SEEN_STATE.load(Ordering::SeqCst) == bindings::ib_cm_state_IB_CM_REQ_RCVD);
    expect!(SEEN_SID.load(Ordering::SeqCst) == LISTEN_SID);
    expect!(SEEN_QPN.load(Ordering::SeqCst) == 0x456);
    expect!(SEEN_PSN.load(Ordering::SeqCst) == 0x12_3456);
    expect!(SEEN_GUID.load(Ordering::SeqCst) == 0x0002_C903_00AB_CDEF);
    // Swapped depth/resources and timeouts; private data bytes 0 and 91.
    let misc = SEEN_MISC.load(Ordering::SeqCst);
    expect!(misc & 0xFF == 3 && (misc >> 8) & 0xFF == 2);
    expect!((misc >> 16) & 0xFF == 20 && (misc >> 24) & 0xFF == 18);
    expect!((misc >> 32) & 0xFF == 7 && (misc >> 40) & 0xFF == 6);
    expect!((misc >> 48) & 0xFF == 0xA0 && (misc >> 56) == 0xA0 ^ 91);
    // P_Key of the path and of the BTH, listen_id, sgid attribute, no alternate, port 1.
    expect!(SEEN_FLAGS.load(Ordering::SeqCst) == 0b11_1111);
    expect!(mad.is_some());
    if let Some(mad) = mad {
        match decode_mad(&mad) {
            Ok((_, CmMessage::Rej(rej))) => {
                expect!(rej.reason == 28);
                expect!(rej.local_comm_id == 0 && rej.remote_comm_id == 0x5566_7788);
            }
            _ => fail!("a REJ"),
        }
    }
    // A second REQ from the same sender: the new id's address is a copy of the one the
    // device cached for the first (no second resolution), and the event is filled alike.
    let first = cached(&d0.cm);
    expect!(first.len() == 1);
    // The id answered with its own address: the cached entry made no handle.
    expect!(d0.cm.reply_ah_handles() == 0);
    SEEN_FLAGS.store(0, Ordering::SeqCst);
    let req = test_req(LISTEN_SID, 0x5566_7799, &av);
    let mad = exchange(&d1, &av, &CmMessage::Req(req), 0x0000_CAFE_0000_0004, 0x12);
    expect!(mad.is_some());
    expect!(SEEN_EVENTS.load(Ordering::SeqCst) == 2);
    expect!(SEEN_FLAGS.load(Ordering::SeqCst) == 0b11_1111);
    let second = cached(&d0.cm);
    expect!(second.len() == 1 && second.first() == first.first());
    expect!(destroy(&listener));
}

/// An event made from a received MAD points into that MAD and holds it: queued behind the
/// event being delivered, it still reads the MAD's fields (private data, REJ ARI, APR and
/// SIDR_REP information) and its own path record (LAP) after the receive work dropped its
/// reference, and the MAD is freed once, with the last event that holds it. The stand-in
/// completion counts its release (`recv_wc::RELEASED`); KASAN reports a read of a freed MAD or
/// a second free, and kmemleak a MAD never freed.
extern "C" fn queued_event_holds_its_mad(_test: *mut bindings::kunit) {
    use crate::event::{Event, EventQueue};
    use crate::logic::wire::{MAD_HDR_LEN, MAD_LEN};
    use crate::recv_wc::{RecvWork, RELEASED};
    let mut bytes = [0u8; MAD_LEN];
    for (i, b) in bytes.iter_mut().enumerate() {
        // CAST: a byte pattern.
        *b = (i as u8) ^ 0x5A;
    }
    let at = |payload: usize| (MAD_HDR_LEN + payload) as u8 ^ 0x5A;
    let released = || RELEASED.load(Ordering::SeqCst);
    let before = released();
    let wc = require!(RecvWork::stand_in(&bytes));
    let mut q = EventQueue::default();
    // The event being delivered: the others queue behind it.
    q.push(require!(Event::empty()));
    // (event type, private data offset, offset of the type's second pointer)
    let kinds = [
        (
            bindings::ib_cm_event_type_IB_CM_REJ_RECEIVED,
            84usize,
            Some(12usize),
        ),
        (bindings::ib_cm_event_type_IB_CM_APR_RECEIVED, 84, Some(12)),
        (
            bindings::ib_cm_event_type_IB_CM_SIDR_REP_RECEIVED,
            96,
            Some(24),
        ),
        (bindings::ib_cm_event_type_IB_CM_RTU_RECEIVED, 8, None),
        (bindings::ib_cm_event_type_IB_CM_LAP_RECEIVED, 64, None),
    ];
    for (kind, pd, second) in kinds {
        let lap = kind == bindings::ib_cm_event_type_IB_CM_LAP_RECEIVED;
        let mut ev = require!(Event::with_paths(kind, &wc, usize::from(lap)));
        ev.set_private_data(pd);
        expect!(ev.ev.private_data.cast_const() == wc.mad()[MAD_HDR_LEN + pd..].as_ptr().cast());
        if let Some(off) = second {
            let p = ev.payload_ptr(off);
            // SAFETY: Each member is written for the event type that uses it.
            unsafe {
                match kind {
                    bindings::ib_cm_event_type_IB_CM_REJ_RECEIVED => {
                        ev.ev.param.rej_rcvd.as_mut().ari = p
                    }
                    bindings::ib_cm_event_type_IB_CM_APR_RECEIVED => {
                        ev.ev.param.apr_rcvd.as_mut().apr_info = p
                    }
                    _ => ev.ev.param.sidr_rep_rcvd.as_mut().info = p,
                }
            }
        }
        expect!(ev.paths().len() == usize::from(lap));
        if lap {
            // A marker that must survive the queue (the record is zeroed only once).
            ev.paths()[0].service_id = 0x5A5A_5A5A_5A5A_5A5A;
            let path: *mut bindings::sa_path_rec = &mut ev.paths()[0];
            // SAFETY: The LAP event's member; the record is the event's own.
            unsafe { ev.ev.param.lap_rcvd.as_mut().alternate_path = path };
        }
        q.push(ev);
    }
    // A short MAD is refused; past the end of a whole one there is nothing to point at.
    let short = require!(RecvWork::stand_in(&bytes[..MAD_HDR_LEN + 4]));
    expect!(Event::for_wc(0, &short).is_err());
    drop(short);
    let mut whole = require!(Event::for_wc(0, &wc));
    let last = MAD_LEN - MAD_HDR_LEN;
    expect!(whole.payload_ptr(last).is_null() && !whole.payload_ptr(last - 1).is_null());
    drop(whole);
    expect!(released() == before + 1);
    // The receive work is done with the MAD; the queued events still hold it.
    drop(wc);
    expect!(released() == before + 1);
    let Some(mut first) = q.pop() else {
        fail!("the first event went missing");
        return;
    };
    expect!(first.ev.private_data.is_null() && first.paths().is_empty());
    drop(first);
    for (i, (kind, pd, second)) in kinds.into_iter().enumerate() {
        let Some(mut ev) = q.pop() else {
            fail!("an event went missing");
            return;
        };
        expect!(ev.ev.event == kind);
        let p = ev.ev.private_data.cast_const();
        // SAFETY: `p` points into the MAD the event holds (KASAN reports it freed otherwise).
        expect!(!p.is_null() && unsafe { *p.cast::<u8>() } == at(pd));
        let q2 = match kind {
            // SAFETY: Read as the member its event type uses.
            bindings::ib_cm_event_type_IB_CM_REJ_RECEIVED => unsafe {
                ev.ev.param.rej_rcvd.as_ref().ari.cast_const()
            },
            // SAFETY: As above.
            bindings::ib_cm_event_type_IB_CM_APR_RECEIVED => unsafe {
                ev.ev.param.apr_rcvd.as_ref().apr_info.cast_const()
            },
            // SAFETY: As above.
            bindings::ib_cm_event_type_IB_CM_SIDR_REP_RECEIVED => unsafe {
                ev.ev.param.sidr_rep_rcvd.as_ref().info.cast_const()
            },
            bindings::ib_cm_event_type_IB_CM_LAP_RECEIVED => {
                // SAFETY: As above; the path pointer points into the event.
                let path = unsafe { ev.ev.param.lap_rcvd.as_ref().alternate_path.cast_const() };
                expect!(path == core::ptr::from_ref(&ev.paths()[0]));
                // SAFETY: `path` is the event's own record (checked just above).
                let marker = unsafe { (*path).service_id };
                expect!(marker == 0x5A5A_5A5A_5A5A_5A5A);
                core::ptr::null()
            }
            _ => core::ptr::null(),
        };
        if let Some(off) = second {
            // SAFETY: As for `p`.
            expect!(!q2.is_null() && unsafe { *q2.cast::<u8>() } == at(off));
        }
        drop(ev);
        // Freed with the last event that holds it, not before.
        let last = i + 1 == kinds.len();
        expect!(released() == before + 1 + usize::from(last));
    }
    expect!(q.pop().is_none());
}

/// The slab size class of an event about the received MAD `wc` carrying `paths` path records
/// (REQ: one or two, LAP: one, every other message none), and the bytes it asks for.
fn received_event_size(wc: &crate::recv_wc::RecvWc, paths: usize) -> Result<(usize, usize)> {
    use crate::event::Event;
    let ev = Event::with_paths(0, wc, paths)?;
    // SAFETY: A live kmalloc allocation; `ksize()` reads slab metadata.
    let class = unsafe { bindings::ksize(core::ptr::from_ref(&*ev).cast()) };
    Ok((class, Event::size_with(paths)))
}

/// A received MAD reaching a handler costs no more than cm.c's `cm_work` for it
/// (`sizeof(struct cm_work)` plus its path records, x86_64: 224, 312 and 400 bytes, in
/// kmalloc-256, -512 and -512): a plain event, a REQ or LAP event with one path record, a REQ
/// event with an alternate path. Each must ask for fewer bytes than cm.c's and land in the
/// expected slab class.
extern "C" fn received_event_sizes(_test: *mut bindings::kunit) {
    use crate::logic::wire::MAD_LEN;
    let wc = require!(crate::recv_wc::RecvWork::stand_in(&[0u8; MAD_LEN]));
    // (path records, slab class, cm.c's bytes)
    for (paths, class, cm_c) in [(0usize, 128usize, 224usize), (1, 256, 312), (2, 512, 400)] {
        let (got, bytes) = require!(received_event_size(&wc, paths));
        if got != class || bytes >= cm_c {
            pr_err!("event with {paths} path(s): {bytes} bytes in kmalloc-{got}, want < {cm_c} in kmalloc-{class}\n");
        }
        expect!(got == class);
        expect!(bytes < cm_c);
    }
}

/// `error::is_err_or_null` restates `IS_ERR_OR_NULL()`: NULL and the top `MAX_ERRNO` (4095)
/// addresses are errors, nothing else is.
extern "C" fn is_err_or_null_as_c(_test: *mut bindings::kunit) {
    use crate::error::is_err_or_null;
    // CAST: pointer values built from integers, only compared.
    let p = |v: isize| v as usize as *const u8;
    expect!(is_err_or_null(p(0)));
    expect!(is_err_or_null(p(-1)));
    expect!(is_err_or_null(p(-(bindings::EINVAL as isize))));
    expect!(is_err_or_null(p(-4095)));
    expect!(!is_err_or_null(p(-4096)));
    expect!(!is_err_or_null(p(1)));
    let x = 0u8;
    expect!(!is_err_or_null(&x));
}

/// `alloc::Kmem` hands out kmalloc memory, 8-aligned, for its own flags and for the ones it passes
/// on to the kernel crate's allocator (here `__GFP_ZERO`, which must zero), and frees both with
/// `kfree()` (kmemleak's scans after the suite would report a box that was not freed); a
/// zero-sized box allocates nothing.
extern "C" fn cm_box_is_kmalloc_memory(_test: *mut bindings::kunit) {
    use crate::alloc::CmBox;
    use kernel::alloc::flags::{__GFP_ZERO, GFP_ATOMIC, GFP_KERNEL};
    let kmalloced = |p: *const u8, size: usize| {
        // CAST: an address, only tested for alignment.
        let aligned = (p as usize) % 8 == 0;
        // SAFETY: `p` is a live allocation of a box below; `ksize()` reads slab metadata.
        aligned && unsafe { bindings::ksize(p.cast()) } >= size
    };
    let a = require!(CmBox::new(0x1234_5678_9abc_def0u64, GFP_KERNEL));
    expect!(*a == 0x1234_5678_9abc_def0);
    expect!(kmalloced(core::ptr::from_ref(&*a).cast(), 8));
    let b = require!(CmBox::new([0x5au8; 300], GFP_ATOMIC));
    expect!(b.iter().all(|&x| x == 0x5a));
    expect!(kmalloced(b.as_ptr(), 300));
    let z = require!(CmBox::<[u8; 200]>::new_uninit(GFP_KERNEL | __GFP_ZERO));
    // SAFETY: `__GFP_ZERO` zeroed it, and all-zero is a valid byte array.
    let z = unsafe { z.assume_init() };
    expect!(z.iter().all(|&x| x == 0));
    expect!(kmalloced(z.as_ptr(), 200));
    let unit = require!(CmBox::new((), GFP_KERNEL));
    // CAST: an address, compared with the dangling one of a zero-sized type (its alignment).
    expect!(core::ptr::from_ref(&*unit) as usize == core::mem::align_of::<()>());
    drop((a, b, z, unit));
}

/// `const`-builds a KUnit case.
const fn case(
    name: &'static core::ffi::CStr,
    run: extern "C" fn(*mut bindings::kunit),
) -> bindings::kunit_case {
    // SAFETY: All-zero is a valid `kunit_case` (NULL pointers, no attributes, status 0).
    let mut c: bindings::kunit_case = unsafe { core::mem::zeroed() };
    c.run_case = Some(run);
    c.name = name.as_ptr().cast();
    c
}

/// `const`-builds a suite named `name` over `cases`.
const fn suite(name: &[u8], cases: *mut bindings::kunit_case) -> bindings::kunit_suite {
    // SAFETY: All-zero is a valid `kunit_suite`.
    let mut s: bindings::kunit_suite = unsafe { core::mem::zeroed() };
    let mut i = 0;
    while i < name.len() && i < s.name.len() - 1 {
        // CAST: ASCII bytes into a `char` array.
        s.name[i] = name[i] as ffi::c_char;
        i += 1;
    }
    s.test_cases = cases;
    s
}

// KUnit writes run status into the cases and the suite, hence `static mut`; nothing in Rust
// touches them after initialisation.
static mut CASES: [bindings::kunit_case; 22] = [
    case(c"tree_share_and_release", tree_share_and_release),
    case(c"conn_tables_vacancy_hint", conn_tables_vacancy_hint),
    case(c"listen_never_shares", listen_never_shares),
    case(c"assign_allocator", assign_allocator),
    case(c"destroy_waits_for_handlers", destroy_waits_for_handlers),
    case(
        c"destroy_wait_reports_over_budget",
        destroy_wait_reports_over_budget,
    ),
    case(
        c"timewait_expiry_races_destroy",
        timewait_expiry_races_destroy,
    ),
    case(
        c"req_without_listener_gets_rej",
        req_without_listener_gets_rej,
    ),
    case(
        c"sidr_without_listener_gets_unsupported",
        sidr_without_listener_gets_unsupported,
    ),
    case(
        c"req_with_listener_is_dispatched",
        req_with_listener_is_dispatched,
    ),
    case(c"rejects_share_a_reply_ah", rejects_share_a_reply_ah),
    case(
        c"debugfs_walk_finds_published_ids",
        debugfs_walk_finds_published_ids,
    ),
    case(c"queued_event_holds_its_mad", queued_event_holds_its_mad),
    case(c"received_event_sizes", received_event_sizes),
    case(
        c"dup_req_gets_mra_with_the_ids_tid",
        dup_req_gets_mra_with_the_ids_tid,
    ),
    case(c"is_err_or_null_as_c", is_err_or_null_as_c),
    case(c"cm_box_is_kmalloc_memory", cm_box_is_kmalloc_memory),
    case(
        c"own_events_survive_alloc_failure",
        own_events_survive_alloc_failure,
    ),
    case(
        c"send_after_removal_gets_einval",
        send_after_removal_gets_einval,
    ),
    case(
        c"pending_event_boxed_only_to_queue",
        pending_event_boxed_only_to_queue,
    ),
    case(
        c"spare_send_buffers_are_reused_cleared",
        spare_send_buffers_are_reused_cleared,
    ),
    // SAFETY: The zeroed terminator KUnit looks for.
    unsafe { core::mem::zeroed() },
];

static mut SUITE: bindings::kunit_suite =
    suite(b"ib_cm_rs_whitebox", core::ptr::addr_of_mut!(CASES).cast());

/// The section entry KUnit's module notifier looks for.
#[repr(transparent)]
struct SuitePtr(*mut bindings::kunit_suite);
// SAFETY: The pointer is only read by KUnit, which serialises suite execution.
unsafe impl Sync for SuitePtr {}

/// Test builds: how many connection address handles the ids of `device` hold (its debugfs
/// `conn_ahs` file's `held`), or `-ENODEV` if the CM does not manage it. Exported for the
/// conformance suite, which takes it with `symbol_get()` (the C CM has no such symbol).
///
/// # Safety
///
/// `device` must point to a live `struct ib_device`.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_test_conn_ahs_held(
    device: *mut bindings::ib_device,
) -> ffi::c_long {
    // SAFETY: The caller holds `device`.
    match unsafe { CmDevice::get_any(device) } {
        // CAST: a count of handles and an errno fit in a long.
        Ok(dev) => dev.conn_ahs().stats().held as ffi::c_long,
        Err(e) => e.to_errno() as ffi::c_long,
    }
}

#[used]
#[link_section = ".kunit_test_suites"]
static SUITE_ENTRY: SuitePtr = SuitePtr(core::ptr::addr_of_mut!(SUITE));
