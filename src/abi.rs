// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The exported `extern "C"` entry points of ib_cm, with the prototypes of the target
//! kernel's `<rdma/ib_cm.h>` (the `EXPORT_SYMBOL` lines are in `glue.c`).
//!
//! Each function checks its C arguments, calls safe Rust, and converts the result to the
//! errno or `ERR_PTR` cm.c gives. Nothing here decides anything.

use crate::{
    bindings,
    cm_id::CmId,
    device::CmDevice,
    listen::{InsertError, ListenReservation},
    logic::{
        reject,
        req_event::SidrReply,
        wire::conn::{REJ_ARI, REJ_PRIVATE_DATA},
        wire::sidr::{SIDR_REP_INFO, SIDR_REP_PRIVATE_DATA},
        service_id::{listen_target, Collision, ListenTarget, ServiceId, ServiceIdError},
    },
};
use kernel::{
    error::code::{EBUSY, EINVAL, ENOSPC},
    ffi,
    prelude::*,
};

/// The errno of a failed listen insert, as cm.c gives it (allocator exhaustion is ours).
pub(crate) fn listen_errno(e: InsertError) -> Error {
    match e {
        InsertError::Collision(Collision::Busy) => EBUSY,
        InsertError::Collision(_) => EINVAL,
        InsertError::ServiceId(ServiceIdError::Reserved) => EINVAL,
        InsertError::ServiceId(ServiceIdError::Exhausted) => ENOSPC,
    }
}

/// Encodes a result as `0` or a negative errno.
fn errno(result: Result) -> ffi::c_int {
    match result {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Encodes a result as the `ERR_PTR` convention.
fn to_err_ptr(result: Result<*mut bindings::ib_cm_id>) -> *mut bindings::ib_cm_id {
    match result {
        Ok(ptr) => ptr,
        // CAST: ERR_PTR(): a negative errno stored in a pointer, as the C API returns it.
        Err(e) => e.to_errno() as isize as *mut bindings::ib_cm_id,
    }
}

/// Whether a pointer a C caller passed (or a C function returned) is NULL or an `ERR_PTR`.
pub(crate) fn is_err_or_null<T>(ptr: *const T) -> bool {
    // SAFETY: Only the pointer value is inspected.
    unsafe { bindings::ibcm_glue_is_err_or_null(ptr.cast()) }
}

/// The error an ib_core function returned as a pointer (`PTR_ERR`), `if_null` for NULL, or
/// `None` for a valid pointer: the inverse of [`to_err_ptr`].
pub(crate) fn ptr_error<T>(ptr: *const T, if_null: Error) -> Option<Error> {
    if !is_err_or_null(ptr) {
        return None;
    }
    // CAST: an ERR_PTR carries a negative errno in the pointer value.
    let e = ptr as isize as i32;
    Some(if e < 0 { Error::from_errno(e) } else { if_null })
}

/// Validates a listen request's service ID (`cm_init_listen`).
fn parse_service_id(raw: bindings::__be64) -> Result<(ServiceId, bool)> {
    match listen_target(ServiceId::from_be(raw)) {
        Ok(ListenTarget::Assign) => Ok((ServiceId::new(0), true)),
        Ok(ListenTarget::Fixed(sid)) => Ok((sid, false)),
        Err(e) => Err(listen_errno(InsertError::ServiceId(e))),
    }
}

/// `ibcm_reject_msg()`: the name of a REJ reason.
#[no_mangle]
pub(crate) extern "C" fn ibcm_reject_msg(reason: ffi::c_int) -> *const ffi::c_char {
    reject::reason_str(reason).as_ptr().cast()
}

/// `ib_create_cm_id()`: a new IDLE id on `device`.
///
/// Divergence from cm.c (documented in the README): a NULL device or handler gives
/// `-EINVAL`, and a device the CM does not manage gives `-ENODEV`, where C accepts anything.
///
/// # Safety
///
/// `device`, if not NULL, must point to a live `struct ib_device`.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_create_cm_id(
    device: *mut bindings::ib_device,
    cm_handler: bindings::ib_cm_handler,
    context: *mut ffi::c_void,
) -> *mut bindings::ib_cm_id {
    to_err_ptr((|| {
        if is_err_or_null(device) || cm_handler.is_none() {
            return Err(EINVAL);
        }
        // SAFETY: `device` is live (caller contract) and not NULL.
        let dev = unsafe { CmDevice::get(device) }?;
        Ok(CmId::into_raw(CmId::new(dev, cm_handler, context)?))
    })())
}

/// `ib_destroy_cm_id()`: releases one handle of `cm_id` (see [`CmId::destroy`]).
///
/// # Safety
///
/// `cm_id` must be a handle from this CM that the caller has not destroyed yet.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_destroy_cm_id(cm_id: *mut bindings::ib_cm_id) {
    if is_err_or_null(cm_id) {
        pr_err!("ib_cm: ib_destroy_cm_id() of a NULL or error pointer\n");
        return;
    }
    // SAFETY: The caller hands back the reference this handle carries.
    let id = unsafe { CmId::from_raw(cm_id) };
    if !id.destroy_with(0) {
        // Destroyed more often than created or shared: the reference we were handed is not
        // the caller's to give, so dropping it could free memory another holder still uses.
        pr_err!("ib_cm: ib_destroy_cm_id() on an id that is already destroyed\n");
        core::mem::forget(id);
    }
}

