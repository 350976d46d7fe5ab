//! Build script of the ingest worker: links Debian's libsrt (1.5.1) and librist
//! (0.2.7) and compiles `csrc/srt_layout.c` and `csrc/rist_layout.c`, the C side of the
//! layout checks that prove the hand-written declarations in `src/srt/ffi.rs` and
//! `src/rist/ffi.rs` match `<srt/srt.h>` and `<librist/librist.h>`.

use std::path::{Path, PathBuf};

/// A C library strom links, with the C file that checks the hand-written declarations.
struct Library {
    /// Prefix of the `<PREFIX>_INCLUDE_DIR` / `<PREFIX>_LIB_DIR` overrides.
    env_prefix: &'static str,
    /// The header, relative to an include directory.
    header: &'static str,
    /// The library's link name (`srt` for `libsrt.so`).
    name: &'static str,
    /// The layout check, relative to the crate.
    layout_check: &'static str,
    /// What to install when the library is missing.
    hint: &'static str,
}

const LIBRARIES: [Library; 2] = [
    Library {
        env_prefix: "SRT",
        header: "srt/srt.h",
        name: "srt",
        layout_check: "csrc/srt_layout.c",
        hint: "install the Debian package `libsrt-openssl-dev` (apt-get install \
               libsrt-openssl-dev), or point SRT_INCLUDE_DIR / SRT_LIB_DIR at a libsrt 1.5 \
               installation",
    },
    Library {
        env_prefix: "RIST",
        header: "librist/librist.h",
        name: "rist",
        layout_check: "csrc/rist_layout.c",
        hint: "install the Debian package `librist-dev` (apt-get install librist-dev), or \
               point RIST_INCLUDE_DIR / RIST_LIB_DIR at a librist 0.2 installation",
    },
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for library in &LIBRARIES {
        link(library);
    }
}

/// Finds `library`'s header and shared library, links it and compiles its layout check;
/// fails the build naming the package to install when anything is missing.
fn link(library: &Library) {
    let Library {
        env_prefix,
        header,
        name,
        layout_check,
        hint,
    } = library;
    let include_var = format!("{env_prefix}_INCLUDE_DIR");
    let lib_var = format!("{env_prefix}_LIB_DIR");
    println!("cargo:rerun-if-changed={layout_check}");
    println!("cargo:rerun-if-env-changed={include_var}");
    println!("cargo:rerun-if-env-changed={lib_var}");

    let include_dirs: Vec<PathBuf> = match std::env::var_os(&include_var) {
        Some(dir) => vec![PathBuf::from(dir)],
        None => vec![
            PathBuf::from("/usr/include"),
            PathBuf::from("/usr/local/include"),
        ],
    };
    let Some(include_dir) = include_dirs.iter().find(|dir| dir.join(header).is_file()) else {
        fail(&format!(
            "the header {header} was not found in {include_dirs:?}: {hint}"
        ));
    };
    println!(
        "cargo:rerun-if-changed={}",
        include_dir.join(header).display()
    );

    let lib_dirs = library_dirs(&lib_var);
    let (shared, archive) = (format!("lib{name}.so"), format!("lib{name}.a"));
    let Some(lib_dir) = lib_dirs
        .iter()
        .find(|dir| dir.join(&shared).exists() || dir.join(&archive).exists())
    else {
        fail(&format!("{shared} was not found in {lib_dirs:?}: {hint}"));
    };
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=dylib={name}");

    let mut build = cc::Build::new();
    build
        .file(layout_check)
        .include(include_dir)
        .warnings(true)
        .extra_warnings(true);
    if let Err(e) = build.try_compile(&format!("strom_{name}_layout")) {
        fail(&format!(
            "compiling {layout_check} against {}/{header} failed ({e}): {hint}",
            include_dir.display()
        ));
    }
}

/// `$override_var` when set, else the usual system library directories.
fn library_dirs(override_var: &str) -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os(override_var) {
        return vec![PathBuf::from(dir)];
    }
    let mut dirs = Vec::new();
    // Debian multiarch: x86_64-unknown-linux-gnu -> /usr/lib/x86_64-linux-gnu.
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let triplet = match arch.as_str() {
        "x86" => format!("i386-{os}-{env}"),
        "arm" => format!("arm-{os}-{env}eabihf"),
        _ => format!("{arch}-{os}-{env}"),
    };
    dirs.push(Path::new("/usr/lib").join(triplet));
    for dir in ["/usr/lib", "/usr/lib64", "/usr/local/lib"] {
        dirs.push(PathBuf::from(dir));
    }
    dirs
}

fn fail(message: &str) -> ! {
    println!("cargo:warning={message}");
    eprintln!("error: {message}");
    std::process::exit(1);
}
