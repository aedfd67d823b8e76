// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! Delivery of an id's events to its handler (`cm_process_work()` in cm.c): one at a time, in
//! arrival order, with no lock held; a handler's refusal destroys the id.

use crate::{cm_id::CmId, event::Pending};
use kernel::sync::Arc;

impl CmId {
    /// Delivers `first` and then whatever is queued meanwhile, one at a time, with no lock
    /// held (`cm_process_work`). The caller became the deliverer under the lock and hands over
    /// its use of the id; a non-zero handler return destroys the id (and consumes the caller's
    /// handle, which the CM then owns, as in cm.c).
    pub(crate) fn deliver(self: &Arc<Self>, first: Pending<'_>) {
        let mut next = Some(first);
        while let Some(ev) = next {
            let refused = self.call_handler(&ev);
            drop(ev);
            if let Err((ret, handle)) = refused {
                // No other thread may become the deliverer now (cm.c never lets `work_count`
                // drop after a refusal): the id is dead to every input but the destroy below.
                let leftover = {
                    let mut g = self.inner.lock();
                    g.destroyed = true;
                    g.events.take()
                };
                drop(leftover);
                // As cm.c: the use goes first, or destroy would wait for ourselves.
                self.put_user();
                self.destroy_with(ret);
                // The handler refused the id: the handle it held was the CM's to release.
                drop(handle);
                return;
            }
            if !self.delivered_one() {
                // Nothing came meanwhile: no lock taken, and no longer the deliverer.
                break;
            }
            // More were counted: their producers queued them under the lock.
            let leftover = {
                let mut g = self.inner.lock();
                if g.destroyed {
                    self.end_delivery(&mut g);
                    next = None;
                    Some(g.events.take())
                } else {
                    next = g.events.pop().map(Pending::Boxed);
                    if next.is_none() {
                        self.end_delivery(&mut g);
                    }
                    None
                }
            };
            drop(leftover);
        }
        self.put_user();
    }
}
