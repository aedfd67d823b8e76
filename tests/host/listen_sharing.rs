// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Outcome tests of the listen path's pure rules: sequences of `ib_cm_listen()`,
//! `ib_cm_insert_listen()` and `ib_destroy_cm_id()` on one device, checked against what cm.c
//! gives the caller (the id handed back, the errno, whether the listener is still there), not
//! against a restatement of the sharing rule.
//!
//! The table below is the host stand-in for `src/listen.rs`: it strings `listen_target`,
//! `AssignAllocator::allocate` and `on_collision` together the way `ListenTable::insert`,
//! `ListenTable::release` and the errno mapping of `abi.rs` do, with a `BTreeMap` for the
//! kernel's RB-tree. The kernel file itself is covered by the KUnit suites; what this adds is
//! that every rule in `logic/service_id.rs` is exercised through the sequences a ULP runs.

use crate::logic::service_id::*;
use crate::properties::Rng;
use std::collections::BTreeMap;

/// A consumer's handler, compared by address as cm.c compares `cm_handler`.
type Handler = usize;
const H1: Handler = 0x1000;
const H2: Handler = 0x2000;
const H3: Handler = 0x3000;

/// The errno a listen call gives (`abi::listen_errno`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Errno {
    Inval,
    Busy,
    NoSpc,
}

/// What a caller holds after a successful listen call: the listening id (by identity) and the
/// service ID it listens on (`cm_id->service_id`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Handle {
    id: u32,
    sid: ServiceId,
}

/// What `ib_destroy_cm_id()` did to the listen tree.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Released {
    StillShared,
    Removed,
    NotListening,
}

#[derive(Clone, PartialEq, Eq, Debug)]
struct Listener {
    id: u32,
    handler: Handler,
    context_is_null: bool,
    share_count: u32,
}

/// The listen tree of one device, keyed by service ID.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
struct Tree(BTreeMap<ServiceId, Listener>);

impl Tree {
    /// The id listening on `sid`, if any (`cm_find_listen`).
    fn listener(&self, sid: ServiceId) -> Option<u32> {
        self.0.get(&sid).map(|l| l.id)
    }

    fn share_count(&self, sid: ServiceId) -> Option<u32> {
        self.0.get(&sid).map(|l| l.share_count)
    }

    fn handler_of(&self, sid: ServiceId) -> Option<Handler> {
        self.0.get(&sid).map(|l| l.handler)
    }
}

/// One device's listeners and its allocator (`ListenTable`).
struct Table {
    tree: Tree,
    assign: AssignAllocator,
    next_id: u32,
}

impl Table {
    fn new() -> Self {
        Self::with_allocator_at(ASSIGN)
    }

    fn with_allocator_at(next: ServiceId) -> Self {
        Self {
            tree: Tree::default(),
            assign: AssignAllocator::starting_at(next),
            next_id: 1,
        }
    }

    /// `ib_create_cm_id(handler, context)` then `ib_cm_listen(id, sid)`.
    fn listen(
        &mut self,
        handler: Handler,
        context_is_null: bool,
        sid: u64,
    ) -> Result<Handle, Errno> {
        self.insert(handler, context_is_null, None, sid)
    }

    /// `ib_cm_insert_listen(handler, sid)`: a new id with a NULL context, or a shared one.
    fn insert_listen(&mut self, handler: Handler, sid: u64) -> Result<Handle, Errno> {
        self.insert(handler, true, Some(handler), sid)
    }

    /// `cm_init_listen` (`abi::parse_service_id`) + `ListenTable::insert` + `listen_errno`.
    fn insert(
        &mut self,
        handler: Handler,
        context_is_null: bool,
        shared_handler: Option<Handler>,
        sid: u64,
    ) -> Result<Handle, Errno> {
        let errno = |e| match e {
            ServiceIdError::Reserved => Errno::Inval,
            ServiceIdError::Exhausted => Errno::NoSpc,
        };
        let sid = match listen_target(ServiceId::new(sid)).map_err(errno)? {
            ListenTarget::Fixed(s) => s,
            ListenTarget::Assign => {
                let tree = &self.tree.0;
                self.assign
                    .allocate(|s| tree.contains_key(&s))
                    .map_err(errno)?
            }
        };
        if let Some(l) = self.tree.0.get_mut(&sid) {
            return match on_collision(Some(l.handler), l.context_is_null, shared_handler) {
                Collision::Share => {
                    l.share_count += 1;
                    Ok(Handle { id: l.id, sid })
                }
                Collision::Busy => Err(Errno::Busy),
                Collision::Mismatch => Err(Errno::Inval),
            };
        }
        let id = self.next_id;
        self.next_id += 1;
        self.tree.0.insert(
            sid,
            Listener {
                id,
                handler,
                context_is_null,
                share_count: 1,
            },
        );
        Ok(Handle { id, sid })
    }

