// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The Rust halves of the 16 exported entry points of ib_cm, with the prototypes of the
//! target kernel's `<rdma/ib_cm.h>`: `glue.c` defines each `ib_*` symbol as a one-line C
//! wrapper calling its `ibcm_rs_*` function here and exports it, so that the exported
//! functions are ordinary C functions (ftrace can profile them, tracepoints can sit in them).
//!
//! Each function checks its C arguments, calls safe Rust, and converts the result to the
//! errno or `ERR_PTR` cm.c gives. Nothing here decides anything.

use crate::{
    av::SgidAttr,
    bindings,
    cm_id::{CmDevice, CmId},
    conn,
    error::is_err_or_null,
    listen::{listen_errno, InsertError, ListenReservation},
    logic::{
        reject,
        req_event::SidrReply,
        service_id::{listen_target, ListenTarget, ServiceId},
        wire::conn::{REJ_ARI, REJ_PRIVATE_DATA, REP_PRIVATE_DATA, REQ_PRIVATE_DATA},
        wire::sidr::{SIDR_REP_INFO, SIDR_REP_PRIVATE_DATA, SIDR_REQ_PRIVATE_DATA},
    },
};
use core::mem::ManuallyDrop;
use kernel::{error::code::EINVAL, ffi, prelude::*, sync::Arc};

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

/// Borrows `len` bytes at `ptr` from a C caller; `max` is the field's size. As cm.c, the size
/// is checked only when the pointer is not NULL, and a NULL pointer means no data.
///
/// # Safety
///
/// If `ptr` is not NULL, it must be valid for `len` bytes for `'a`.
unsafe fn c_bytes<'a>(ptr: *const kernel::ffi::c_void, len: u8, max: usize) -> Result<&'a [u8]> {
    if ptr.is_null() {
        return Ok(&[]);
    }
    let len = usize::from(len);
    if len > max {
        return Err(EINVAL);
    }
    // SAFETY: Caller contract.
    Ok(unsafe { core::slice::from_raw_parts(ptr.cast::<u8>(), len) })
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
pub(crate) extern "C" fn ibcm_rs_reject_msg(reason: ffi::c_int) -> *const ffi::c_char {
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
pub(crate) unsafe extern "C" fn ibcm_rs_create_cm_id(
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
        Ok(CmId::into_raw(CmId::new(dev, cm_handler, context, true)?))
    })())
}

/// `ib_destroy_cm_id()`: releases one handle of `cm_id` (see [`CmId::destroy_with`]); returns
/// once no callback on the id runs any more. A second destroy of the same handle is a caller
/// bug, as in cm.c.
///
/// # Safety
///
/// `cm_id` must be a handle from this CM that the caller has not destroyed yet.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_destroy_cm_id(cm_id: *mut bindings::ib_cm_id) {
    if is_err_or_null(cm_id) {
        pr_err!("ib_destroy_cm_id() of a NULL or error pointer\n");
        return;
    }
    // SAFETY: The caller hands back the reference this handle carries.
    let id = unsafe { CmId::from_raw(cm_id) };
    id.destroy_with(0);
}

/// `ib_cm_listen()`: makes an IDLE id listen on `service_id`; never shares.
///
/// # Safety
///
/// `cm_id` must be a live handle from this CM.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_cm_listen(
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
pub(crate) unsafe extern "C" fn ibcm_rs_cm_insert_listen(
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
        let fresh = CmId::new(dev, cm_handler, core::ptr::null_mut(), false)?;
        let (sid, assign) = parse_service_id(service_id)?;
        let reservation = ListenReservation::new(GFP_KERNEL)?;
        let listener = fresh.listen(sid, assign, fresh.handler_addr(), reservation)?;
        Ok(CmId::into_raw(listener))
    })())
}

/// The id behind a live handle, as the handle's own reference, borrowed for the call: never
/// dropped, so no reference count changes (cm.c's exports take none either; a new reference
/// per call was two atomic operations and their helper calls on every send).
///
/// # Safety
///
/// `cm_id` must be a live handle from this CM whose reference stays with its holder for the
/// whole call. The exports that use this never consume a handle's reference and call no
/// handler: only `ib_destroy_cm_id` and a handler's non-zero return consume one, the latter
/// after the handler (and any export it called) has returned. As in cm.c, an export racing
/// its caller's own destroy of the same id is the caller's bug.
unsafe fn id_of(cm_id: *mut bindings::ib_cm_id) -> ManuallyDrop<Arc<CmId>> {
    // SAFETY: The handle holds one reference (caller contract), which `ManuallyDrop` keeps
    // from being dropped here: it is the handle's again when the call returns.
    ManuallyDrop::new(unsafe { CmId::from_raw(cm_id) })
}

