// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! REQ out: `ib_send_cm_req()` (cm.c's `cm_validate_req_param()`, `cm_format_req()` and
//! `ib_send_cm_req()`). The REQ in is `recv.rs` (the listener match) plus the passive id
//! built there.

use super::{api, Ctx};
use crate::{
    av::Av,
    bindings,
    cm_id::CmId,
    logic::{
        service_id::ServiceId,
        state::Input,
        timeout,
        wire::{
            conn::{Path, Req, REQ_PRIVATE_DATA},
            field::Bytes,
            CmMessage,
        },
    },
};
use kernel::{prelude::*, sync::Arc};

/// `IB_LID_PERMISSIVE`.
const LID_PERMISSIVE: u16 = 0xFFFF;

/// The REQ's view of one path record (`cm_format_req`).
///
/// # Safety
///
/// `path` must be valid; `inbound` NULL or valid.
unsafe fn req_path(
    path: *mut bindings::sa_path_rec,
    inbound: *mut bindings::sa_path_rec,
    ack_delay: u8,
) -> Path {
    // SAFETY: `path` is valid (caller).
    let p = unsafe { &*path };
    let (mut slid, mut dlid, mut ext) = (0u32, 0u32, false);
    // SAFETY: As above; outputs are ours.
    unsafe { bindings::ibcm_glue_path_lids(path, &mut slid, &mut dlid, &mut ext) };
    // SAFETY: `raw` is the byte view of the GID union.
    let (mut sgid, mut dgid) = unsafe { (*p.sgid.raw.as_ref(), *p.dgid.raw.as_ref()) };
    if ext {
        // OPA_MAKE_ID: the OPA GID prefix with the 32-bit LID as interface ID.
        sgid[8..].copy_from_slice(&(0x0006_6A00_0000_0000u64 | u64::from(slid)).to_be_bytes());
        dgid[8..].copy_from_slice(&(0x0006_6A00_0000_0000u64 | u64::from(dlid)).to_be_bytes());
    }
    let (local_lid, remote_lid) = if p.hop_limit <= 1 {
        // CAST: cm.c keeps the low 16 bits of the path's LIDs (`htons(ntohl(lid))`).
        if ext {
            (0, 0)
        } else {
            (slid as u16, dlid as u16)
        }
    } else if !inbound.is_null() {
        let mut il = (0u32, 0u32, false);
        // SAFETY: `inbound` is valid (caller).
        unsafe { bindings::ibcm_glue_path_lids(inbound, &mut il.0, &mut il.1, &mut il.2) };
        // CAST: as above.
        (il.1 as u16, LID_PERMISSIVE)
    } else {
        (LID_PERMISSIVE, LID_PERMISSIVE)
    };
    Path {
        local_lid,
        remote_lid,
        local_gid: sgid,
        remote_gid: dgid,
        flow_label: u32::from_be(p.flow_label),
        packet_rate: p.rate,
        traffic_class: p.traffic_class,
        hop_limit: p.hop_limit,
        sl: p.sl,
        subnet_local: p.hop_limit <= 1,
        local_ack_timeout: timeout::ack_timeout(ack_delay, p.packet_life_time),
    }
}