    /// `ib_destroy_cm_id()` of a listening handle (`ListenTable::release`).
    fn destroy(&mut self, h: Handle) -> Released {
        let Some(l) = self.tree.0.get_mut(&h.sid) else {
            return Released::NotListening;
        };
        if l.id != h.id {
            return Released::NotListening;
        }
        l.share_count -= 1;
        if l.share_count > 0 {
            return Released::StillShared;
        }
        self.tree.0.remove(&h.sid);
        Released::Removed
    }

    fn listener(&self, sid: ServiceId) -> Option<u32> {
        self.tree.listener(sid)
    }

    fn share_count(&self, sid: ServiceId) -> Option<u32> {
        self.tree.share_count(sid)
    }

    fn handler_of(&self, sid: ServiceId) -> Option<Handler> {
        self.tree.handler_of(sid)
    }

    fn len(&self) -> usize {
        self.tree.0.len()
    }
}

/// rdma_cm's TCP port space, port 7174 (rping's default), and two neighbours.
const S: u64 = 0x0000_0000_0106_1C06;
const S2: u64 = 0x0000_0000_0106_1C07;
const S3: u64 = 0x0100_0000_0000_0001;
const ASSIGN_SID: u64 = 0x0200_0000_0000_0000;

fn sid(v: u64) -> ServiceId {
    ServiceId::new(v)
}

/// cm.c `ib_cm_insert_listen` + `cm_destroy_id`: callers with the same handler get the same
/// id; the listener stays until the last of them destroys it; a later insert gets a new id.
#[test]
fn insert_listen_shares_until_the_last_destroy() {
    let mut t = Table::new();
    let a = t.insert_listen(H1, S).unwrap();
    let b = t.insert_listen(H1, S).unwrap();
    let c = t.insert_listen(H1, S).unwrap();
    assert_eq!((b, c), (a, a), "every caller gets the first caller's id");
    assert_eq!(a.sid, sid(S));
    assert_eq!(t.share_count(sid(S)), Some(3));

    assert_eq!(t.destroy(b), Released::StillShared);
    assert_eq!(t.listener(sid(S)), Some(a.id));
    // Still held: ib_cm_listen() of a fresh id on the same service is refused.
    assert_eq!(t.listen(H2, false, S), Err(Errno::Busy));
    assert_eq!(t.destroy(a), Released::StillShared);
    assert_eq!(t.destroy(c), Released::Removed);
    assert_eq!(t.listener(sid(S)), None);
    // A destroy too many finds nothing to release.
    assert_eq!(t.destroy(c), Released::NotListening);

    // The service is free again; the next listener is a new id with its own handler.
    let d = t.insert_listen(H2, S).unwrap();
    assert_ne!(d.id, a.id);
    assert_eq!(
        (t.share_count(sid(S)), t.handler_of(sid(S))),
        (Some(1), Some(H2))
    );
}

/// cm.c `cm_insert_listen`: "Sharing an ib_cm_id with different handlers is not supported"
/// (`-EINVAL`), and the refused call takes no share.
#[test]
fn insert_listen_with_another_handler_is_refused_and_takes_no_share() {
    let mut t = Table::new();
    let a = t.insert_listen(H1, S).unwrap();
    assert_eq!(t.insert_listen(H2, S), Err(Errno::Inval));
    assert_eq!(t.insert_listen(H3, S), Err(Errno::Inval));
    assert_eq!(t.share_count(sid(S)), Some(1));
    assert_eq!(t.handler_of(sid(S)), Some(H1));
    // One destroy is enough: the failed calls left nothing behind.
    assert_eq!(t.destroy(a), Released::Removed);
    assert_eq!(t.listener(sid(S)), None);
}

/// cm.c `cm_insert_listen`: a listener whose id carries a context (set by `ib_create_cm_id`
/// before `ib_cm_listen`) is never handed to another caller, even with the same handler.
#[test]
fn a_listener_with_a_context_is_never_shared() {
    let mut t = Table::new();
    let a = t.listen(H1, false, S).unwrap();
    assert_eq!(t.insert_listen(H1, S), Err(Errno::Inval));
    assert_eq!(t.insert_listen(H2, S), Err(Errno::Inval));
    assert_eq!(t.share_count(sid(S)), Some(1));
    assert_eq!(t.destroy(a), Released::Removed);
}

