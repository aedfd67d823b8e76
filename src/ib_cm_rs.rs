// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! ib_cm: the InfiniBand connection manager, rewritten in Rust as a drop-in replacement for
//! `drivers/infiniband/core/cm.c`.
//!
//! The module exports the 16 symbols of the in-tree `ib_cm.ko` with the C ABI of
//! `<rdma/ib_cm.h>` (`abi.rs`, exported from `glue.c`), registers the ib_client "cm" that keeps
//! per-device state (`device.rs`), and keeps each device's listeners in its own tree
//! (`listen.rs`). `Documentation/design.rst` maps the files; `Documentation/locking.rst`
//! describes the locks.

use kernel::prelude::*;

mod abi;
mod alloc;
mod av;
mod bindings;
mod cm_id;
mod comm_id;
mod conn;
mod debugfs;
mod device;
mod error;
mod event;
#[cfg(ibcm_kunit)]
mod kunit;
mod listen;
mod lock;
mod logic;
mod port;
mod recv;
mod remote;
mod reply_ah;
mod send;
mod slot;
mod timewait;
mod trace;
mod use_count;

module! {
    type: IbCm,
    name: "ib_cm",
    author: "The ib_cm-rs developers",
    description: "InfiniBand CM",
    license: "Dual BSD/GPL",
}

/// The loaded module: holds the ib_client registration.
struct IbCm;

impl kernel::Module for IbCm {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        comm_id::init();
        cm_id::log_footprint();
        remote::init()?;
        if let Err(e) = recv::init_wq() {
            remote::exit();
            return Err(e);
        }
        debugfs::init();
        if let Err(e) = device::register_client() {
            debugfs::exit();
            recv::destroy_wq();
            remote::exit();
            return Err(e);
        }
        Ok(IbCm)
    }
}

impl Drop for IbCm {
    fn drop(&mut self) {
        device::unregister_client();
        debugfs::exit();
        recv::destroy_wq();
        // Deferred comm-table references hold device state: let them go before the module.
        comm_id::barrier();
        if !comm_id::empty() {
            pr_warn!("module unloaded with local comm IDs still allocated\n");
        }
        remote::exit();
    }
}
