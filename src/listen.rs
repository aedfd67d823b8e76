// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! A device's listeners: the RB-tree keyed by service ID, listener sharing, and the
//! `IB_CM_ASSIGN_SERVICE_ID` allocator.
//!
//! Stands for `cm_insert_listen()`, `cm_find_listen()` and the tree half of `cm_destroy_id()`
//! in cm.c. The rules themselves (validation, allocation policy, the share test) are pure logic
//! in `logic/service_id.rs`; this file applies them to the tree. Every method takes
//! `&mut ListenTable`, which only exists inside the owning device's lock, so each
//! share-and-increment and decrement-and-erase is atomic with respect to lookups.

use crate::logic::service_id::{
    on_collision, AssignAllocator, Collision, ServiceId, ServiceIdError,
};
use kernel::{
    alloc::{flags::GFP_ATOMIC, KVec},
    error::{
        code::{EBUSY, EINVAL, ENOSPC},
        Error,
    },
    rbtree::{self, RBTree, RBTreeNode, RBTreeNodeReservation},
    sync::Arc,
};

/// What the table needs of a listening id (`CmId` in `cm_id.rs`, which holds the device that
/// holds this table: the table is generic so that it does not name the id's type).
pub(crate) trait Listener {
    /// The address of the caller's current handler.
    fn handler_addr(&self) -> Option<usize>;
    /// Whether the caller's `context` is NULL.
    fn context_is_null(&self) -> bool;
    /// Pins the listener for one handler invocation; called under the device lock while the
    /// id is in the tree.
    fn listener_get(&self);
}

/// One listener in the tree.
pub(crate) struct ListenEntry<I> {
    /// The listening id; the tree holds its own reference.
    pub(crate) id: Arc<I>,
    /// How many callers hold this listener (`listen_sharecount` in cm.c). Always >= 1 while
    /// the entry is in the tree.
    pub(crate) share_count: u32,
}

/// A tree node ready to be inserted without allocating (allocate before taking the lock).
pub(crate) type ListenReservation<I> = RBTreeNodeReservation<ServiceId, ListenEntry<I>>;

/// What an insert attempt did.
pub(crate) enum Inserted<I> {
    /// The new id is now the listener for its service ID.
    New(ServiceId),
    /// An existing listener was shared; its share count went up by one.
    Shared(Arc<I>),
}

/// Why an insert attempt failed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum InsertError {
    /// A listener exists and may not be shared with this caller.
    Collision(Collision),
    /// The requested ID was invalid or the allocator is used up.
    ServiceId(ServiceIdError),
}

/// The errno of a failed listen insert, as cm.c gives it (allocator exhaustion is ours).
pub(crate) fn listen_errno(e: InsertError) -> Error {
    match e {
        InsertError::Collision(Collision::Busy) => EBUSY,
        InsertError::Collision(_) => EINVAL,
        InsertError::ServiceId(ServiceIdError::Reserved) => EINVAL,
        InsertError::ServiceId(ServiceIdError::Exhausted) => ENOSPC,
    }
}

/// What dropping one share did.
pub(crate) enum Released<I> {
    /// Other holders remain; the listener stays in the tree.
    StillShared,
    /// That was the last share: the node is out of the tree and the caller frees it outside
    /// the lock.
    Removed(RBTreeNode<ServiceId, ListenEntry<I>>),
    /// `id` is not the listener for `sid` (already fully destroyed: a double destroy).
    NotListening,
}

/// The listeners of one device and its service-ID allocator.
pub(crate) struct ListenTable<I> {
    tree: RBTree<ServiceId, ListenEntry<I>>,
    assign: AssignAllocator,
}

impl<I> ListenTable<I> {
    /// An empty table whose allocator starts at `IB_CM_ASSIGN_SERVICE_ID`.
    pub(crate) fn new() -> Self {
        Self {
            tree: RBTree::new(),
            assign: AssignAllocator::new(),
        }
    }

