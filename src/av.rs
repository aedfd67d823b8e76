// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The address an id sends along: cm.c's `struct cm_av`.
//!
//! Stands for `cm_init_av_for_response()` (from a received MAD's work completion) and
//! `cm_init_av_by_path()` (from a path record) in cm.c. An [`Av`] owns its `rdma_ah_attr` and
//! the sgid attribute reference inside it; it is built before any lock is taken and moved
//! into the id under its lock.

use crate::alloc::CmBox;
use crate::{bindings, device::CmDevice, logic::timeout};
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

// SAFETY: The attribute is plain data plus a reference-counted sgid attribute, which may be
// released from any thread.
unsafe impl Send for Av {}
// SAFETY: See `Send`; shared access only reads.
unsafe impl Sync for Av {}

impl Av {
    /// The sender of a received MAD (`cm_init_av_for_response`): a copy of the device's cached
    /// address of that sender (`reply_ah.rs`), or resolved here. May sleep. Returned by value:
    /// a REQ's sender address lives only while the passive id's own address is built (cm.c
    /// builds both in the id's embedded `cm_av`); [`Av::boxed`] keeps one.
    ///
    /// # Safety
    ///
    /// `wc` and `grh` must be valid for the call, which must run in `dev`'s receive work.
    pub(crate) unsafe fn from_wc(
        dev: &CmDevice,
        port_num: u32,
        wc: *const bindings::ib_wc,
        grh: *const bindings::ib_grh,
    ) -> Result<Self> {
        let agent = dev
            .port(port_num)
            .map_or(core::ptr::null_mut(), |p| p.agent());
        let cached = if agent.is_null() {
            None
        } else {
            // SAFETY: The agent is registered while receive work runs (caller).
            unsafe { dev.reply_addr(agent, wc, grh) }?
        };
        let mut attr = core::mem::MaybeUninit::<bindings::rdma_ah_attr>::uninit();
        if let Some(cached) = cached {
            // SAFETY: `attr` is ours and holds nothing yet.
            unsafe { cached.copy_attr_to(attr.as_mut_ptr()) };
        } else {
            // SAFETY: Live device, valid completion and GRH; `attr` is ours to initialise.
            let ret = unsafe {
                bindings::ib_init_ah_attr_from_wc(
                    dev.ib_dev(),
                    port_num,
                    wc,
                    grh,
                    attr.as_mut_ptr(),
                )
            };
            if ret != 0 {
                return Err(Error::from_errno(ret));
            }
        }
        // SAFETY: `wc` is valid (caller contract).
        let pkey_index = unsafe { (*wc).pkey_index };
        // INVARIANT: initialised just above; an `rdma_ah_attr` holds no pointer to itself.
        // SAFETY: Initialised above.
        let attr = unsafe { attr.assume_init() };
        Ok(Self::new(port_num, pkey_index, 0, attr))
    }

    /// The address a path record describes (`cm_init_av_by_path`): the port of `sgid_attr`
    /// (or of the path's source GID), the P_Key's index, `packet_life_time + 1`. May sleep.
    ///
    /// # Safety
    ///
    /// `path` must be valid; `sgid_attr` NULL or a live attribute of `dev`'s device.
    pub(crate) unsafe fn from_path(
        dev: &CmDevice,
        path: *mut bindings::sa_path_rec,
        sgid_attr: *const bindings::ib_gid_attr,
    ) -> Result<CmBox<Self>> {
        let mut attr = core::mem::MaybeUninit::<bindings::rdma_ah_attr>::uninit();
        let (mut port_num, mut pkey_index) = (0u32, 0u16);
        // SAFETY: Valid device, path and attribute (caller); outputs are ours.
        let ret = unsafe {
            bindings::ibcm_glue_av_by_path(
                dev.ib_dev(),
                path,
                sgid_attr,
                attr.as_mut_ptr(),
                &mut port_num,
                &mut pkey_index,
            )
        };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        if dev.port(port_num).is_none() {
            // SAFETY: Initialised above; released once.
            unsafe { bindings::rdma_destroy_ah_attr(attr.as_mut_ptr()) };
            return Err(EINVAL);
        }
        // SAFETY: `path` is valid (caller).
        let life = unsafe { (*path).packet_life_time };
        // SAFETY: Initialised above.
        Self::new(port_num, pkey_index, timeout::av_timeout(life), unsafe {
            attr.assume_init()
        })
        .boxed()
    }

    /// The address in a box of its own, as an id keeps it. If the allocation fails, the
    /// address is dropped, which releases its attribute.
    pub(crate) fn boxed(self) -> Result<CmBox<Self>> {
        Ok(CmBox::new(self, GFP_KERNEL)?)
    }

    fn new(port_num: u32, pkey_index: u16, timeout: u8, attr: bindings::rdma_ah_attr) -> Self {
        // The port the address leaves from is the attribute's own (`port_num()`); every
        // caller built the attribute for `port_num` already, this makes it the rule.
        let mut attr = attr;
        attr.port_num = port_num;
        Self {
            pkey_index,
            timeout,
            dlid_datapath: 0,
            attr: Opaque::new(attr),
        }
    }

    /// The port the address leaves from.
    pub(crate) fn port_num(&self) -> u32 {
        // SAFETY: `attr` is initialised (type invariant); only the CM writes it, and not
        // while shared.
        unsafe { (*self.attr.get()).port_num }
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
