// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The address an id sends along: cm.c's `struct cm_av`.
//!
//! An [`Av`] owns its `rdma_ah_attr` and the sgid attribute reference inside it; it is built
//! before any lock is taken and moved into the id under its lock. Its constructors that
//! resolve an address on a device, `Av::from_wc` (cm.c's `cm_init_av_for_response()`) and
//! `Av::from_path` (`cm_init_av_by_path()`), are in `device.rs`, next to the reply cache and
//! the ports they use.

use crate::alloc::CmBox;
use crate::bindings;
use core::marker::PhantomData;
use kernel::{prelude::*, types::Opaque};

/// An address: port, P_Key index, ACK timeout and the address attribute.
///
/// # Invariants
///
/// `attr` was initialised by ib_core (`ib_init_ah_attr_from_wc`, `ib_init_ah_attr_from_path`
/// or a copy) and holds its references until `Drop` releases them.
pub(crate) struct Av {
    /// The P_Key index of sends.
    pub(crate) pkey_index: u16,
    /// The path's local ACK timeout exponent (`packet_life_time + 1`, later adjusted by the
    /// peer's target ACK delay).
    pub(crate) timeout: u8,
    /// The DLID to program into the QP (IB only; 0 for none).
    pub(crate) dlid_datapath: u16,
    attr: Opaque<bindings::rdma_ah_attr>,
}

// A `CmBox` takes kmalloc's alignment (`alloc::MIN_ALIGN`).
const _: () = assert!(core::mem::align_of::<Av>() <= crate::alloc::MIN_ALIGN);

// SAFETY: The attribute is plain data plus a reference-counted sgid attribute, which may be
// released from any thread.
unsafe impl Send for Av {}

impl Av {
    /// The address in a box of its own, as an id keeps it. If the allocation fails, the
    /// address is dropped, which releases its attribute.
    pub(crate) fn boxed(self) -> Result<CmBox<Self>> {
        Ok(CmBox::new(self, GFP_KERNEL)?)
    }

    /// An address of `attr` (initialised by ib_core for port `port_num`, its references now
    /// owned by the address).
    pub(crate) fn new(
        port_num: u32,
        pkey_index: u16,
        timeout: u8,
        attr: bindings::rdma_ah_attr,
    ) -> Self {
        // The port the address leaves from is the attribute's own (`port_num()`); every
        // caller built the attribute for `port_num` already, this makes it the rule.
        let mut attr = attr;
        attr.port_num = port_num;
        // INVARIANT: the caller hands over an attribute ib_core initialised.
        Self {
            pkey_index,
            timeout,
            dlid_datapath: 0,
            attr: Opaque::new(attr),
        }
    }

    /// The attribute, read-only.
    fn raw(&self) -> &bindings::rdma_ah_attr {
        // SAFETY: `attr` is initialised (type invariant). The CM writes it through `&mut self`
        // or before the address is shared; the C functions given `attr()` read it, except
        // that `rdma_create_ah` fills and restores a NULL `sgid_attr` of a GRH address, which
        // ours never has (ib_core's initialisers set it), and they run with the id's lock
        // held, as every user of an id's addresses, so no write overlaps this short borrow.
        unsafe { &*self.attr.get() }
    }

    /// The port the address leaves from.
    pub(crate) fn port_num(&self) -> u32 {
        self.raw().port_num
    }

    /// The address attribute.
    pub(crate) fn attr(&self) -> *mut bindings::rdma_ah_attr {
        self.attr.get()
    }

    /// The sgid attribute the address holds (NULL on IB without GRH).
    pub(crate) fn sgid_attr(&self) -> *const bindings::ib_gid_attr {
        // SAFETY: `attr` is initialised (type invariant).
        unsafe { bindings::ibcm_glue_ah_attr_sgid_attr(self.attr()) }
    }

    /// Whether the address is a RoCE one.
    pub(crate) fn is_roce(&self) -> bool {
        self.raw().type_ == bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE
    }

    /// Whether the address is an InfiniBand one.
    pub(crate) fn is_ib(&self) -> bool {
        self.raw().type_ == bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB
    }

