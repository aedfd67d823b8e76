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
    cm_id::CmId,
    device::CmDevice,
    listen::ListenReservation,
    logic::service_id::{AssignAllocator, ServiceId, ASSIGN, ASSIGN_LAST},
};
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{ffi, prelude::*, sync::Arc};

/// Marks the current case failed if `$cond` is false, and goes on.
macro_rules! expect {
    ($cond:expr) => {
        if !$cond {
            // SAFETY: All three are NUL-terminated static strings.
            unsafe {
                bindings::ibcm_glue_kunit_fail(
                    concat!(file!(), "\0").as_ptr().cast(),
                    // CAST: line numbers fit in an int.
                    line!() as ffi::c_int,
                    concat!(stringify!($cond), "\0").as_ptr().cast(),
                )
            };
        }
    };
}

/// Like `?` for test set-up: on error, fail the case and return.
macro_rules! require {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(_) => {
                expect!(false && stringify!($e).is_empty());
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

/// Records a MAD the CM sends, for the receive-path tests.
pub(crate) fn capture(mad: &[u8; crate::logic::wire::MAD_LEN]) {
    // SAFETY: `mad` is 256 readable bytes.
    unsafe { bindings::ibcm_glue_capture_put(mad.as_ptr()) };
}

/// A device-less CM state: the listener tree and allocator without an HCA.
fn fake_device() -> Result<Arc<CmDevice>> {
    CmDevice::new(core::ptr::null_mut(), kernel::alloc::KVec::new())
}

fn new_id(dev: &Arc<CmDevice>, h: bindings::ib_cm_handler) -> Result<Arc<CmId>> {
    CmId::new(dev.clone(), h, core::ptr::null_mut())
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
    expect!(b.destroy());
    expect!(dev.inner.lock().listen.share_count(ServiceId::new(SID)) == Some(1));
    expect!(a.state() == bindings::ib_cm_state_IB_CM_LISTEN);
    expect!(a.destroy());
    expect!(dev
        .inner
        .lock()
        .listen
        .share_count(ServiceId::new(SID))
        .is_none());
    expect!(a.state() == bindings::ib_cm_state_IB_CM_IDLE);
    expect!(a.is_destroyed());
    // A destroy beyond the shares handed out is detected, not applied.
    expect!(!a.destroy());
    expect!(c.destroy());
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
    expect!(a.destroy());
    expect!(id.destroy());
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
    expect!(first.destroy() && second.destroy() && third.destroy());

    // Near the end of the range: the last ID, then an error, never a wrap.
    let end = require!(fake_device());
    end.inner
        .lock()
        .listen
        .set_allocator(AssignAllocator::starting_at(ASSIGN_LAST));
    let last = require!(insert_listen(&end, Some(handler_a), 0, true));
    expect!(last.service_id() == ASSIGN_LAST);
    expect!(insert_listen(&end, Some(handler_a), 0, true).err() == Some(ENOSPC));
    expect!(last.destroy());
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
        // SAFETY: Plain sleep in process context.
        unsafe { bindings::msleep(200) };
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
    expect!(l.destroy());
    expect!(PIN_RELEASED.load(Ordering::SeqCst));
    expect!(l.users() == 0);
    expect!(dev.inner.lock().listen.find(ServiceId::new(SID)).is_none());
}

/// Memory one listener costs: the `Arc<CmId>` allocation plus its tree node, each rounded up to
/// its kmalloc bucket. Printed for the comparison with C's `cm_id_private` (measured with
/// `ksize()` by the conformance suite); the bound keeps the tree node from growing into a
/// second copy of the id.
extern "C" fn listener_footprint(_test: *mut bindings::kunit) {
    use core::mem::size_of;
    // `ArcInner<T>` is `#[repr(C)] { refcount_t, T }`.
    let id_bytes = size_of::<bindings::refcount_t>().next_multiple_of(8) + size_of::<CmId>();
    // `rbtree::Node<K, V>` is `{ rb_node, K, V }`.
    let node_bytes = size_of::<bindings::rb_node>()
        + size_of::<ServiceId>()
        + size_of::<crate::listen::ListenEntry>();
    // SAFETY: Pure size computation.
    let (id_alloc, node_alloc) = unsafe {
        (bindings::kmalloc_size_roundup(id_bytes), bindings::kmalloc_size_roundup(node_bytes))
    };
    pr_info!(
        "ib_cm-rs: listener footprint: id {id_bytes} B (slab {id_alloc} B) + tree node {node_bytes} B (slab {node_alloc} B) = {} B\n",
        id_alloc + node_alloc
    );
    expect!(size_of::<crate::listen::ListenEntry>() <= 16);
    expect!(id_alloc >= id_bytes && node_alloc >= node_bytes);
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
static mut CASES: [bindings::kunit_case; 6] = [
    case(c"tree_share_and_release", tree_share_and_release),
    case(c"listen_never_shares", listen_never_shares),
    case(c"assign_allocator", assign_allocator),
    case(c"destroy_waits_for_handlers", destroy_waits_for_handlers),
    case(c"listener_footprint", listener_footprint),
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

#[used]
#[link_section = ".kunit_test_suites"]
static SUITE_ENTRY: SuitePtr = SuitePtr(core::ptr::addr_of_mut!(SUITE));
