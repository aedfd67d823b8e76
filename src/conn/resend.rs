// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Answers to retransmissions (`cm_dup_req_handler`, `cm_dup_rep_handler`, the TIMEWAIT branch
//! of `cm_dreq_handler`): an RTU, MRA, DREP or STALE_CONN REJ for a REQ, REP or DREQ the
//! peer sent again. They are built under the id lock and sent after it to the received MAD's
//! sender, as cm.c answers (QP1, the received P_Key index, the work completion's address,
//! counted as an id-less send retried once), through the device's reply cache: not on the
//! connection's address handle, whose address is the path's (for a routed REQ the remote
//! port's LID, where cm.c answers the router's).

use super::default_rej;
use crate::{
    alloc::CmBox,
    cm_id::{CmId, CmIdInner, StoredPd},
    logic::{
        state::{MsgKind, Out},
        wire::{
            conn::{CommIdsAndData, Mra, REJ_ARI},
            field::Bytes,
            CmMessage,
        },
    },
};
use kernel::prelude::*;

pub(crate) use crate::logic::req_event::REJ_STALE_CONN;

/// An answer to a retransmission, built under the id lock and sent after it: the message,
/// and a copy of the id's stored private data, which the message cannot borrow once the lock
/// is dropped.
pub(crate) struct Resend {
    /// The message, its private data left out.
    msg: CmMessage<'static>,
    /// A copy of the id's stored private data.
    pd: StoredPd,
}

impl Resend {
    /// The message to send, with its private data.
    pub(super) fn message(&self) -> CmMessage<'_> {
        let pd = Bytes::new(self.pd.as_slice());
        let mut m: CmMessage<'_> = self.msg.clone();
        match &mut m {
            CmMessage::Rtu(d) | CmMessage::Drep(d) => d.private_data = pd,
            CmMessage::Mra(x) => x.private_data = Bytes::new(pd.as_slice()),
            _ => {}
        }
        m
    }
}

/// The answer `o` to a retransmission (`cm_dup_req_handler`, `cm_dup_rep_handler`, the
/// TIMEWAIT branch of `cm_dreq_handler`), with private data `pd` (none for a STALE_CONN REJ).
fn resend_msg<'a>(id: &CmId, service_timeout: u8, o: Out, pd: &'a [u8]) -> CmMessage<'a> {
    let (local, remote) = (id.local_id(), id.remote_id());
    match o {
        Out::ResendRtu | Out::ResendDrep => {
            let d = CommIdsAndData {
                local_comm_id: local,
                remote_comm_id: remote,
                private_data: Bytes::new(pd),
            };
            if o == Out::ResendRtu {
                CmMessage::Rtu(d)
            } else {
                CmMessage::Drep(d)
            }
        }
        Out::ResendMra(kind) => CmMessage::Mra(Mra {
            local_comm_id: local,
            remote_comm_id: remote,
            message_mraed: kind.wire(),
            service_timeout,
            private_data: Bytes::new(pd),
        }),
        _ => {
            let mut rej = default_rej(id);
            rej.reason = REJ_STALE_CONN;
            rej.ari_length = 0;
            rej.ari = [0; REJ_ARI];
            rej.local_comm_id = local;
            rej.remote_comm_id = remote;
            rej.message_rejected = MsgKind::Other.wire();
            CmMessage::Rej(rej)
        }
    }
}

/// [`resend_msg`] built under the lock to be sent after it, when the connection has no
/// handle to send it on: `None` without memory.
pub(super) fn resend(id: &CmId, g: &CmIdInner, o: Out) -> Option<CmBox<Resend>> {
    let msg = resend_msg(id, g.conn.service_timeout, o, &[]);
    // A STALE_CONN REJ carries no private data.
    let stored = if matches!(msg, CmMessage::Rej(_)) {
        &[][..]
    } else {
        StoredPd::bytes(&g.stored_pd)
    };
    let mut r = CmBox::new(
        Resend {
            msg,
            pd: StoredPd::EMPTY,
        },
        GFP_ATOMIC,
    )
    .ok()?;
    r.pd.set(stored);
    Some(r)
}