    /// The GRH hop limit of the address.
    pub(crate) fn hop_limit(&self) -> u8 {
        // SAFETY: `attr` is initialised (type invariant).
        unsafe { bindings::ibcm_glue_ah_attr_hop_limit(self.attr()) }
    }

    /// A plain copy of the attribute for a QP attribute (`ib_cm_init_qp_attr`, as cm.c's
    /// struct copy): it takes no reference of the sgid attribute, which the address keeps.
    pub(crate) fn attr_copy(&self) -> bindings::rdma_ah_attr {
        // SAFETY: `attr` is initialised (type invariant); a bitwise copy of C data.
        unsafe { core::ptr::read(self.raw()) }
    }

    /// Makes this address a copy of `other`: cm.c's `cm_migrate()` copies the alternate
    /// address into the primary one and keeps the alternate. Neither allocates nor sleeps
    /// (`rdma_destroy_ah_attr` puts the old sgid attribute reference, `rdma_copy_ah_attr`
    /// takes one for the copy), so it may run under the id's spinlock with interrupts off, as
    /// `ib_cm_notify()` can be called.
    pub(crate) fn copy_from(&mut self, other: &Av) {
        self.pkey_index = other.pkey_index;
        self.timeout = other.timeout;
        self.dlid_datapath = other.dlid_datapath;
        // INVARIANT: the attribute is released once and initialised again at once from
        // `other`'s, holding references of its own.
        // SAFETY: `self.attr` is initialised (type invariant) and released exactly once here;
        // `other`'s is initialised and distinct from it (a shared and an exclusive borrow).
        unsafe {
            bindings::rdma_destroy_ah_attr(self.attr.get());
            bindings::rdma_copy_ah_attr(self.attr.get(), other.attr());
        }
    }

    /// The destination LID (`rdma_ah_get_dlid`).
    pub(crate) fn dlid(&self) -> u32 {
        // SAFETY: `attr` is initialised.
        unsafe { bindings::ibcm_glue_ah_attr_dlid(self.attr()) }
    }
}

impl Drop for Av {
    fn drop(&mut self) {
        // SAFETY: Initialised (type invariant); released once.
        unsafe { bindings::rdma_destroy_ah_attr(self.attr.get()) };
    }
}

/// A GID table entry an address is built on (`const struct ib_gid_attr *`), borrowed for
/// `'a`, or none.
///
/// # Invariants
///
/// The pointer is NULL or a live attribute for `'a`.
#[derive(Clone, Copy)]
pub(crate) struct SgidAttr<'a>(*const bindings::ib_gid_attr, PhantomData<&'a ()>);

impl SgidAttr<'_> {
    /// No attribute: the address's port is found from the path's source GID.
    pub(crate) const NONE: SgidAttr<'static> = SgidAttr(core::ptr::null(), PhantomData);

    /// An attribute a C caller passed.
    ///
    /// # Safety
    ///
    /// `p` must be NULL or a live attribute for `'a`.
    pub(crate) unsafe fn from_raw<'a>(p: *const bindings::ib_gid_attr) -> SgidAttr<'a> {
        // INVARIANT: the caller's contract.
        SgidAttr(p, PhantomData)
    }

    /// The pointer, for ib_core.
    pub(crate) fn as_ptr(self) -> *const bindings::ib_gid_attr {
        self.0
    }
}

impl Av {
    /// The attribute this address holds a reference to, borrowed with the address.
    pub(crate) fn sgid(&self) -> SgidAttr<'_> {
        // INVARIANT: the address holds the reference while it lives (type invariant).
        SgidAttr(self.sgid_attr(), PhantomData)
    }
}

/// Sets the DLID of an InfiniBand address attribute (`ib_cm_init_qp_attr`'s datapath DLID).
pub(crate) fn set_ib_dlid(attr: &mut bindings::rdma_ah_attr, dlid: u16) {
    // SAFETY: `ib` is a member of a union of plain C data (integers), valid for any bit
    // pattern; the caller checked the attribute is an IB one, whose member this is.
    unsafe { attr.__bindgen_anon_1.ib.as_mut().dlid = dlid };
}
