// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The CM's ids keyed by what the peer calls them, for duplicate and stale detection.
//!
//! Stands for the `remote_id_table` (REQ: remote CA GUID + remote comm ID), the
//! `remote_qp_table` (REQ: remote CA GUID + remote QPN) and the `remote_sidr_table` (SIDR_REQ:
//! request ID + source LID) of cm.c: one set for the whole CM, shared by every device, as
//! cm.c's, so a message that arrives through another local HCA than its connection's is still
//! matched against it. A passive id is in the tables from just after it is created for a
//! request (filed under its lock), an active id from the moment it accepts a REP, until it
//! enters timewait, goes back to IDLE or is destroyed (a SIDR id: until its SIDR_REP is sent). A request whose comm ID key is present is a retransmission: counted in
//! `cm_rx_duplicates` and dropped (cm.c does the same for an id in REQ_RCVD or
//! SIDR_REQ_RCVD). A REQ with a new comm ID from a QP that already has one pending is stale and
//! gets REJ STALE_CONN. The tables sit behind their own lock ([`tables`]), a leaf lock taken
//! after an id's (cm.c: `cm.lock`).
//!
//! A REQ-made id is in the REQ table and the QP table at once, always both or neither, so one
//! allocation ([`ConnEntry`]) carries its links into both trees (cm.c's `cm_timewait_info`
//! likewise holds both `rb_node`s): one allocation and one free per connection end instead of
//! a node per tree. The two trees are intrusive `rb_root`s over those entries ([`ConnTables`]);
//! the SIDR table is an ordinary [`RBTree`].

use crate::{
    alloc::CmBox,
    cm_id::{CmId, RemoteLink},
    lock::{new_spinlock_irq, SpinLockIrq},
    logic::remote::Held,
    slot::Slot,
};
use core::{
    mem::MaybeUninit,
    ptr::{addr_of_mut, NonNull},
    sync::atomic::{self, AtomicPtr},
};
use kernel::{
    alloc::Flags,
    bindings as kb,
    prelude::*,
    rbtree::{self, RBTree, RBTreeNode, RBTreeNodeReservation},
    sync::Arc,
};

// The keys are pure values.
pub(crate) use crate::logic::remote::{QpKey, ReqKey, SidrKey};

/// A reserved tree node, allocated before the tables' lock is taken.
pub(crate) type RemoteReservation<K> = RBTreeNodeReservation<K, Arc<CmId>>;

/// The passive ids of the CM, by remote key.
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
}

/// One REQ-made id in both [`ConnTables`] trees: its two links, the keys it is filed under
/// (the CA GUID they share once), and the tables' reference to the id.
pub(crate) struct ConnEntry {
    req_link: kb::rb_node,
    qp_link: kb::rb_node,
    ca_guid: u64,
    comm_id: u32,
    qpn: u32,
    id: Arc<CmId>,
}

// A `CmBox` takes kmalloc's alignment (`alloc::MIN_ALIGN`).
const _: () = assert!(core::mem::align_of::<ConnEntry>() <= crate::alloc::MIN_ALIGN);

/// An entry allocated before the tables' lock is taken.
pub(crate) struct ConnReservation(CmBox<MaybeUninit<ConnEntry>>);

impl ConnReservation {
    /// Allocates the entry.
    pub(crate) fn new(flags: Flags) -> Result<Self> {
        Ok(Self(CmBox::new_uninit(flags)?))
    }
}

/// Which key of a REQ or REP the tables hold, and by which id (a new reference): what
/// [`ConnTables::holder`] finds and why [`ConnTables::insert`] refuses.
pub(crate) enum Taken {
    /// The REQ key: a retransmission of a request that id holds (or a duplicate REP).
    Req(Arc<CmId>),
    /// The QP key: a new request from a queue pair that id is connected (or connecting) to.
    Qp(Arc<CmId>),
}

impl Taken {
    /// The key held, as the verdict's input ([`crate::logic::remote::verdict`]), and its holder.
    pub(crate) fn held(self) -> (Held, Arc<CmId>) {
        match self {
            Taken::Req(id) => (Held::CommId, id),
            Taken::Qp(id) => (Held::Qp, id),
        }
    }
}

