// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//! The allocator of the CM's own boxes: `kmalloc()` and `kfree()`, without `krealloc()`.
//!
//! 6.12's kernel crate allocates and frees every `KBox` through `krealloc()`
//! (`krealloc(NULL, size)` to allocate, `krealloc(p, 0)` to free), behind a function pointer:
//! two calls more than cm.c's `kmalloc()` / `kfree()` on each side, about 50 instructions per
//! allocation and per free (measured with `make bench-conn TBPROF=1`). The objects a connection
//! allocates (events, addresses, remote-table entries, private data) are boxed with [`Kmem`]
//! instead, which calls `kmalloc()` (through a one-line C helper, so that allocation profiling
//! sees the call) and `kfree()` itself. The memory is the same kmalloc memory either way, so
//! anything [`Kmem`] does not handle itself (a resize, flags it does not know, an alignment
//! above kmalloc's minimum) goes to the kernel crate's allocator, and `kfree()` frees both.

use crate::bindings;
use core::{alloc::Layout, mem::MaybeUninit, ptr::NonNull};
use kernel::alloc::{allocator::Kmalloc, flags, AllocError, Allocator, Flags};

/// `kmalloc()` / `kfree()` without `krealloc()`.
pub(crate) struct Kmem;

/// A box allocated with [`Kmem`].
pub(crate) type CmBox<T> = kernel::alloc::Box<T, Kmem>;

/// An alignment every kmalloc allocation has, whatever its size and slab debugging: kmalloc
/// aligns to both `ARCH_KMALLOC_MINALIGN` and `ARCH_SLAB_MINALIGN` (`<linux/slab.h>`).
/// The CM's boxes take the direct path: none needs more than this alignment (each boxed type
/// asserts it next to its definition).
pub(crate) const MIN_ALIGN: usize = bindings::ARCH_SLAB_MINALIGN;

/// The raw GFP value of the flags the CM allocates with. `Flags`' value is private to the
/// kernel crate in 6.12, so it is matched against the constants; others return `None`.
fn raw_gfp(f: Flags) -> Option<bindings::gfp_t> {
    if f == flags::GFP_KERNEL {
        Some(bindings::GFP_KERNEL)
    } else if f == flags::GFP_ATOMIC {
        Some(bindings::GFP_ATOMIC)
    } else if f == flags::GFP_NOWAIT {
        Some(bindings::GFP_NOWAIT)
    } else {
        None
    }
}

// SAFETY: A new allocation of ours comes from `kmalloc()`: at least `layout.size()` bytes,
// aligned to `MIN_ALIGN >= layout.align()`, valid until `kfree()`. Everything else goes to
// `Kmalloc`, whose guarantees hold: what it allocates is kmalloc memory, which `free` below
// releases with `kfree()` as it releases ours, and a resize or a free through `realloc` hands
// it our kmalloc memory, which `krealloc()` takes as its own.
unsafe impl Allocator for Kmem {
    #[inline]
    unsafe fn realloc(
        ptr: Option<NonNull<u8>>,
        layout: Layout,
        old_layout: Layout,
        flags: Flags,
    ) -> Result<NonNull<[u8]>, AllocError> {
        if let (None, Some(gfp)) = (ptr, raw_gfp(flags)) {
            if layout.size() != 0 && layout.align() <= MIN_ALIGN {
                // SAFETY: A plain allocation of a non-zero size.
                let p = unsafe { bindings::ibcm_glue_kmalloc(layout.size(), gfp) };
                let p = NonNull::new(p.cast::<u8>()).ok_or(AllocError)?;
                return Ok(NonNull::slice_from_raw_parts(p, layout.size()));
            }
        }
        // SAFETY: The caller's contract, which is `Kmalloc`'s; any old allocation is kmalloc
        // memory, which `krealloc()` takes.
        unsafe { Kmalloc::realloc(ptr, layout, old_layout, flags) }
    }

    #[inline]
    unsafe fn free(ptr: NonNull<u8>, layout: Layout) {
        if layout.size() != 0 {
            // SAFETY: `ptr` is a live kmalloc allocation of this allocator (caller), freed once.
            unsafe { bindings::kfree(ptr.as_ptr().cast()) };
        }
    }
}

/// An uninitialised box that cannot fail to allocate (`GFP_NOIO | __GFP_NOFAIL`), for what
/// the CM must make where cm.c cannot fail (the events it makes itself, see
/// `Event::own`). Sleeps: process context, no lock held. No I/O in reclaim: MAD send
/// completions run on ib_mad's `WQ_MEM_RECLAIM` workqueues, and reclaim waiting on I/O could
/// wait on storage over RDMA, which waits on the CM. `T` is small (kmalloc serves
/// `__GFP_NOFAIL` for up to two pages) and needs no more than kmalloc's alignment.
pub(crate) fn new_uninit_nofail<T>() -> CmBox<MaybeUninit<T>> {
    const {
        assert!(core::mem::size_of::<T>() != 0);
        assert!(core::mem::size_of::<T>() <= 2 * bindings::PAGE_SIZE);
        assert!(core::mem::align_of::<T>() <= MIN_ALIGN);
    }
    loop {
        // SAFETY: A plain allocation of a non-zero size, which the allocator does not let fail.
        let p = unsafe { bindings::ibcm_glue_kmalloc_nofail(core::mem::size_of::<T>()) };
        if let Some(p) = NonNull::new(p.cast::<MaybeUninit<T>>()) {
            // SAFETY: kmalloc memory of `T`'s size and (kmalloc's) alignment, owned here;
            // `Kmem` frees it with `kfree()`.
            return unsafe { CmBox::from_raw(p.as_ptr()) };
        }
    }
}

/// An uninitialised box of `T` at the start of a kmalloc allocation of `size >= size_of::<T>()`
/// bytes, and a pointer to the bytes after `T` (a flexible array that the box's owner manages
/// and must not use after the box is dropped). The box frees the whole allocation: `kfree()`
/// takes no size. `T` needs no more than kmalloc's alignment.
pub(crate) fn new_uninit_with_tail<T>(
    size: usize,
    flags: Flags,
) -> Result<(CmBox<MaybeUninit<T>>, NonNull<u8>), AllocError> {
    const {
        assert!(core::mem::size_of::<T>() != 0);
        assert!(core::mem::align_of::<T>() <= MIN_ALIGN);
    }
    let gfp = raw_gfp(flags).ok_or(AllocError)?;
    if size < core::mem::size_of::<T>() {
        return Err(AllocError);
    }
    // SAFETY: A plain allocation of a non-zero size.
    let p = unsafe { bindings::ibcm_glue_kmalloc(size, gfp) };
    let p = NonNull::new(p.cast::<u8>()).ok_or(AllocError)?;
    // SAFETY: kmalloc memory of at least `T`'s size and kmalloc's alignment, owned here; `Kmem`
    // frees it with `kfree()`, which frees the whole allocation whatever layout it is given.
    // `size_of::<T>() <= size`: the tail starts inside the allocation or at its end.
    let (b, tail) = unsafe {
        (
            CmBox::from_raw(p.as_ptr().cast::<MaybeUninit<T>>()),
            NonNull::new_unchecked(p.as_ptr().add(core::mem::size_of::<T>())),
        )
    };
    Ok((b, tail))
}