/// `ib_send_cm_req()`.
///
/// # Safety
///
/// `cm_id` must be a live handle; `param` valid with its paths and private data.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_send_cm_req(
    cm_id: *mut bindings::ib_cm_id,
    param: *mut bindings::ib_cm_req_param,
) -> ffi::c_int {
    if is_err_or_null(cm_id) || is_err_or_null(param) {
        return EINVAL.to_errno();
    }
    // SAFETY: `param` is valid (caller contract).
    let param = unsafe { &*param };
    if param.primary_path.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: The caller's buffer, valid for its length if not NULL.
    let Ok(private_data) =
        (unsafe { c_bytes(param.private_data, param.private_data_len, REQ_PRIVATE_DATA) })
    else {
        return EINVAL.to_errno();
    };
    // SAFETY: Non-NULL paths and the sgid attribute are valid for the call (caller contract).
    let args = unsafe {
        conn::req::ReqArgs {
            param,
            primary: &*param.primary_path,
            primary_inbound: param.primary_path_inbound.as_ref(),
            alternate: param.alternate_path.as_ref(),
            primary_sgid: SgidAttr::from_raw(param.ppath_sgid_attr),
            private_data,
        }
    };
    // SAFETY: Caller contract.
    let id = unsafe { id_of(cm_id) };
    errno(conn::req::send_req(&id, &args))
}

/// `ib_send_cm_rep()`.
///
/// # Safety
///
/// `cm_id` must be a live handle; `param` valid with its private data.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_send_cm_rep(
    cm_id: *mut bindings::ib_cm_id,
    param: *mut bindings::ib_cm_rep_param,
) -> ffi::c_int {
    if is_err_or_null(cm_id) || is_err_or_null(param) {
        return EINVAL.to_errno();
    }
    // SAFETY: `param` is valid (caller contract).
    let param = unsafe { &*param };
    // SAFETY: The caller's buffer, valid for its length if not NULL.
    let Ok(private_data) =
        (unsafe { c_bytes(param.private_data, param.private_data_len, REP_PRIVATE_DATA) })
    else {
        return EINVAL.to_errno();
    };
    // SAFETY: Caller contract.
    let id = unsafe { id_of(cm_id) };
    errno(conn::rep_rtu::send_rep(&id, param, private_data))
}

macro_rules! pd_call {
    ($(#[$doc:meta] fn $name:ident => $f:path, $max:expr;)*) => {$(
        #[$doc]
        ///
        /// # Safety
        ///
        /// `cm_id` must be a live handle; `private_data` valid for `private_data_len` bytes
        /// (or NULL).
        #[no_mangle]
        pub(crate) unsafe extern "C" fn $name(
            cm_id: *mut bindings::ib_cm_id,
            private_data: *const ffi::c_void,
            private_data_len: u8,
        ) -> ffi::c_int {
            if is_err_or_null(cm_id) {
                return EINVAL.to_errno();
            }
            // SAFETY: Caller contract.
            let pd = match unsafe { c_bytes(private_data, private_data_len, $max) } {
                Ok(pd) => pd,
                Err(e) => return e.to_errno(),
            };
            // SAFETY: Caller contract.
            errno($f(&*unsafe { id_of(cm_id) }, pd))
        }
    )*};
}

pd_call! {
    /// `ib_send_cm_rtu()`.
    fn ibcm_rs_send_cm_rtu => conn::rep_rtu::send_rtu, crate::logic::wire::conn::RTU_PRIVATE_DATA;
    /// `ib_send_cm_dreq()`.
    fn ibcm_rs_send_cm_dreq => conn::dreq_drep::send_dreq, crate::logic::wire::conn::DREQ_PRIVATE_DATA;
    /// `ib_send_cm_drep()`.
    fn ibcm_rs_send_cm_drep => conn::dreq_drep::send_drep, crate::logic::wire::conn::DREP_PRIVATE_DATA;
}

/// `ib_send_cm_rej()`: every state of cm.c's list (the REJ's form follows the state); the
/// sizes are checked only for non-NULL pointers and the reason is truncated to 16 bits, as
/// in cm.c.
///
/// # Safety
///
/// `cm_id` must be a live handle from this CM; `ari`/`private_data` valid for their lengths.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_send_cm_rej(
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
        let pd = unsafe { c_bytes(private_data, private_data_len, REJ_PRIVATE_DATA) }?;
        // CAST: the wire field is 16 bits; cm.c truncates the same way.
        let reason = reason as u16;
        // SAFETY: Caller contract.
        conn::rej_mra::send_rej(&*unsafe { id_of(cm_id) }, reason, ari, pd)
    })();
    errno(result)
}