/// The two trees an entry is linked into.
#[derive(Clone, Copy)]
enum Tree {
    /// By [`ReqKey`].
    Req,
    /// By [`QpKey`].
    Qp,
}

/// Where a walk down one tree ended.
#[derive(Clone, Copy)]
enum Walk {
    /// At the entry filed under the key.
    Found(*mut ConnEntry),
    /// At the empty child slot `link` of `parent` (NULL for the root) where the key belongs.
    Vacant(*mut kb::rb_node, *mut *mut kb::rb_node),
}

/// The entry whose `tree` link `node` is.
///
/// # Safety
///
/// `node` must be the `tree` link of a live [`ConnEntry`].
unsafe fn entry_of(node: *mut kb::rb_node, tree: Tree) -> *mut ConnEntry {
    // SAFETY: `node` is that field of a `ConnEntry` (caller).
    unsafe {
        match tree {
            Tree::Req => kernel::container_of!(node, ConnEntry, req_link).cast_mut(),
            Tree::Qp => kernel::container_of!(node, ConnEntry, qp_link).cast_mut(),
        }
    }
}

/// The key `e` is filed under in `tree`, as (CA GUID, comm ID or QPN): the order of
/// [`ReqKey`] and [`QpKey`].
fn key_in(e: &ConnEntry, tree: Tree) -> (u64, u32) {
    match tree {
        Tree::Req => (e.ca_guid, e.comm_id),
        Tree::Qp => (e.ca_guid, e.qpn),
    }
}

/// Walks `tree`, rooted at `root`, down to `key`. Only reads.
///
/// # Safety
///
/// `root` must be the valid root of `tree` in a [`ConnTables`], whose nodes are all `tree`
/// links of live entries, and no one may change the tree during the call.
unsafe fn walk(root: *mut kb::rb_root, tree: Tree, key: (u64, u32)) -> Walk {
    let mut parent = core::ptr::null_mut();
    // SAFETY: `root` is valid (caller).
    let mut link = unsafe { addr_of_mut!((*root).rb_node) };
    // SAFETY: Every non-NULL child pointer of the tree is a live entry's `tree` link (caller).
    unsafe {
        while !(*link).is_null() {
            let node = *link;
            let e = entry_of(node, tree);
            // The order of the (CA GUID, comm ID or QPN) pairs, spelt out: a tuple's `cmp`
            // makes a three-way value first, a few more instructions per level.
            let (guid, n) = key_in(&*e, tree);
            let less = if key.0 != guid {
                key.0 < guid
            } else if key.1 != n {
                key.1 < n
            } else {
                return Walk::Found(e);
            };
            link = if less {
                addr_of_mut!((*node).rb_left)
            } else {
                addr_of_mut!((*node).rb_right)
            };
            parent = node;
        }
    }
    Walk::Vacant(parent, link)
}

/// The CM's REQ-made ids by [`ReqKey`] (duplicate REQs, a REJ TIMEOUT's ARI) and by
/// [`QpKey`] (stale connections), each id in both trees through one [`ConnEntry`].
///
/// # Invariants
///
/// Every node of `reqs` is the `req_link` and every node of `qps` the `qp_link` of an entry
/// leaked from a [`ConnReservation`]'s box, owned by the tables; an entry is in both trees or
/// in neither (then freed), filed under its own keys.
pub(crate) struct ConnTables {
    reqs: kb::rb_root,
    qps: kb::rb_root,
    /// Bumped by every change of either tree, so a [`Vacancy`] can tell it is still exact.
    gen: u64,
}

/// Where a REQ's keys belong in both trees, as [`ConnTables::holder`] found them free: the
/// insert that follows under a later lock section links there without walking again, if the
/// tables have not changed since (their generation).
pub(crate) struct Vacancy {
    gen: u64,
    req: Walk,
    qp: Walk,
}

// SAFETY: The tables own their entries (plain data and an `Arc<CmId>`, which is `Send`); the
// raw pointers point only into them.
unsafe impl Send for ConnTables {}

