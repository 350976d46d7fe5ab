//! Build script of the ingest worker: links Debian's libsrt (1.5.1) and compiles
//! `csrc/srt_layout.c`, the C side of the layout check that proves the hand-written
//! declarations in `src/srt/ffi.rs` match `<srt/srt.h>`.

use std::path::{Path, PathBuf};

const PACKAGE_HINT: &str = "install the Debian package `libsrt-openssl-dev` \
     (apt-get install libsrt-openssl-dev), or point SRT_INCLUDE_DIR / SRT_LIB_DIR at \
     a libsrt 1.5 installation";

fn main() {
    println!("cargo:rerun-if-changed=csrc/srt_layout.c");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SRT_INCLUDE_DIR");
    println!("cargo:rerun-if-env-changed=SRT_LIB_DIR");

    let include_dirs: Vec<PathBuf> = match std::env::var_os("SRT_INCLUDE_DIR") {
        Some(dir) => vec![PathBuf::from(dir)],
        None => vec![
            PathBuf::from("/usr/include"),
            PathBuf::from("/usr/local/include"),
        ],
    };
    let Some(include_dir) = include_dirs
        .iter()
        .find(|dir| dir.join("srt/srt.h").is_file())
    else {
        fail(&format!(
            "libsrt's header srt/srt.h was not found in {include_dirs:?}: {PACKAGE_HINT}"
        ));
    };
    println!(
        "cargo:rerun-if-changed={}",
        include_dir.join("srt/srt.h").display()
    );

    let lib_dirs = library_dirs();
    let Some(lib_dir) = lib_dirs
        .iter()
        .find(|dir| dir.join("libsrt.so").exists() || dir.join("libsrt.a").exists())
    else {
        fail(&format!(
            "libsrt (libsrt.so) was not found in {lib_dirs:?}: {PACKAGE_HINT}"
        ));
    };
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=dylib=srt");

    let mut build = cc::Build::new();
    build
        .file("csrc/srt_layout.c")
        .include(include_dir)
        .warnings(true)
        .extra_warnings(true);
    if let Err(e) = build.try_compile("strom_srt_layout") {
        fail(&format!(
            "compiling csrc/srt_layout.c against {}/srt/srt.h failed ({e}): {PACKAGE_HINT}",
            include_dir.display()
        ));
    }
}

fn library_dirs() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("SRT_LIB_DIR") {
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
