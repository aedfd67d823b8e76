// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! ib_cm: the InfiniBand connection manager, rewritten in Rust as a drop-in replacement for
//! `drivers/infiniband/core/cm.c`.
//!
//! The module exports the 16 symbols of the in-tree `ib_cm.ko` with the C ABI of
//! `<rdma/ib_cm.h>` (`entry/abi.rs`, exported from `glue.c`), registers the ib_client "cm"
//! that keeps per-device state (`entry/client.rs`, `device.rs`), and keeps each device's
//! listeners in its own tree (`listen.rs`). `Documentation/design.rst` maps the files; `Documentation/locking.rst`
//! describes the locks.

use kernel::prelude::*;

mod ah;
mod alloc;
mod av;
mod backlog;
mod bindings;
mod cm_id;
mod comm_id;
mod comm_index;
mod conn;
mod device;
mod entry;
mod error;
mod event;
mod listen;
mod lock;
mod logic;
mod path;
mod port;
mod recv;
mod recv_wc;
mod remote;
mod reply_ah;
mod send;
mod send_pool;
mod slot;
mod timewait;
mod trace;
mod tunables;
mod tw_queue;
mod use_count;
mod wq;

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
        remote::log_footprint();
        remote::init()?;
        if let Err(e) = wq::init() {
            remote::exit();
            return Err(e);
        }
        entry::debugfs::init();
        if let Err(e) = entry::client::register_client() {
            entry::debugfs::exit();
            wq::destroy();
            remote::exit();
            return Err(e);
        }
        Ok(IbCm)
    }
}

impl Drop for IbCm {
    fn drop(&mut self) {
        entry::client::unregister_client();
        entry::debugfs::exit();
        wq::destroy();
        // Deferred comm-table references hold device state: let them go before the module.
        comm_id::barrier();
        if !comm_id::empty() {
            pr_warn!("module unloaded with local comm IDs still allocated\n");
        }
        remote::exit();
    }
}
