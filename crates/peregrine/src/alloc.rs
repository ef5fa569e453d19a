//! The global allocator: mimalloc, asked as C's `malloc` is asked.
//!
//! The `mimalloc` crate's `GlobalAlloc` hands every request to `mi_malloc_aligned`, whose fast
//! path (mimalloc 3) serves only blocks of at most 1 KiB; a larger block, even one that needs
//! no more than 8-byte alignment, took the generic aligned path, which over-allocates by the
//! alignment and marks the page as holding interior pointers (about 240 instructions an
//! allocation, and a slower free: Callgrind, YCSB C, 2.35 such allocations a read, among them
//! the response buffer). mimalloc's plain calls already return 16-byte aligned blocks for
//! every size of 16 bytes or more (`MI_MAX_ALIGN_SIZE`), so a request whose alignment that
//! covers goes to `mi_malloc`/`mi_zalloc`/`mi_realloc`, by the rule Rust's own `System`
//! allocator applies to `malloc`; only stricter alignments take the aligned calls.
//!
//! Unsafe code, allowed in this module alone: implementing `GlobalAlloc` is an unsafe trait
//! calling the allocator's C functions, with no other way to write it.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};

/// The alignment mimalloc's plain calls guarantee for blocks of at least this many bytes.
const MIN_ALIGN: usize = 16;

/// Whether `malloc`'s own alignment serves an `align`-aligned block of `size` bytes.
fn plain(size: usize, align: usize) -> bool {
    align <= MIN_ALIGN && align <= size
}

pub struct Mimalloc;

/// A block for `layout` from `plain_call` where `malloc`'s alignment serves it, else from
/// `aligned_call`.
///
/// # Safety
/// The calls are mimalloc's allocation functions of those signatures (they take any size and
/// a power-of-two alignment, `Layout`'s).
#[inline]
unsafe fn block(
    layout: Layout,
    plain_call: unsafe extern "C" fn(usize) -> *mut c_void,
    aligned_call: unsafe extern "C" fn(usize, usize) -> *mut c_void,
) -> *mut u8 {
    // SAFETY: the caller passes mimalloc's functions.
    unsafe {
        if plain(layout.size(), layout.align()) {
            plain_call(layout.size()) as *mut u8
        } else {
            aligned_call(layout.size(), layout.align()) as *mut u8
        }
    }
}

// SAFETY: every call returns mimalloc's block (or null) for the layout asked, aligned as the
// layout requires: the plain calls only where `plain` holds (16-byte alignment for blocks of
// 16 bytes or more, the natural alignment of smaller ones, which `align <= size` covers);
// mimalloc frees and reallocates any of its blocks whatever call made them.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `block`'s.
        unsafe { block(layout, mi_malloc, mi_malloc_aligned) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `block`'s.
        unsafe { block(layout, mi_zalloc, mi_zalloc_aligned) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (`GlobalAlloc`'s contract).
        unsafe { mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout`; the new block keeps its
        // alignment by the same rule as `alloc`.
        unsafe {
            if plain(new_size, layout.align()) {
                mi_realloc(ptr as *mut c_void, new_size) as *mut u8
            } else {
                mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of every size class up to past the 1 KiB fast path, at every alignment a layout
    /// can ask up to a page, come back aligned, zeroed when asked, and keep their bytes
    /// through a reallocation that moves them across the plain/aligned boundary.
    #[test]
    fn blocks_are_aligned_as_asked() {
        let a = Mimalloc;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 128, 4096] {
            for size in [
                1usize, 7, 8, 15, 16, 24, 40, 1000, 1024, 1025, 1100, 4000, 70_000,
            ] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: non-zero sizes; each block freed once with its layout.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    p.write_bytes(0xa5, size);
                    let q = a.realloc(p, layout, size * 3);
                    assert_eq!(q as usize % align, 0, "realloc size {size} align {align}");
                    assert!(std::slice::from_raw_parts(q, size)
                        .iter()
                        .all(|&b| b == 0xa5));
                    a.dealloc(q, Layout::from_size_align(size * 3, align).unwrap());
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!(std::slice::from_raw_parts(z, size).iter().all(|&b| b == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