/// `ib_cm_listen()`: makes an IDLE id listen on `service_id`; never shares.
///
/// # Safety
///
/// `cm_id` must be a live handle from this CM.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_cm_listen(
    cm_id: *mut bindings::ib_cm_id,
    service_id: bindings::__be64,
) -> ffi::c_int {
    if is_err_or_null(cm_id) {
        return EINVAL.to_errno();
    }
    // SAFETY: `cm_id` is a live handle (caller contract).
    let id = unsafe { CmId::borrow(cm_id) };
    let result = (|| {
        let (sid, assign) = parse_service_id(service_id)?;
        // May be called in atomic context (spec section 1): reserve with GFP_ATOMIC, before
        // any lock is taken.
        let reservation = ListenReservation::new(GFP_ATOMIC)?;
        let arc: kernel::sync::Arc<CmId> = id.into();
        arc.listen(sid, assign, None, reservation).map(|_| ())
    })();
    errno(result)
}

/// `ib_cm_insert_listen()`: a new listener on (`device`, `service_id`), or the existing one
/// if it has the same handler and a NULL context.
///
/// # Safety
///
/// `device`, if not NULL, must point to a live `struct ib_device`.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_cm_insert_listen(
    device: *mut bindings::ib_device,
    cm_handler: bindings::ib_cm_handler,
    service_id: bindings::__be64,
) -> *mut bindings::ib_cm_id {
    to_err_ptr((|| {
        if is_err_or_null(device) || cm_handler.is_none() {
            return Err(EINVAL);
        }
        // SAFETY: `device` is live (caller contract) and not NULL.
        let dev = unsafe { CmDevice::get(device) }?;
        // Everything that may sleep or fail happens before the locks: the fresh id and the
        // tree node. Both are dropped (freed) when they end up unused, on every path.
        let fresh = CmId::new(dev, cm_handler, core::ptr::null_mut())?;
        let (sid, assign) = parse_service_id(service_id)?;
        let reservation = ListenReservation::new(GFP_KERNEL)?;
        let listener = fresh.listen(sid, assign, fresh.handler_addr(), reservation)?;
        Ok(CmId::into_raw(listener))
    })())
}

