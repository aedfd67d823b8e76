// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Bindings to the target kernel's rdma headers and to `include/ib_cm_glue.h`.
//!
//! Generated at build time by bindgen with the kernel's own C flags (see `Kbuild`), never
//! hand-copied. Types outside `include/rdma/` come from `kernel::bindings`, so the generated
//! items interoperate with the kernel crate's. The assertions at the end compare the layout
//! bindgen produced with the one the C compiler computes (`enum ibcm_c_layout`).
#![allow(
    dead_code,
    improper_ctypes,
    missing_docs,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    unnecessary_transmutes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::undocumented_unsafe_blocks
)]

use kernel::ffi;

pub(crate) use kernel::bindings::*;

include!(env!("IBCM_BINDINGS_RS"));

// CAST: the enumerators are `c_uint` and `From` is not usable in const context; every value is
// a small size or offset.
macro_rules! c_layout {
    ($name:ident) => {
        $name as usize
    };
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<ib_cm_id>() == c_layout!(ibcm_c_layout_IBCM_C_SIZEOF_CM_ID));
    assert!(offset_of!(ib_cm_id, cm_handler) == c_layout!(ibcm_c_layout_IBCM_C_OFF_CM_HANDLER));
    assert!(offset_of!(ib_cm_id, context) == c_layout!(ibcm_c_layout_IBCM_C_OFF_CONTEXT));
    assert!(offset_of!(ib_cm_id, device) == c_layout!(ibcm_c_layout_IBCM_C_OFF_DEVICE));
    assert!(offset_of!(ib_cm_id, service_id) == c_layout!(ibcm_c_layout_IBCM_C_OFF_SERVICE_ID));
    assert!(offset_of!(ib_cm_id, state) == c_layout!(ibcm_c_layout_IBCM_C_OFF_STATE));
    assert!(offset_of!(ib_cm_id, lap_state) == c_layout!(ibcm_c_layout_IBCM_C_OFF_LAP_STATE));
    assert!(offset_of!(ib_cm_id, local_id) == c_layout!(ibcm_c_layout_IBCM_C_OFF_LOCAL_ID));
    assert!(offset_of!(ib_cm_id, remote_id) == c_layout!(ibcm_c_layout_IBCM_C_OFF_REMOTE_ID));
    assert!(
        offset_of!(ib_cm_id, remote_cm_qpn) == c_layout!(ibcm_c_layout_IBCM_C_OFF_REMOTE_CM_QPN)
    );
    assert!(size_of::<ib_cm_event>() == c_layout!(ibcm_c_layout_IBCM_C_SIZEOF_CM_EVENT));
    assert!(offset_of!(ib_cm_event, param) == c_layout!(ibcm_c_layout_IBCM_C_OFF_EVENT_PARAM));
    assert!(
        offset_of!(ib_cm_event, private_data)
            == c_layout!(ibcm_c_layout_IBCM_C_OFF_EVENT_PRIVATE_DATA)
    );
    assert!(
        size_of::<ib_cm_req_event_param>()
            == c_layout!(ibcm_c_layout_IBCM_C_SIZEOF_REQ_EVENT_PARAM)
    );
    assert!(
        size_of::<ib_cm_sidr_req_event_param>()
            == c_layout!(ibcm_c_layout_IBCM_C_SIZEOF_SIDR_REQ_EVENT_PARAM)
    );
    // The x86_64 figures of the spec (section 1.1), as a second, human-readable check.
    assert!(size_of::<ib_cm_id>() == 56);
    assert!(offset_of!(ib_cm_id, remote_cm_qpn) == 48);
};