/// cm.c parity: `cm_insert_listen` looks only at the existing id's handler and context, so
/// an `ib_cm_listen()` listener created with a NULL context is shared by
/// `ib_cm_insert_listen()` with the same handler.
#[test]
fn a_null_context_ib_cm_listen_listener_is_shared_by_insert_listen() {
    let mut t = Table::new();
    let a = t.listen(H1, true, S).unwrap();
    let b = t.insert_listen(H1, S).unwrap();
    assert_eq!(b, a);
    assert_eq!(t.share_count(sid(S)), Some(2));
    assert_eq!(t.insert_listen(H2, S), Err(Errno::Inval));
    assert_eq!(t.destroy(b), Released::StillShared);
    assert_eq!(t.destroy(a), Released::Removed);
}

/// cm.c `ib_cm_listen`: it passes no shared handler, so it never shares: `-EBUSY` whatever
/// the existing listener is, and the existing listener keeps its single share.
#[test]
fn ib_cm_listen_never_shares() {
    let mut t = Table::new();
    let a = t.listen(H1, true, S).unwrap();
    assert_eq!(t.listen(H1, true, S), Err(Errno::Busy));
    assert_eq!(t.listen(H1, false, S), Err(Errno::Busy));
    let b = t.insert_listen(H2, S2).unwrap();
    assert_eq!(t.listen(H2, true, S2), Err(Errno::Busy));
    assert_eq!(
        (t.share_count(sid(S)), t.share_count(sid(S2))),
        (Some(1), Some(1))
    );
    assert_eq!(t.destroy(a), Released::Removed);
    assert_eq!(t.destroy(b), Released::Removed);
    // Once free, ib_cm_listen() succeeds.
    assert!(t.listen(H1, false, S).is_ok());
}

/// Listeners on different service IDs do not interact.
#[test]
fn service_ids_are_independent() {
    let mut t = Table::new();
    let a = t.insert_listen(H1, S).unwrap();
    let b = t.insert_listen(H2, S2).unwrap();
    let c = t.listen(H3, false, S3).unwrap();
    assert_eq!(t.destroy(b), Released::Removed);
    assert_eq!(
        (t.listener(sid(S)), t.listener(sid(S3))),
        (Some(a.id), Some(c.id))
    );
    // A handle is released only against its own service ID.
    assert_eq!(
        t.destroy(Handle {
            id: a.id,
            sid: sid(S3)
        }),
        Released::NotListening
    );
    assert_eq!(t.share_count(sid(S)), Some(1));
}

/// cm.c `cm_init_listen`: `IB_CM_ASSIGN_SERVICE_ID` gives each call the next ID of the
/// 0x02 range, starting at 0x0200000000000000 itself; two such calls never share.
#[test]
fn assign_gives_every_call_its_own_id() {
    let mut t = Table::new();
    let a = t.insert_listen(H1, ASSIGN_SID).unwrap();
    let b = t.insert_listen(H1, ASSIGN_SID).unwrap();
    let c = t.listen(H2, false, ASSIGN_SID).unwrap();
    assert_eq!(a.sid, sid(0x0200_0000_0000_0000));
    assert_eq!(b.sid, sid(0x0200_0000_0000_0001));
    assert_eq!(c.sid, sid(0x0200_0000_0000_0002));
    assert!(a.id != b.id && b.id != c.id);
    for h in [a, b, c] {
        assert_eq!(t.share_count(h.sid), Some(1));
    }
}

/// An assigned ID is not handed out again after its listener goes away (cm.c only counts
/// up), and cannot be named by a later caller: the first equals `IB_CM_ASSIGN_SERVICE_ID`,
/// which means "assign me one", and the rest are in the reserved range (`-EINVAL`).
#[test]
fn assigned_ids_are_neither_reused_nor_nameable() {
    let mut t = Table::new();
    let a = t.insert_listen(H1, ASSIGN_SID).unwrap();
    let b = t.insert_listen(H1, ASSIGN_SID).unwrap();
    assert_eq!(t.insert_listen(H1, b.sid.get()), Err(Errno::Inval));
    let c = t.insert_listen(H1, a.sid.get()).unwrap();
    assert_eq!(
        c.sid,
        sid(0x0200_0000_0000_0002),
        "naming the first assigned ID assigns anew"
    );
    assert_ne!(c.id, a.id);
    assert_eq!(t.destroy(a), Released::Removed);
    let d = t.insert_listen(H1, ASSIGN_SID).unwrap();
    assert_eq!(
        d.sid,
        sid(0x0200_0000_0000_0003),
        "a freed assigned ID is not reused"
    );
}