impl ConnTables {
    /// Empty tables: the CM's one set ([`init`]; private, so that every [`RemoteLink`] is of
    /// those).
    fn new() -> Self {
        // INVARIANT: No nodes.
        Self {
            reqs: kb::rb_root::default(),
            qps: kb::rb_root::default(),
            gen: 0,
        }
    }

    /// Walks both trees down to `key` and `qp`.
    fn walks(&mut self, key: &ReqKey, qp: &QpKey) -> (Walk, Walk) {
        let (reqs, qps) = (addr_of_mut!(self.reqs), addr_of_mut!(self.qps));
        // SAFETY: Our trees (type invariant), unchanged while `&mut self` is held.
        unsafe {
            (
                walk(reqs, Tree::Req, (key.ca_guid, key.comm_id)),
                walk(qps, Tree::Qp, (qp.ca_guid, qp.qpn)),
            )
        }
    }

    /// The entry filed under `key` in `tree`.
    fn find(&self, tree: Tree, key: (u64, u32)) -> Option<&ConnEntry> {
        let root = match tree {
            Tree::Req => &self.reqs,
            Tree::Qp => &self.qps,
        };
        // SAFETY: `root` is one of our trees (type invariant); `&self` keeps it unchanged, and
        // the walk only reads through the pointer.
        match unsafe { walk(core::ptr::from_ref(root).cast_mut(), tree, key) } {
            // SAFETY: A live entry owned by the tables, borrowed as long as they are.
            Walk::Found(e) => Some(unsafe { &*e }),
            Walk::Vacant(..) => None,
        }
    }

    /// The id filed under the REQ key `key`, if any (a new reference).
    pub(crate) fn get_req(&self, key: &ReqKey) -> Option<Arc<CmId>> {
        self.find(Tree::Req, (key.ca_guid, key.comm_id))
            .map(|e| e.id.clone())
    }

    /// The id holding `key` or, if none, `qp`, and which (the REQ key first, as
    /// [`ConnTables::insert`] checks them); if neither is held, where they belong, for the
    /// insert that follows.
    pub(crate) fn holder(
        &mut self,
        key: &ReqKey,
        qp: &QpKey,
    ) -> core::result::Result<Vacancy, Taken> {
        match self.walks(key, qp) {
            (Walk::Found(e), _) => Err(Taken::Req(Self::id_of(e))),
            (_, Walk::Found(e)) => Err(Taken::Qp(Self::id_of(e))),
            (req, qp) => Ok(Vacancy {
                gen: self.gen,
                req,
                qp,
            }),
        }
    }

    /// A new reference to the id of `e`, an entry a walk just found.
    fn id_of(e: *mut ConnEntry) -> Arc<CmId> {
        // SAFETY: A live entry of ours (the caller found it under the tables' lock, which it
        // still holds), only read (its id reference cloned).
        unsafe { (*e).id.clone() }
    }

