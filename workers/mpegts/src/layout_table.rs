//! Reading the tables that the C layout checks (`csrc/*_layout.c`) export: each C file
//! lists `(name, value)` pairs (sizes, field offsets, constants) as the C compiler sees
//! them, and the FFI tests compare them with what Rust declares.

use libc::c_char;
use std::collections::HashMap;
use std::ffi::CStr;

#[repr(C)]
pub struct LayoutEntry {
    name: *const c_char,
    value: i64,
}

/// A C function returning a static table of entries and writing its length.
pub type LayoutFn = unsafe extern "C" fn(count: *mut usize) -> *const LayoutEntry;

/// The entries of `table` by name.
pub fn read(table: LayoutFn) -> HashMap<String, i64> {
    let mut count = 0usize;
    // SAFETY: the layout functions write the length to `count` and return a pointer to
    // a static array of `count` entries whose names are static NUL-terminated strings.
    let entries = unsafe {
        let entries = table(&mut count);
        std::slice::from_raw_parts(entries, count)
    };
    entries
        .iter()
        .map(|entry| {
            // SAFETY: see above: every name is a static C string literal.
            let name = unsafe { CStr::from_ptr(entry.name) };
            (name.to_string_lossy().into_owned(), entry.value)
        })
        .collect()
}