/// `ib_send_cm_mra()`.
///
/// # Safety
///
/// `cm_id` must be a live handle; `private_data` valid for its length (or NULL).
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_send_cm_mra(
    cm_id: *mut bindings::ib_cm_id,
    service_timeout: u8,
    private_data: *const ffi::c_void,
    private_data_len: u8,
) -> ffi::c_int {
    if is_err_or_null(cm_id) {
        return EINVAL.to_errno();
    }
    let result = (|| {
        // SAFETY: Caller contract.
        let pd = unsafe {
            c_bytes(
                private_data,
                private_data_len,
                crate::logic::wire::conn::MRA_PRIVATE_DATA,
            )
        }?;
        // SAFETY: Caller contract.
        conn::rej_mra::send_mra(&*unsafe { id_of(cm_id) }, service_timeout, pd)
    })();
    errno(result)
}

/// `ib_send_cm_sidr_req()`.
///
/// # Safety
///
/// `cm_id` must be a live handle; `param` valid with its path and private data.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_send_cm_sidr_req(
    cm_id: *mut bindings::ib_cm_id,
    param: *mut bindings::ib_cm_sidr_req_param,
) -> ffi::c_int {
    if is_err_or_null(cm_id) || is_err_or_null(param) {
        return EINVAL.to_errno();
    }
    // SAFETY: `param` is valid (caller contract).
    let param = unsafe { &*param };
    if param.path.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: The caller's buffer, valid for its length if not NULL.
    let Ok(private_data) = (unsafe {
        c_bytes(
            param.private_data,
            param.private_data_len,
            SIDR_REQ_PRIVATE_DATA,
        )
    }) else {
        return EINVAL.to_errno();
    };
    // SAFETY: The path and the sgid attribute are valid for the call (caller contract).
    let (path, sgid) = unsafe { (&*param.path, SgidAttr::from_raw(param.sgid_attr)) };
    // SAFETY: Caller contract.
    let id = unsafe { id_of(cm_id) };
    errno(conn::sidr::send_sidr_req(
        &id,
        param,
        path,
        sgid,
        private_data,
    ))
}

/// `ib_send_cm_sidr_rep()`: answers the SIDR_REQ a passive id holds; the id goes to IDLE
/// only once the reply is posted.
///
/// # Safety
///
/// `cm_id` must be a live handle from this CM; `param` and its buffers valid.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_send_cm_sidr_rep(
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
        let info = unsafe { c_bytes(p.info, p.info_length, SIDR_REP_INFO) }?;
        // SAFETY: Caller contract for the buffers.
        let pd = unsafe { c_bytes(p.private_data, p.private_data_len, SIDR_REP_PRIVATE_DATA) }?;
        // SAFETY: Caller contract.
        let id = unsafe { id_of(cm_id) };
        let reply = SidrReply {
            request_id: id.remote_id(),
            // CAST: `enum ib_cm_sidr_status` values are small; the wire field is 8 bits.
            status: p.status as u8,
            qpn: p.qp_num,
            qkey: p.qkey,
            service_id: id.service_id().get(),
            vendor_id: p.ece.vendor_id,
            info,
            private_data: pd,
        };
        conn::sidr::send_sidr_rep(&id, &reply, p.ece.attr_mod)
    })();
    errno(result)
}

/// `ib_cm_notify()`: COMM_EST (`cm_establish`) and PATH_MIG (`cm_migrate`); callable from
/// hard-IRQ context (nothing sleeps; the USER_ESTABLISHED work is allocated `GFP_ATOMIC`).
///
/// # Safety
///
/// `cm_id` must be a live handle from this CM.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_cm_notify(
    cm_id: *mut bindings::ib_cm_id,
    event: bindings::ib_event_type,
) -> ffi::c_int {
    if is_err_or_null(cm_id) {
        return EINVAL.to_errno();
    }
    // SAFETY: Caller contract.
    let id = unsafe { id_of(cm_id) };
    errno(conn::notify(&id, event))
}

/// `ib_cm_init_qp_attr()`.
///
/// # Safety
///
/// `cm_id` must be a live handle; `qp_attr` and `qp_attr_mask` valid.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibcm_rs_cm_init_qp_attr(
    cm_id: *mut bindings::ib_cm_id,
    qp_attr: *mut bindings::ib_qp_attr,
    qp_attr_mask: *mut ffi::c_int,
) -> ffi::c_int {
    if is_err_or_null(cm_id) || is_err_or_null(qp_attr) || is_err_or_null(qp_attr_mask) {
        return EINVAL.to_errno();
    }
    // SAFETY: Caller contract.
    let id = unsafe { CmId::borrow(cm_id) };
    // SAFETY: Caller contract.
    errno(conn::qp_attr::init_qp_attr(
        &id,
        unsafe { &mut *qp_attr },
        unsafe { &mut *qp_attr_mask },
    ))
}