    /// Number of listeners.
    pub(crate) fn len(&self) -> usize {
        self.tree.iter().count()
    }
}

impl<I: Listener> ListenTable<I> {
    /// Resolves `IB_CM_ASSIGN_SERVICE_ID` (or keeps a fixed ID), then inserts `new` or shares
    /// an existing listener.
    ///
    /// `handler` is the address of the caller's handler for `ib_cm_insert_listen()` (which may
    /// share) and `None` for `ib_cm_listen()` (which never shares). On `Inserted::New` the
    /// reservation is consumed; otherwise it is handed back for the caller to free outside the
    /// lock.
    pub(crate) fn insert(
        &mut self,
        new: &Arc<I>,
        requested: ServiceId,
        assign: bool,
        handler: Option<usize>,
        reservation: ListenReservation<I>,
    ) -> core::result::Result<Inserted<I>, (InsertError, ListenReservation<I>)> {
        let sid = if assign {
            let tree = &self.tree;
            match self.assign.allocate(|s| tree.get(&s).is_some()) {
                Ok(s) => s,
                Err(e) => return Err((InsertError::ServiceId(e), reservation)),
            }
        } else {
            requested
        };
        match self.tree.entry(sid) {
            rbtree::Entry::Occupied(mut occupied) => {
                let entry = occupied.get_mut();
                match on_collision(entry.id.handler_addr(), entry.id.context_is_null(), handler) {
                    Collision::Share => {
                        entry.share_count += 1;
                        Ok(Inserted::Shared(entry.id.clone()))
                    }
                    c => Err((InsertError::Collision(c), reservation)),
                }
            }
            rbtree::Entry::Vacant(vacant) => {
                vacant.insert(
                    ListenEntry {
                        id: new.clone(),
                        share_count: 1,
                    },
                    reservation,
                );
                Ok(Inserted::New(sid))
            }
        }
    }

    /// Drops one share of the listener `id` on `sid`; the last one removes it from the tree.
    pub(crate) fn release(&mut self, sid: ServiceId, id: &I) -> Released<I> {
        let Some(entry) = self.tree.get_mut(&sid) else {
            return Released::NotListening;
        };
        if !core::ptr::eq(&*entry.id, id) {
            return Released::NotListening;
        }
        entry.share_count -= 1;
        if entry.share_count > 0 {
            return Released::StillShared;
        }
        match self.tree.remove_node(&sid) {
            Some(node) => Released::Removed(node),
            None => Released::NotListening,
        }
    }

    /// Finds the listener for `sid` and pins it for one handler invocation (`cm_find_listen`).
    /// The caller ends the pin (`CmId::listener_put`).
    pub(crate) fn find(&self, sid: ServiceId) -> Option<Arc<I>> {
        let entry = self.tree.get(&sid)?;
        entry.id.listener_get();
        Some(entry.id.clone())
    }

    /// Replaces the allocator (white-box tests of the range end).
    #[cfg(ibcm_kunit)]
    pub(crate) fn set_allocator(&mut self, assign: AssignAllocator) {
        self.assign = assign;
    }

    /// The share count of the listener on `sid`, if any (for the white-box tests).
    #[cfg(ibcm_kunit)]
    pub(crate) fn share_count(&self, sid: ServiceId) -> Option<u32> {
        self.tree.get(&sid).map(|e| e.share_count)
    }

    /// Copies the listeners (id and share count, in service-ID order) into `out`, up to its
    /// capacity, without allocating; returns how many did not fit.
    pub(crate) fn snapshot(&self, out: &mut KVec<(Arc<I>, u32)>) -> usize {
        let mut left = 0;
        for (_, e) in self.tree.iter() {
            if out.len() < out.capacity() {
                // Within capacity: `push` does not allocate.
                let _ = out.push((e.id.clone(), e.share_count), GFP_ATOMIC);
            } else {
                left += 1;
            }
        }
        left
    }
}
