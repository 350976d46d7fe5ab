//! Raw HTTP/1.1 requests on a connection kept open, for tests that must keep one
//! connection across a flood (a viewer that already holds its connection).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// One GET on a kept-alive connection: status and body.
pub fn keep_alive_get(
    writer: &mut TcpStream,
    reader: &mut BufReader<TcpStream>,
    path: &str,
    user_agent: &str,
) -> (u16, String) {
    // One write: a request split over several small writes waits on delayed ACKs.
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: {user_agent}\r\nAccept: */*\r\n\r\n"
    );
    writer.write_all(request.as_bytes()).unwrap();
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    (status, String::from_utf8_lossy(&body).into_owned())
}