    /// Files `id` under `key` and `qp` (which share the CA GUID), in both trees, unless either
    /// key is taken: then the reservation is handed back, to be freed outside the lock, with
    /// the id holding the key (the REQ key is checked first: a duplicate request before a
    /// stale connection, as `cm_insert_remote_id` comes before `cm_insert_remote_qpn`).
    /// `hint`, from a [`ConnTables::holder`] for the same keys, saves the walks if the tables
    /// have not changed since. Filed, the entry's link comes back, for the id's `remote`
    /// (whence [`ConnTables::remove`] takes it).
    pub(crate) fn insert(
        &mut self,
        key: ReqKey,
        qp: QpKey,
        id: &Arc<CmId>,
        reservation: ConnReservation,
        hint: Option<Vacancy>,
    ) -> core::result::Result<RemoteLink, (ConnReservation, Taken)> {
        debug_assert_eq!(key.ca_guid, qp.ca_guid);
        let (reqs, qps) = (addr_of_mut!(self.reqs), addr_of_mut!(self.qps));
        // A vacancy of an unchanged generation is exact: no link of either tree moved since
        // it was found, so its places are the walks' results.
        let walks = match hint {
            Some(v) if v.gen == self.gen => (v.req, v.qp),
            _ => self.walks(&key, &qp),
        };
        let (rp, rl, qparent, ql) = match walks {
            (Walk::Vacant(rp, rl), Walk::Vacant(qparent, ql)) => (rp, rl, qparent, ql),
            (Walk::Found(e), _) => return Err((reservation, Taken::Req(Self::id_of(e)))),
            (_, Walk::Found(e)) => return Err((reservation, Taken::Qp(Self::id_of(e)))),
        };
        let e = CmBox::into_raw(CmBox::write(
            reservation.0,
            ConnEntry {
                req_link: kb::rb_node::default(),
                qp_link: kb::rb_node::default(),
                ca_guid: key.ca_guid,
                comm_id: key.comm_id,
                qpn: qp.qpn,
                id: id.clone(),
            },
        ));
        // SAFETY: `e` is live and ours; each slot is the vacant place of its key in its tree,
        // found just above with nothing changed since (linking into one tree does not touch
        // the other), so linking then recolouring keeps both trees valid. The link returned
        // is the entry's, which refers to `id`; it is the only one made for the entry (not
        // `Clone`), and the entry leaves the tables only through `remove` with it (or when
        // the tables go, after every id): so it stays live while an id holds it.
        // INVARIANT: The entry goes into both trees, under its own keys.
        let link = unsafe {
            kb::rb_link_node(addr_of_mut!((*e).req_link), rp, rl);
            kb::rb_insert_color(addr_of_mut!((*e).req_link), reqs);
            kb::rb_link_node(addr_of_mut!((*e).qp_link), qparent, ql);
            kb::rb_insert_color(addr_of_mut!((*e).qp_link), qps);
            RemoteLink::new(NonNull::new_unchecked(addr_of_mut!((*e).req_link)))
        };
        self.gen = self.gen.wrapping_add(1);
        Ok(link)
    }

    /// Takes `e`, a live entry of ours, out of both trees.
    ///
    /// # Safety
    ///
    /// `e` must be an entry of these tables.
    unsafe fn unlink(&mut self, e: *mut ConnEntry) -> CmBox<ConnEntry> {
        self.gen = self.gen.wrapping_add(1);
        // SAFETY: `e` is linked into both trees (caller, type invariant); erasing keeps each
        // tree valid.
        // INVARIANT: The entry leaves both trees and is returned to be freed.
        unsafe {
            kb::rb_erase(addr_of_mut!((*e).req_link), &mut self.reqs);
            kb::rb_erase(addr_of_mut!((*e).qp_link), &mut self.qps);
            CmBox::from_raw(e)
        }
    }

    /// Takes the entry of `link`, which [`ConnTables::insert`] returned for `id`, out of both
    /// trees, without a walk (cm.c erases through `cm_id_priv->timewait_info` likewise); the
    /// entry, which holds a reference to the id, is returned to be dropped outside the lock.
    pub(crate) fn remove(&mut self, link: RemoteLink, id: &CmId) -> Option<CmBox<ConnEntry>> {
        // The entry is reached through the tree's own pointers (from the reservation's
        // `into_raw`), not through a shared reference, as it is written and freed below.
        // SAFETY: `link` is the REQ-tree link of a live entry of the CM's tables, which are
        // `self` (there is no other `ConnTables`): its invariants. The entry is read, and taken
        // out of both trees if it refers to `id` (it always does: the link came from `insert`
        // for `id`); otherwise it stays, as does a link dropped unused, rather than leave an
        // id holding the link of a freed entry.
        unsafe {
            let e = entry_of(link.node(), Tree::Req);
            if !core::ptr::eq(&*(*e).id, id) {
                return None;
            }
            Some(self.unlink(e))
        }
    }
}

impl Drop for ConnTables {
    fn drop(&mut self) {
        // Cannot happen: the tables go at module exit, after every id has been destroyed, and
        // destroy takes an id out of them. Should it, what is left is freed, with its reference.
        if !self.reqs.rb_node.is_null() {
            pr_warn!("the remote tables were dropped with entries\n");
        }
        loop {
            // SAFETY: Our tree (type invariant).
            let first = unsafe { kb::rb_first(&self.reqs) };
            if first.is_null() {
                break;
            }
            // SAFETY: A node of `reqs` is an entry's `req_link` (type invariant).
            let e = unsafe { entry_of(first, Tree::Req) };
            // SAFETY: An entry of ours.
            drop(unsafe { self.unlink(e) });
        }
    }
}