/// `ib_send_cm_req()`.
///
/// # Safety
///
/// `param` must be valid, with its paths and private data.
pub(crate) unsafe fn send_req(id: &Arc<CmId>, param: &bindings::ib_cm_req_param) -> Result {
    let qpt = param.qp_type;
    if param.primary_path.is_null()
        || !(qpt == bindings::ib_qp_type_IB_QPT_RC
            || qpt == bindings::ib_qp_type_IB_QPT_UC
            || qpt == bindings::ib_qp_type_IB_QPT_XRC_INI)
    {
        return Err(EINVAL);
    }
    // SAFETY: Caller contract.
    let pd =
        unsafe { super::c_bytes(param.private_data, param.private_data_len, REQ_PRIVATE_DATA) }?;
    // SAFETY: Non-NULL paths are valid (caller).
    let (pri, alt) = unsafe { (&*param.primary_path, param.alternate_path.as_ref()) };
    if let Some(alt) = alt {
        if alt.pkey != pri.pkey || alt.mtu != pri.mtu {
            return Err(EINVAL);
        }
    }
    if id.cm_state() != crate::logic::state::State::Idle {
        return Err(EINVAL);
    }
    let dev = &id.dev;
    // SAFETY: Valid path and attribute (caller).
    let av = unsafe { Av::from_path(dev, param.primary_path, param.ppath_sgid_attr) }?;
    let alt_av = match alt {
        // SAFETY: As above.
        Some(_) => Some(unsafe { Av::from_path(dev, param.alternate_path, core::ptr::null()) }?),
        None => None,
    };
    // SAFETY: The device is live while the id is.
    let (guid, ack_delay) = unsafe {
        (
            (*dev.ib_dev()).node_guid,
            bindings::ibcm_glue_ack_delay(dev.ib_dev()),
        )
    };
    let xrc = qpt == bindings::ib_qp_type_IB_QPT_XRC_INI;
    let mut msg = CmMessage::Req(Req {
        local_comm_id: 0,
        vendor_id: param.ece.vendor_id & 0x00FF_FFFF,
        service_id: u64::from_be(param.service_id),
        local_ca_guid: u64::from_be(guid),
        local_qkey: 0,
        local_qpn: param.qp_num & 0x00FF_FFFF,
        responder_resources: if xrc { 0 } else { param.responder_resources },
        local_eecn: 0,
        initiator_depth: param.initiator_depth,
        remote_eecn: 0,
        remote_cm_response_timeout: param.remote_cm_response_timeout & 0x1F,
        transport_service_type: if qpt == bindings::ib_qp_type_IB_QPT_UC {
            1
        } else if xrc {
            3
        } else {
            0
        },
        end_to_end_flow_control: param.flow_control != 0,
        starting_psn: param.starting_psn & 0x00FF_FFFF,
        local_cm_response_timeout: param.local_cm_response_timeout & 0x1F,
        retry_count: if xrc { 0 } else { param.retry_count & 7 },
        pkey: u16::from_be(pri.pkey),
        path_mtu: pri.mtu & 0xF,
        rdc_exists: false,
        rnr_retry_count: if xrc { 0 } else { param.rnr_retry_count & 7 },
        max_cm_retries: param.max_cm_retries & 0xF,
        srq: !xrc && param.srq != 0,
        extended_transport_type: if xrc { 1 } else { 0 },
        // SAFETY: Valid paths (caller).
        primary: unsafe { req_path(param.primary_path, param.primary_path_inbound, ack_delay) },
        alternate: match alt {
            // SAFETY: As above.
            Some(_) => unsafe { req_path(param.alternate_path, core::ptr::null_mut(), ack_delay) },
            None => Path::default(),
        },
        sap_supported: false,
        private_data: Bytes::new(pd),
    });
    let ctx = Ctx {
        msg: Some(&mut msg),
        attr_mod: param.ece.attr_mod,
        ..Ctx::default()
    };
    let sid = ServiceId::from_be(param.service_id);
    let wait = timeout::req_wait_ms(pri.packet_life_time, param.remote_cm_response_timeout);
    let mut avs = Some((av, alt_av));
    api(
        id,
        Input::SendReq,
        ctx,
        |id, g| {
            if let Some((av, alt)) = avs.take() {
                g.av = Some(av);
                g.alt_av = alt;
            }
            id.set_service_id(sid);
            g.conn.timeout_ms = wait;
            g.conn.max_cm_retries = param.max_cm_retries;
            g.conn.initiator_depth = param.initiator_depth;
            g.conn.responder_resources = param.responder_resources;
            g.conn.retry_count = param.retry_count;
            g.conn.path_mtu = pri.mtu;
            g.conn.pkey = u16::from_be(pri.pkey);
            g.conn.set_qp_type(qpt);
            g.conn.local_qpn = param.qp_num & 0x00FF_FFFF;
            g.conn.rq_psn = param.starting_psn & 0x00FF_FFFF;
        },
        |_, _| {},
    )
}
