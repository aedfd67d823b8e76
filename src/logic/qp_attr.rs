// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! What `ib_cm_init_qp_attr()` fills: the attribute mask for each target QP state, id state
//! and QP type.
//!
//! Stands for the state and type ladders of `cm_init_qp_init_attr()`,
//! `cm_init_qp_rtr_attr()` and `cm_init_qp_rts_attr()` in cm.c. The kernel side fills each
//! attribute the mask names from the id (`conn/qp_attr.rs`).

use super::state::{Lap, State};

/// `enum ib_qp_attr_mask` bits used here (values of `<rdma/ib_verbs.h>`, checked against the
/// bindings at build time).
pub(crate) mod mask {
    /// `IB_QP_STATE`.
    pub(crate) const STATE: u32 = 1;
    /// `IB_QP_ACCESS_FLAGS`.
    pub(crate) const ACCESS_FLAGS: u32 = 1 << 3;
    /// `IB_QP_PKEY_INDEX`.
    pub(crate) const PKEY_INDEX: u32 = 1 << 4;
    /// `IB_QP_PORT`.
    pub(crate) const PORT: u32 = 1 << 5;
    /// `IB_QP_AV`.
    pub(crate) const AV: u32 = 1 << 7;
    /// `IB_QP_PATH_MTU`.
    pub(crate) const PATH_MTU: u32 = 1 << 8;
    /// `IB_QP_TIMEOUT`.
    pub(crate) const TIMEOUT: u32 = 1 << 9;
    /// `IB_QP_RETRY_CNT`.
    pub(crate) const RETRY_CNT: u32 = 1 << 10;
    /// `IB_QP_RNR_RETRY`.
    pub(crate) const RNR_RETRY: u32 = 1 << 11;
    /// `IB_QP_RQ_PSN`.
    pub(crate) const RQ_PSN: u32 = 1 << 12;
    /// `IB_QP_MAX_QP_RD_ATOMIC`.
    pub(crate) const MAX_QP_RD_ATOMIC: u32 = 1 << 13;
    /// `IB_QP_ALT_PATH`.
    pub(crate) const ALT_PATH: u32 = 1 << 14;
    /// `IB_QP_MIN_RNR_TIMER`.
    pub(crate) const MIN_RNR_TIMER: u32 = 1 << 15;
    /// `IB_QP_SQ_PSN`.
    pub(crate) const SQ_PSN: u32 = 1 << 16;
    /// `IB_QP_MAX_DEST_RD_ATOMIC`.
    pub(crate) const MAX_DEST_RD_ATOMIC: u32 = 1 << 17;
    /// `IB_QP_PATH_MIG_STATE`.
    pub(crate) const PATH_MIG_STATE: u32 = 1 << 18;
    /// `IB_QP_DEST_QPN`.
    pub(crate) const DEST_QPN: u32 = 1 << 20;
}

/// The QP state a caller asks attributes for (`qp_attr->qp_state`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Target {
    /// `IB_QPS_INIT`.
    Init,
    /// `IB_QPS_RTR`.
    Rtr,
    /// `IB_QPS_RTS`.
    Rts,
}

/// The QP types the CM distinguishes (`enum ib_qp_type`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum QpType {
    /// `IB_QPT_RC`.
    Rc,
    /// `IB_QPT_UC`.
    Uc,
    /// `IB_QPT_UD` (SIDR ids; never connected).
    Ud,
    /// `IB_QPT_XRC_INI`.
    XrcIni,
    /// `IB_QPT_XRC_TGT`.
    XrcTgt,
}

impl QpType {
    /// The type of an `enum ib_qp_type` value; unknown values behave like UD (no
    /// type-specific attributes).
    pub(crate) fn from_raw(v: u32) -> QpType {
        match v {
            2 => QpType::Rc,
            3 => QpType::Uc,
            9 => QpType::XrcIni,
            10 => QpType::XrcTgt,
            _ => QpType::Ud,
        }
    }
}

/// What the id has that the masks depend on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Facts {
    /// The id's state.
    pub(crate) state: State,
    /// Its LAP state.
    pub(crate) lap: Lap,
    /// Its QP type.
    pub(crate) qp_type: QpType,
    /// Whether the alternate address has a destination LID (`rdma_ah_get_dlid(&alt_av)`).
    pub(crate) alt_dlid: bool,
    /// Whether the alternate address has a port.
    pub(crate) alt_port: bool,
}

/// The mask for `target`, or `None` (`-EINVAL`) in a state that cannot give it.
pub(crate) fn plan(target: Target, f: &Facts) -> Option<u32> {
    use mask::*;
    use State::*;
    match target {
        Target::Init => match f.state {
            ReqSent | MraReqRcvd | ReqRcvd | MraReqSent | RepRcvd | MraRepSent | RepSent
            | MraRepRcvd | Established => Some(STATE | ACCESS_FLAGS | PKEY_INDEX | PORT),
            _ => None,
        },
        Target::Rtr => match f.state {
            ReqRcvd | MraReqSent | RepRcvd | MraRepSent | RepSent | MraRepRcvd | Established => {
                let mut m = STATE | AV | PATH_MTU | DEST_QPN | RQ_PSN;
                if matches!(f.qp_type, QpType::Rc | QpType::XrcTgt) {
                    m |= MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER;
                }
                if f.alt_dlid && f.alt_port {
                    m |= ALT_PATH;
                }
                Some(m)
            }
            _ => None,
        },
        Target::Rts => match f.state {
            ReqRcvd | MraReqSent | RepRcvd | MraRepSent | RepSent | MraRepRcvd | Established => {
                if f.lap != Lap::Uninit {
                    return Some(ALT_PATH | PATH_MIG_STATE);
                }
                let mut m = STATE | SQ_PSN;
                match f.qp_type {
                    QpType::Rc | QpType::XrcIni => {
                        m |= RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC | TIMEOUT
                    }
                    QpType::XrcTgt => m |= TIMEOUT,
                    QpType::Uc | QpType::Ud => {}
                }
                if f.alt_dlid {
                    m |= PATH_MIG_STATE;
                }
                Some(m)
            }
            _ => None,
        },
    }
}