/// Nodes taken out of the tables, to be freed outside the locks (empty for nearly every input
/// of the state machine, hence [`Slot`]s).
#[derive(Default)]
pub(crate) struct Unlinked {
    /// From the REQ and QP tables.
    pub(crate) conn: Slot<CmBox<ConnEntry>>,
    /// From the SIDR table.
    pub(crate) sidr: Slot<RBTreeNode<SidrKey, Arc<CmId>>>,
}

impl Unlinked {
    /// Frees what was taken out (the tables' references to the id go with it).
    #[inline(always)]
    pub(crate) fn free(&mut self) {
        if let Some(e) = self.conn.take() {
            drop(e);
        }
        if let Some(n) = self.sidr.take() {
            drop(n);
        }
    }
}

/// The CM's remote tables, one set for every device (cm.c's three tables under `cm.lock`).
pub(crate) struct Tables {
    /// Ids made by or answering a REQ, by the peer's comm ID (duplicate detection) and by the
    /// peer's queue pair (the stale-connection check).
    pub(crate) conns: ConnTables,
    /// Passive ids still holding an unanswered SIDR_REQ.
    pub(crate) sidrs: RemoteTable<SidrKey>,
}

/// The tables, from [`init`] (before the ib_client is registered) to [`exit`] (after it is
/// unregistered and every id is gone); NULL outside that span.
static TABLES: AtomicPtr<SpinLockIrq<Tables>> = AtomicPtr::new(core::ptr::null_mut());

/// Allocates the tables (module init, before any device is added).
pub(crate) fn init() -> Result {
    let t = Arc::pin_init(
        new_spinlock_irq!(
            Tables {
                conns: ConnTables::new(),
                sidrs: RemoteTable::new(),
            },
            "remote::TABLES"
        ),
        GFP_KERNEL,
    )?;
    TABLES.store(Arc::into_raw(t).cast_mut(), atomic::Ordering::Release);
    Ok(())
}

/// The tables' lock. Only called by code that runs for a device or an id, so between [`init`]
/// and [`exit`].
pub(crate) fn tables() -> &'static SpinLockIrq<Tables> {
    let t = TABLES.load(atomic::Ordering::Acquire);
    debug_assert!(!t.is_null());
    // SAFETY: Every caller runs for a device or an id, so after `init` stored the pointer
    // (before the ib_client that creates devices was registered) and before `exit` takes it
    // back (after the client is unregistered and every id is destroyed).
    unsafe { &*t }
}

/// Frees the tables (module exit, after every device and id is gone).
pub(crate) fn exit() {
    let t = TABLES.swap(core::ptr::null_mut(), atomic::Ordering::AcqRel);
    if !t.is_null() {
        // SAFETY: Stored by `init` from `Arc::into_raw`; swapped out once.
        drop(unsafe { Arc::from_raw(t) });
    }
}

/// Prints what one connection end costs in memory (a figure for the README's table, at module
/// load): the id (`ArcInner<CmId>`: a refcount, then the id), its primary address and its
/// remote-table entry (two `rb_node`s, the keys, an `Arc`), each rounded up to its kmalloc
/// slab. cm.c's counterpart is `cm_id_private` plus `cm_timewait_info`.
pub(crate) fn log_footprint() {
    use core::mem::size_of;
    let id = size_of::<kb::refcount_t>().next_multiple_of(8) + size_of::<CmId>();
    let av = size_of::<crate::av::Av>();
    let entry = size_of::<ConnEntry>();
    // SAFETY: Pure size computations.
    let slab = |n: usize| unsafe { kb::kmalloc_size_roundup(n) };
    let total = slab(id) + slab(av) + slab(entry);
    pr_info!(
        "connection end: id {} B (slab {}), address {} B (slab {}), remote entry {} B (slab {}): {} B\n",
        id,
        slab(id),
        av,
        slab(av),
        entry,
        slab(entry),
        total
    );
}