/// cm.c `cm_init_listen`: an ID in the 0x02 range other than `IB_CM_ASSIGN_SERVICE_ID` is
/// `-EINVAL`; nothing is inserted and the allocator does not move.
#[test]
fn reserved_ids_are_refused_without_side_effects() {
    let mut t = Table::new();
    for v in [
        0x0200_0000_0000_0001,
        0x0212_3456_789A_BCDE,
        0x02FF_FFFF_FFFF_FFFF,
    ] {
        assert_eq!(t.listen(H1, false, v), Err(Errno::Inval), "{v:#x}");
        assert_eq!(t.insert_listen(H1, v), Err(Errno::Inval), "{v:#x}");
    }
    assert_eq!(t.len(), 0);
    assert_eq!(
        t.insert_listen(H1, ASSIGN_SID).unwrap().sid,
        sid(ASSIGN_SID)
    );
}

/// Divergence from cm.c (documented in `logic/service_id.rs`): at the end of the 0x02 range
/// the allocator reports exhaustion (`-ENOSPC`) instead of wrapping into other ranges, and
/// stays exhausted after listeners go away; fixed IDs keep working.
#[test]
fn exhausted_assignment_is_enospc_and_fixed_ids_still_work() {
    let mut t = Table::with_allocator_at(sid(ASSIGN_LAST.get() - 1));
    let a = t.insert_listen(H1, ASSIGN_SID).unwrap();
    let b = t.listen(H2, false, ASSIGN_SID).unwrap();
    assert_eq!((a.sid, b.sid), (sid(ASSIGN_LAST.get() - 1), ASSIGN_LAST));
    assert_eq!(t.insert_listen(H1, ASSIGN_SID), Err(Errno::NoSpc));
    assert_eq!(t.destroy(a), Released::Removed);
    assert_eq!(t.destroy(b), Released::Removed);
    assert_eq!(t.listen(H1, false, ASSIGN_SID), Err(Errno::NoSpc));
    assert!(t.insert_listen(H1, S).is_ok());
    assert_eq!(t.len(), 1);
}