/// Borrows `len` bytes at `ptr` from a C caller; `max` is the field's size (larger is
/// `-EINVAL`, as cm.c checks `*_PRIVATE_DATA_SIZE` and the ARI/info lengths).
///
/// # Safety
///
/// If `len` is non-zero and `ptr` non-NULL, `ptr` must be valid for `len` bytes for `'a`.
unsafe fn c_bytes<'a>(ptr: *const ffi::c_void, len: u8, max: usize) -> Result<&'a [u8]> {
    let len = usize::from(len);
    if len > max {
        return Err(EINVAL);
    }
    if len == 0 || ptr.is_null() {
        return Ok(&[]);
    }
    // SAFETY: Caller contract.
    Ok(unsafe { core::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

/// `ib_send_cm_rej()`: rejects the REQ a passive id holds (REQ_RCVD or MRA_REQ_SENT; the
/// other states of cm.c come with the connection state machine).
///
/// # Safety
///
/// `cm_id` must be a live handle from this CM; `ari`/`private_data` valid for their lengths.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_send_cm_rej(
    cm_id: *mut bindings::ib_cm_id,
    reason: bindings::ib_cm_rej_reason,
    ari: *mut ffi::c_void,
    ari_length: u8,
    private_data: *const ffi::c_void,
    private_data_len: u8,
) -> ffi::c_int {
    if is_err_or_null(cm_id) {
        return EINVAL.to_errno();
    }
    let result = (|| {
        // SAFETY: Caller contract.
        let ari = unsafe { c_bytes(ari, ari_length, REJ_ARI) }?;
        // SAFETY: Caller contract.
        let pd = unsafe {
            c_bytes(private_data, private_data_len, REJ_PRIVATE_DATA)
        }?;
        // SAFETY: `cm_id` is a live handle (caller contract).
        let id = unsafe { CmId::borrow(cm_id) };
        id.reject(u16::try_from(reason).map_err(|_| EINVAL)?, ari, pd)
    })();
    errno(result)
}

/// `ib_send_cm_sidr_rep()`: answers the SIDR_REQ a passive id holds.
///
/// # Safety
///
/// `cm_id` must be a live handle from this CM; `param` and its buffers valid.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_send_cm_sidr_rep(
    cm_id: *mut bindings::ib_cm_id,
    param: *mut bindings::ib_cm_sidr_rep_param,
) -> ffi::c_int {
    if is_err_or_null(cm_id) || is_err_or_null(param) {
        return EINVAL.to_errno();
    }
    let result = (|| {
        // SAFETY: `param` is valid (caller contract).
        let p = unsafe { &*param };
        // SAFETY: Caller contract for the buffers.
        let info = unsafe {
            c_bytes(p.info, p.info_length, SIDR_REP_INFO)
        }?;
        // SAFETY: Caller contract for the buffers.
        let pd = unsafe {
            c_bytes(
                p.private_data,
                p.private_data_len,
                SIDR_REP_PRIVATE_DATA,
            )
        }?;
        // SAFETY: `cm_id` is a live handle (caller contract).
        let id = unsafe { CmId::borrow(cm_id) };
        let reply = SidrReply {
            request_id: 0,
            status: u8::try_from(p.status).map_err(|_| EINVAL)?,
            qpn: p.qp_num,
            qkey: p.qkey,
            service_id: 0,
            vendor_id: p.ece.vendor_id,
            info,
            private_data: pd,
        };
        id.sidr_reply(&reply, p.ece.attr_mod)
    })();
    errno(result)
}

macro_rules! not_implemented {
    ($(#[$doc:meta] fn $name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        #[$doc]
        ///
        /// Not implemented yet (see the README's status table): returns `-EOPNOTSUPP` so that
        /// modules linking against ib_cm load, and any caller sees a clean failure.
        #[no_mangle]
        pub(crate) extern "C" fn $name($(_: $ty),*) -> ffi::c_int {
            crate::device::eopnotsupp().to_errno()
        }
    )*};
}

not_implemented! {
    /// `ib_send_cm_req()`.
    fn ib_send_cm_req(id: *mut bindings::ib_cm_id, p: *mut bindings::ib_cm_req_param);
    /// `ib_send_cm_rep()`.
    fn ib_send_cm_rep(id: *mut bindings::ib_cm_id, p: *mut bindings::ib_cm_rep_param);
    /// `ib_send_cm_rtu()`.
    fn ib_send_cm_rtu(id: *mut bindings::ib_cm_id, pd: *const ffi::c_void, len: u8);
    /// `ib_send_cm_dreq()`.
    fn ib_send_cm_dreq(id: *mut bindings::ib_cm_id, pd: *const ffi::c_void, len: u8);
    /// `ib_send_cm_drep()`.
    fn ib_send_cm_drep(id: *mut bindings::ib_cm_id, pd: *const ffi::c_void, len: u8);
    /// `ib_send_cm_mra()`.
    fn ib_send_cm_mra(
        id: *mut bindings::ib_cm_id,
        timeout: u8,
        pd: *const ffi::c_void,
        len: u8
    );
    /// `ib_send_cm_sidr_req()`.
    fn ib_send_cm_sidr_req(id: *mut bindings::ib_cm_id, p: *mut bindings::ib_cm_sidr_req_param);
    /// `ib_cm_notify()`.
    fn ib_cm_notify(id: *mut bindings::ib_cm_id, event: bindings::ib_event_type);
    /// `ib_cm_init_qp_attr()`.
    fn ib_cm_init_qp_attr(
        id: *mut bindings::ib_cm_id,
        attr: *mut bindings::ib_qp_attr,
        mask: *mut ffi::c_int
    );
}
