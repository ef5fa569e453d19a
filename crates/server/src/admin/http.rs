//! The smallest HTTP/1.1 server the admin endpoint needs: one request per connection
//! (`Connection: close`), `GET`/`POST`, a `Content-Length` body, Basic authentication.
//!
//! Written here rather than taken from a crate: nothing in the dependency tree serves HTTP
//! (`cargo tree` has no hyper/axum), the endpoint serves a handful of local paths to
//! `nodetool` and a Prometheus scraper, and every size it reads is bounded below.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Largest request head (request line and headers).
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Largest request body (nodetool arguments as JSON).
const MAX_BODY_BYTES: usize = 64 * 1024;
/// A client gets this long to send its request.
pub(super) const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// One parsed request.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct HttpRequest {
    pub method: String,
    /// The path without the query string.
    pub path: String,
    pub authorization: Option<String>,
    pub body: Vec<u8>,
}

/// An answer: status, content type, body.
#[derive(Debug)]
pub(super) struct HttpResponse {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

impl HttpResponse {
    pub fn json(status: u16, body: serde_json::Value) -> Self {
        HttpResponse {
            status,
            content_type: "application/json",
            body: body.to_string(),
        }
    }

    pub fn error(status: u16, message: &str) -> Self {
        Self::json(status, serde_json::json!({ "error": message }))
    }
}

/// Reads one request; `Err` carries the answer for a malformed or oversized one.
pub(super) async fn read_request(socket: &mut TcpStream) -> Result<HttpRequest, HttpResponse> {
    let mut buf = Vec::with_capacity(1024);
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(HttpResponse::error(431, "request head too large"));
        }
        let mut chunk = [0u8; 2048];
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err(HttpResponse::error(400, "incomplete request")),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = std::str::from_utf8(&buf[..head_end])
        .map_err(|_| HttpResponse::error(400, "request head is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(HttpResponse::error(400, "malformed request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(HttpResponse::error(505, "only HTTP/1.x is served"));
    }
    let mut length = 0usize;
    let mut authorization = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(HttpResponse::error(400, "malformed header"));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value
                .parse()
                .map_err(|_| HttpResponse::error(400, "bad Content-Length"))?;
        } else if name.eq_ignore_ascii_case("authorization") {
            authorization = Some(value.to_string());
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(HttpResponse::error(501, "chunked bodies are not accepted"));
        }
    }
    if length > MAX_BODY_BYTES {
        return Err(HttpResponse::error(413, "request body too large"));
    }
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let mut chunk = [0u8; 4096];
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err(HttpResponse::error(400, "incomplete body")),
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    body.truncate(length);
    let path = target.split('?').next().unwrap_or_default().to_string();
    Ok(HttpRequest {
        method: method.to_string(),
        path,
        authorization,
        body,
    })
}

pub(super) async fn write_response(socket: &mut TcpStream, r: &HttpResponse) {
    let reason = match r.status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Error",
    };
    let auth = if r.status == 401 {
        "WWW-Authenticate: Basic realm=\"peregrine\"\r\n"
    } else {
        ""
    };
    let head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{auth}Connection: close\r\n\r\n",
        r.status,
        r.content_type,
        r.body.len()
    );
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(r.body.as_bytes()).await;
    let _ = socket.shutdown().await;
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Standard base64 (RFC 4648, with padding): the `Authorization: Basic` credentials.
pub fn base64(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Compares without stopping at the first difference (credentials).
pub(super) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(b"admin:s3cret"), "YWRtaW46czNjcmV0");
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
    }
}
