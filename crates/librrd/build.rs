//! Gives the cdylib librrd 1.7.2's soname, so programs linked against
//! Debian's librrd8 (`NEEDED librrd.so.8`) load it in its place.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librrd.so.8");
}
