// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! `ib_cm_init_qp_attr()`: fills the attributes `logic::qp_attr::plan` names from the id
//! (cm.c's `cm_init_qp_init_attr()`, `cm_init_qp_rtr_attr()`, `cm_init_qp_rts_attr()`).

use crate::{
    av, bindings,
    cm_id::CmId,
    logic::{
        qp_attr::{self, mask, Facts, QpType, Target},
        trace::IdTrace,
    },
    trace,
};
use kernel::prelude::*;

// The mask values of the pure logic are those of <rdma/ib_verbs.h>.
const _: () = {
    assert!(mask::STATE == bindings::ib_qp_attr_mask_IB_QP_STATE);
    assert!(mask::ACCESS_FLAGS == bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS);
    assert!(mask::PKEY_INDEX == bindings::ib_qp_attr_mask_IB_QP_PKEY_INDEX);
    assert!(mask::PORT == bindings::ib_qp_attr_mask_IB_QP_PORT);
    assert!(mask::AV == bindings::ib_qp_attr_mask_IB_QP_AV);
    assert!(mask::PATH_MTU == bindings::ib_qp_attr_mask_IB_QP_PATH_MTU);
    assert!(mask::TIMEOUT == bindings::ib_qp_attr_mask_IB_QP_TIMEOUT);
    assert!(mask::RETRY_CNT == bindings::ib_qp_attr_mask_IB_QP_RETRY_CNT);
    assert!(mask::RNR_RETRY == bindings::ib_qp_attr_mask_IB_QP_RNR_RETRY);
    assert!(mask::RQ_PSN == bindings::ib_qp_attr_mask_IB_QP_RQ_PSN);
    assert!(mask::MAX_QP_RD_ATOMIC == bindings::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC);
    assert!(mask::ALT_PATH == bindings::ib_qp_attr_mask_IB_QP_ALT_PATH);
    assert!(mask::MIN_RNR_TIMER == bindings::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER);
    assert!(mask::SQ_PSN == bindings::ib_qp_attr_mask_IB_QP_SQ_PSN);
    assert!(mask::MAX_DEST_RD_ATOMIC == bindings::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC);
    assert!(mask::PATH_MIG_STATE == bindings::ib_qp_attr_mask_IB_QP_PATH_MIG_STATE);
    assert!(mask::DEST_QPN == bindings::ib_qp_attr_mask_IB_QP_DEST_QPN);
};

/// `ib_cm_init_qp_attr()` on a live id; `attr.qp_state` selects the target state.
pub(crate) fn init_qp_attr(
    id: &CmId,
    attr: &mut bindings::ib_qp_attr,
    out_mask: &mut i32,
) -> Result {
    let target = match attr.qp_state {
        bindings::ib_qp_state_IB_QPS_INIT => Target::Init,
        bindings::ib_qp_state_IB_QPS_RTR => Target::Rtr,
        bindings::ib_qp_state_IB_QPS_RTS => Target::Rts,
        _ => return Err(EINVAL),
    };
    let g = id.inner.lock();
    let facts = Facts {
        state: id.cm_state(),
        lap: id.lap(),
        qp_type: QpType::from_raw(g.conn.qp_type()),
        alt_dlid: g.alt_av.as_ref().is_some_and(|a| a.dlid() != 0),
        alt_port: g.alt_av.is_some(),
    };
    let Some(m) = qp_attr::plan(target, &facts) else {
        let ev = match target {
            Target::Init => IdTrace::QpInitErr,
            Target::Rtr => IdTrace::QpRtrErr,
            Target::Rts => IdTrace::QpRtsErr,
        };
        trace::id(ev, id);
        return Err(EINVAL);
    };
    let c = &g.conn;
    match target {
        Target::Init => {
            let mut access = bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE;
            if c.responder_resources != 0 {
                access |= bindings::ib_access_flags_IB_ACCESS_REMOTE_READ
                    | bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC;
                // False once the device is being removed (its `ib_device` may be gone).
                if id.dev.flush_capable() {
                    access |= bindings::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL
                        | bindings::ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT;
                }
            }
            // CAST: the access flags fit in the attribute's int.
            attr.qp_access_flags = access as i32;
            if let Some(av) = g.av.as_ref() {
                attr.pkey_index = av.pkey_index;
                attr.port_num = av.port_num();
            }
        }
        Target::Rtr => {
            if let Some(av) = g.av.as_ref() {
                // A shallow copy, as cm.c makes: the QP takes its own references.
                attr.ah_attr = av.attr_copy();
                if attr.ah_attr.type_ == bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB
                    && av.dlid_datapath != 0
                    && av.dlid_datapath != 0xffff
                {
                    av::set_ib_dlid(&mut attr.ah_attr, av.dlid_datapath);
                }
            }
            attr.path_mtu = c.path_mtu.into();
            attr.dest_qp_num = c.remote_qpn;
            attr.rq_psn = c.rq_psn;
            if m & mask::MAX_DEST_RD_ATOMIC != 0 {
                attr.max_dest_rd_atomic = c.responder_resources;
                attr.min_rnr_timer = 0;
            }
            if m & mask::ALT_PATH != 0 {
                if let Some(alt) = g.alt_av.as_ref() {
                    attr.alt_port_num = alt.port_num();
                    attr.alt_pkey_index = alt.pkey_index;
                    attr.alt_timeout = alt.timeout;
                    attr.alt_ah_attr = alt.attr_copy();
                }
            }
        }
        Target::Rts => {
            if m & mask::STATE != 0 {
                attr.sq_psn = c.sq_psn;
                if m & mask::RETRY_CNT != 0 {
                    attr.retry_cnt = c.retry_count;
                    attr.rnr_retry = c.rnr_retry_count;
                    attr.max_rd_atomic = c.initiator_depth;
                }
                if m & mask::TIMEOUT != 0 {
                    attr.timeout = g.av.as_ref().map_or(0, |a| a.timeout);
                }
                if m & mask::PATH_MIG_STATE != 0 {
                    attr.path_mig_state = bindings::ib_mig_state_IB_MIG_REARM;
                }
            } else {
                // cm.c always writes the alternate fields here (zeros without an address):
                // rdma_cm hands the attribute to ib_modify_qp() without initialising it.
                attr.alt_port_num = 0;
                attr.alt_pkey_index = 0;
                attr.alt_timeout = 0;
                attr.alt_ah_attr = bindings::rdma_ah_attr::default();
                if let Some(alt) = g.alt_av.as_ref() {
                    attr.alt_port_num = alt.port_num();
                    attr.alt_pkey_index = alt.pkey_index;
                    attr.alt_timeout = alt.timeout;
                    attr.alt_ah_attr = alt.attr_copy();
                }
                attr.path_mig_state = bindings::ib_mig_state_IB_MIG_REARM;
            }
        }
    }
    // CAST: the mask bits fit in an int.
    *out_mask = m as i32;
    Ok(())
}