/// Random sequences of listen, insert-listen and destroy by several consumers, checked
/// against what each call must have done as seen from outside:
/// - a call on a free service ID creates a new listener with one share, owned by the caller;
/// - `ib_cm_listen()` on a live service ID fails with `-EBUSY` and changes nothing;
/// - `ib_cm_insert_listen()` on a live service ID either returns the live listener (one more
///   share, and it calls the caller's handler) or fails with `-EINVAL` and changes nothing;
///   it always shares a listener that an earlier `ib_cm_insert_listen()` with the same
///   handler created, and never one created by `ib_cm_listen()` with a context;
/// - after every step, each listener's share count equals the handles callers hold on it;
/// - destroying every handle, in any order, empties the table, the last holder removing.
#[test]
fn random_sequences_keep_outcomes_and_share_counts_consistent() {
    let handlers = [H1, H2, H3];
    let sids = [S, S2, S3, ASSIGN_SID];
    // How often each outcome came up over all seeds: each must, or the sequences are too
    // narrow to test anything.
    let mut seen = [0u32; 7];
    const NEW: usize = 0;
    const SHARED: usize = 1;
    const INVAL: usize = 2;
    const BUSY: usize = 3;
    const STILL_SHARED: usize = 4;
    const REMOVED: usize = 5;
    const DOUBLE_DESTROY: usize = 6;
    for seed in 1..300u64 {
        let mut rng = Rng::new(seed);
        let mut t = Table::new();
        let mut held: Vec<Handle> = Vec::new();
        let mut dropped: Vec<Handle> = Vec::new();
        // How each live listener came to be: (creator was insert_listen, handler, context null).
        let mut origin: BTreeMap<u32, (bool, Handler, bool)> = BTreeMap::new();
        let mut seen_ids = std::collections::BTreeSet::new();
        for step in 0..200 {
            let ctx = format!("seed {seed} step {step}");
            let before = t.tree.clone();
            match rng.next() % 5 {
                op @ (0 | 1) => {
                    let h = handlers[(rng.next() % 3) as usize];
                    let v = sids[(rng.next() % 4) as usize];
                    let null_ctx = rng.next().is_multiple_of(2);
                    let via_insert = op == 0;
                    let got = if via_insert {
                        t.insert_listen(h, v)
                    } else {
                        t.listen(h, null_ctx, v)
                    };
                    let target = (v != ASSIGN_SID).then(|| sid(v));
                    let live = target.and_then(|s| before.listener(s));
                    match (live, got) {
                        (None, Ok(hd)) => {
                            if let Some(s) = target {
                                assert_eq!(hd.sid, s, "{ctx}");
                            } else {
                                assert_eq!(
                                    hd.sid.get() >> 56,
                                    0x02,
                                    "{ctx}: assigned outside 0x02"
                                );
                                assert_eq!(
                                    before.listener(hd.sid),
                                    None,
                                    "{ctx}: assigned a live ID"
                                );
                            }
                            assert!(
                                seen_ids.insert(hd.id),
                                "{ctx}: a free ID got an old listener"
                            );
                            assert_eq!(t.share_count(hd.sid), Some(1), "{ctx}");
                            assert_eq!(t.handler_of(hd.sid), Some(h), "{ctx}");
                            origin.insert(hd.id, (via_insert, h, via_insert || null_ctx));
                            held.push(hd);
                            seen[NEW] += 1;
                        }
                        (None, Err(e)) => panic!("{ctx}: listen on a free ID failed: {e:?}"),
                        (Some(live_id), Ok(hd)) => {
                            assert!(via_insert, "{ctx}: ib_cm_listen shared a live listener");
                            assert_eq!(hd.id, live_id, "{ctx}: shared id is not the listener");
                            let s = target.unwrap();
                            assert_eq!(
                                t.share_count(s),
                                before.share_count(s).map(|c| c + 1),
                                "{ctx}"
                            );
                            assert_eq!(
                                t.handler_of(s),
                                Some(h),
                                "{ctx}: shared with another handler"
                            );
                            let (_, _, null_context) = origin[&live_id];
                            assert!(null_context, "{ctx}: shared a listener that has a context");
                            held.push(hd);
                            seen[SHARED] += 1;
                        }
                        (Some(live_id), Err(e)) => {
                            assert_eq!(t.tree, before, "{ctx}: a failed call changed the table");
                            if via_insert {
                                assert_eq!(e, Errno::Inval, "{ctx}");
                                let (by_insert, creator, _) = origin[&live_id];
                                assert!(
                                    !(by_insert && creator == h),
                                    "{ctx}: same-handler insert_listen was not shared"
                                );
                                seen[INVAL] += 1;
                            } else {
                                assert_eq!(e, Errno::Busy, "{ctx}");
                                seen[BUSY] += 1;
                            }
                        }
                    }
                }
                2 | 3 if !held.is_empty() => {
                    let i = (rng.next() as usize) % held.len();
                    let hd = held.swap_remove(i);
                    let others = held.iter().filter(|x| **x == hd).count();
                    let want = if others > 0 {
                        Released::StillShared
                    } else {
                        Released::Removed
                    };
                    assert_eq!(t.destroy(hd), want, "{ctx}");
                    if want == Released::Removed {
                        assert_eq!(t.listener(hd.sid), None, "{ctx}");
                        dropped.push(hd);
                        seen[REMOVED] += 1;
                    } else {
                        seen[STILL_SHARED] += 1;
                    }
                }
                _ => {
                    // A destroy of an id whose last share is gone (a double destroy).
                    if let Some(&hd) = dropped.last() {
                        if t.listener(hd.sid) != Some(hd.id) {
                            assert_eq!(t.destroy(hd), Released::NotListening, "{ctx}");
                            assert_eq!(t.tree, before, "{ctx}: a double destroy changed the table");
                            seen[DOUBLE_DESTROY] += 1;
                        }
                    }
                }
            }
            // Share counts are exactly the handles held.
            for (s, l) in &t.tree.0 {
                let n = held.iter().filter(|h| h.sid == *s && h.id == l.id).count();
                assert_eq!(usize::try_from(l.share_count).unwrap(), n, "{ctx}: {s:?}");
            }
            for h in &held {
                assert_eq!(
                    t.listener(h.sid),
                    Some(h.id),
                    "{ctx}: a held handle lost its listener"
                );
            }
        }
        // Everyone lets go, in random order: the table empties, the last holder removing.
        while !held.is_empty() {
            let i = (rng.next() as usize) % held.len();
            let hd = held.swap_remove(i);
            let want = if held.contains(&hd) {
                Released::StillShared
            } else {
                Released::Removed
            };
            assert_eq!(t.destroy(hd), want, "seed {seed}: teardown");
        }
        assert_eq!(
            t.len(),
            0,
            "seed {seed}: listeners left after every handle was destroyed"
        );
    }
    for (what, n) in [
        "new",
        "shared",
        "EINVAL",
        "EBUSY",
        "still shared",
        "removed",
        "double destroy",
    ]
    .iter()
    .zip(seen)
    {
        assert!(n > 0, "no sequence ever gave {what}: {seen:?}");
    }
}
