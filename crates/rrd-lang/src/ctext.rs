//! The C library's sentences for errors, as rrdtool prints them: `strerror`
//! of an `errno` ("No such file or directory"), without the "(os error N)"
//! Rust appends. One copy for the engine's messages, the daemon's replies
//! and the client's.
//!
//! Deliberately absent: locale handling; rrdtool's texts are the "C"
//! locale's, which is what the process runs in (Rust never calls
//! `setlocale`).

/// `strerror(code)`: the C library's sentence for an errno value.
pub fn strerror(code: i32) -> String {
    without_os_error(std::io::Error::from_raw_os_error(code).to_string())
}

/// The C library's sentence for an I/O error (its errno's `strerror`); an
/// error that carries no errno keeps its own text.
pub fn io_text(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => strerror(code),
        None => e.to_string(),
    }
}

fn without_os_error(text: String) -> String {
    match text.rfind(" (os error ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_the_c_librarys() {
        assert_eq!(strerror(libc::ENOENT), "No such file or directory");
        assert_eq!(strerror(libc::ENOBUFS), "No buffer space available");
        assert_eq!(io_text(&std::io::Error::from_raw_os_error(libc::EACCES)), "Permission denied");
        let custom = std::io::Error::other("short write");
        assert_eq!(io_text(&custom), "short write");
        assert_eq!(io_text(&std::io::ErrorKind::UnexpectedEof.into()), "unexpected end of file");
    }
}
