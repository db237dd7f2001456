//! What the `tree_*` tests share: rrd-web serving trees in this process,
//! and one plain HTTP/1.1 request to it.

// Each test uses a part of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

/// A server over trees, running until dropped.
pub struct Served {
    pub addr: SocketAddr,
    _rt: tokio::runtime::Runtime,
    _data: tempfile::TempDir,
}

/// Serves `config` (its Host policy: the bound address's names) on a
/// loopback port, with a GrowthForecast data directory of its own.
pub fn serve(config: rrd_web::Config) -> Served {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let data = tempfile::tempdir().unwrap();
    let addr = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let config = rrd_web::Config { hosts: rrd_web::guard::HostPolicy::for_listen(addr, None), ..config };
        let app = rrd_web::App::open_configured(data.path(), rrd_web::Writer::Embedded, config).unwrap();
        tokio::spawn(rrd_web::serve(listener, app));
        addr
    });
    Served { addr, _rt: rt, _data: data }
}

/// `method target` with `body` (JSON); the status and the body.
pub fn http(addr: SocketAddr, method: &str, target: &str, body: &str) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let split = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let status = String::from_utf8_lossy(&buf[..split]).split(' ').nth(1).unwrap().parse().unwrap();
    (status, buf[split + 4..].to_vec())
}

/// The pixels of a PNG and the samples per pixel.
pub fn pixels(png_bytes: Vec<u8>) -> (Vec<u8>, usize) {
    let mut reader = png::Decoder::new(std::io::Cursor::new(png_bytes)).read_info().expect("a PNG");
    let mut pixels = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    pixels.truncate(frame.buffer_size());
    (pixels, frame.color_type.samples())
}
