// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The entry layer (L5): every function C calls into the CM. The 16 exports (`abi.rs`), the
//! ib_client and sysfs callbacks (`client.rs`), the MAD agents' receive and send-completion
//! callbacks (`mad_agent.rs`), work functions and the RCU callback (`work.rs`), the debugfs
//! files (`debugfs.rs`) and the white-box KUnit suites (`kunit.rs`, test builds). They check
//! their C arguments and call down; nothing below imports them.

pub(crate) mod abi;
pub(crate) mod client;
pub(crate) mod debugfs;
#[cfg(ibcm_kunit)]
mod kunit;
pub(crate) mod mad_agent;
pub(crate) mod work;
