// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A device's passive ids keyed by what the peer calls them, for duplicate detection.
//!
//! Stands for the `remote_id_table` (REQ: remote CA GUID + remote comm ID), the
//! `remote_qp_table` (REQ: remote CA GUID + remote QPN) and the `remote_sidr_table` (SIDR_REQ:
//! request ID + source LID) of cm.c, per device instead of global. A passive id is in its tables
//! from the moment it is created for a request, an active id from the moment it accepts a REP,
//! until it enters timewait, goes back to IDLE or is destroyed (a SIDR id: until its SIDR_REP
//! is sent). A request whose comm ID key is present is a retransmission: counted in
//! `cm_rx_duplicates` and dropped (cm.c does the same for an id in REQ_RCVD or
//! SIDR_REQ_RCVD). A REQ with a new comm ID from a QP that already has one pending is stale and
//! gets REJ STALE_CONN. Like the listener tree, the tables live inside the device lock.

use crate::cm_id::CmId;
use kernel::{
    rbtree::{self, RBTree, RBTreeNode, RBTreeNodeReservation},
    sync::Arc,
};

/// How the peer names a connection request: its CA GUID and its local comm ID.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) struct ReqKey {
    /// The REQ's local CA GUID.
    pub(crate) ca_guid: u64,
    /// The REQ's local comm ID.
    pub(crate) comm_id: u32,
}

/// The peer's queue pair: its CA GUID and the REQ's local QPN.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) struct QpKey {
    /// The REQ's local CA GUID.
    pub(crate) ca_guid: u64,
    /// The REQ's local QPN.
    pub(crate) qpn: u32,
}

/// How the peer names a SIDR request: request ID and source LID (always 0 on RoCE, so two
/// hosts with the same request ID collide, as in cm.c, quirk 4).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) struct SidrKey {
    /// The SIDR_REQ's request ID.
    pub(crate) request_id: u32,
    /// The work completion's source LID.
    pub(crate) slid: u32,
}

/// The key a passive id was registered under.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum RemoteKey {
    /// Created by a REQ: its [`ReqKey`] and [`QpKey`], which share the CA GUID (stored once:
    /// this sits in every id).
    Req {
        /// The REQ's local CA GUID.
        ca_guid: u64,
        /// The REQ's local comm ID.
        comm_id: u32,
        /// The REQ's local QPN.
        qpn: u32,
    },
    /// Created by a SIDR_REQ.
    Sidr(SidrKey),
}

impl RemoteKey {
    /// The keys of one REQ (both from the same REQ, so with the same CA GUID).
    pub(crate) fn req(key: ReqKey, qp: QpKey) -> Self {
        debug_assert_eq!(key.ca_guid, qp.ca_guid);
        RemoteKey::Req {
            ca_guid: key.ca_guid,
            comm_id: key.comm_id,
            qpn: qp.qpn,
        }
    }
}

/// A reserved tree node, allocated before the device lock is taken.
pub(crate) type RemoteReservation<K> = RBTreeNodeReservation<K, Arc<CmId>>;

/// The passive ids of one device, by remote key.
pub(crate) struct RemoteTable<K: Ord> {
    tree: RBTree<K, Arc<CmId>>,
}

impl<K: Ord + Copy> RemoteTable<K> {
    /// An empty table.
    pub(crate) fn new() -> Self {
        Self {
            tree: RBTree::new(),
        }
    }

    /// Whether a request with this key is being handled.
    pub(crate) fn contains(&self, key: &K) -> bool {
        self.tree.get(key).is_some()
    }

    /// The id registered under `key`, if any (a new reference).
    pub(crate) fn get(&self, key: &K) -> Option<Arc<CmId>> {
        self.tree.get(key).cloned()
    }

    /// Registers `id` under `key` unless the key is taken; on a duplicate the reservation is
    /// handed back to be freed outside the lock.
    pub(crate) fn insert(
        &mut self,
        key: K,
        id: &Arc<CmId>,
        reservation: RemoteReservation<K>,
    ) -> core::result::Result<(), RemoteReservation<K>> {
        match self.tree.entry(key) {
            rbtree::Entry::Occupied(_) => Err(reservation),
            rbtree::Entry::Vacant(v) => {
                v.insert(id.clone(), reservation);
                Ok(())
            }
        }
    }

    /// Unregisters `id` from `key` (if it is the one registered there); the node, which holds
    /// a reference to the id, is returned to be dropped outside the lock.
    pub(crate) fn remove(&mut self, key: &K, id: &CmId) -> Option<RBTreeNode<K, Arc<CmId>>> {
        if !core::ptr::eq(&**self.tree.get(key)?, id) {
            return None;
        }
        self.tree.remove_node(key)
    }

    /// Number of entries (diagnostics).
    pub(crate) fn len(&self) -> usize {
        self.tree.iter().count()
    }
}

/// Nodes taken out of the tables, to be freed outside the locks.
// The nodes are never read, only dropped late; that is the point.
#[allow(dead_code)]
#[derive(Default)]
pub(crate) struct Unlinked {
    /// From the REQ table.
    pub(crate) req: Option<RBTreeNode<ReqKey, Arc<CmId>>>,
    /// From the QP table.
    pub(crate) qp: Option<RBTreeNode<QpKey, Arc<CmId>>>,
    /// From the SIDR table.
    pub(crate) sidr: Option<RBTreeNode<SidrKey, Arc<CmId>>>,
}
