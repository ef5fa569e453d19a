//! PasswordAuthenticator's side of a connection: the SASL PLAIN token, the throttle of failed
//! logins per client address, and the answer (AUTH_SUCCESS or BadCredentials).
//!
//! The password check itself (bcrypt, the verified-credentials cache) is the engine's
//! (`engine::auth`); what is per client address or per connection lives here.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use engine::auth::MAX_CREDENTIAL_BYTES;
use proto::error::DbError;

/// The class announced in AUTHENTICATE (drivers pick their SASL mechanism by it).
pub const PASSWORD_AUTHENTICATOR: &str = "org.apache.cassandra.auth.PasswordAuthenticator";

/// Addresses tracked at most; past this, expired entries are swept, and if none expired the
/// oldest tracked address is forgotten (so a flood of addresses cannot grow memory).
const MAX_TRACKED_ADDRESSES: usize = 100_000;

fn bad(message: impl Into<String>) -> DbError {
    DbError::BadCredentials {
        message: message.into(),
    }
}

/// Decodes a SASL PLAIN token (`[authzid] NUL authcid NUL password`) as Cassandra's
/// `PlainTextSaslAuthenticator` does, reading from the end; with its messages.
pub fn decode_plain(token: Option<&[u8]>) -> Result<(String, String), DbError> {
    let bytes = token.unwrap_or(&[]);
    if bytes.len() > 2 * MAX_CREDENTIAL_BYTES + 2 {
        return Err(bad(format!(
            "Credentials are too long ({} bytes; at most {} each for the name and the password)",
            bytes.len(),
            MAX_CREDENTIAL_BYTES
        )));
    }
    let mut user: Option<&[u8]> = None;
    let mut pass: Option<&[u8]> = None;
    let mut end = bytes.len();
    for i in (0..bytes.len()).rev() {
        if bytes[i] != 0 {
            continue;
        }
        if pass.is_none() {
            pass = Some(&bytes[i + 1..end]);
        } else if user.is_none() {
            user = Some(&bytes[i + 1..end]);
        } else {
            return Err(bad(
                "Credential format error: username or password is empty or contains NUL(\\0) character",
            ));
        }
        end = i;
    }
    let pass = pass
        .filter(|p| !p.is_empty())
        .ok_or_else(|| bad("Password must not be null"))?;
    let user = user
        .filter(|u| !u.is_empty())
        .ok_or_else(|| bad("Authentication ID must not be null"))?;
    Ok((
        String::from_utf8_lossy(user).into_owned(),
        String::from_utf8_lossy(pass).into_owned(),
    ))
}

/// Failed logins per client address; past `max_failures` within `window`, attempts are
/// refused without checking the password until the window since the first failure ends.
pub struct Throttle {
    max_failures: u32,
    window: Duration,
    failures: Mutex<HashMap<IpAddr, (u32, Instant)>>,
}

impl Throttle {
    pub fn new(max_failures: u32, window: Duration) -> Self {
        Throttle {
            max_failures,
            window,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// `Err` with the refusal if `ip` is over its limit at `now`.
    pub fn check(&self, ip: IpAddr, now: Instant) -> Result<(), DbError> {
        let mut map = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(&(count, since)) = map.get(&ip) else {
            return Ok(());
        };
        let elapsed = now.saturating_duration_since(since);
        if elapsed >= self.window {
            map.remove(&ip);
            return Ok(());
        }
        if count >= self.max_failures {
            let wait = (self.window - elapsed).as_secs().max(1);
            return Err(bad(format!(
                "Too many failed login attempts from {ip} ({count} in {}s); try again in {wait}s",
                self.window.as_secs()
            )));
        }
        Ok(())
    }

    pub fn failed(&self, ip: IpAddr, now: Instant) {
        let mut map = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= MAX_TRACKED_ADDRESSES && !map.contains_key(&ip) {
            let window = self.window;
            map.retain(|_, (_, since)| now.saturating_duration_since(*since) < window);
            if map.len() >= MAX_TRACKED_ADDRESSES {
                if let Some(oldest) = map.iter().min_by_key(|(_, (_, s))| *s).map(|(k, _)| *k) {
                    map.remove(&oldest);
                }
            }
        }
        let e = map.entry(ip).or_insert((0, now));
        if now.saturating_duration_since(e.1) >= self.window {
            *e = (0, now);
        }
        e.0 += 1;
    }

    pub fn succeeded(&self, ip: IpAddr) {
        self.failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&ip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_tokens_decode_as_cassandra_reads_them() {
        assert_eq!(
            decode_plain(Some(b"\0alice\0pw")).unwrap(),
            ("alice".to_string(), "pw".to_string())
        );
        assert_eq!(
            decode_plain(Some(b"authz\0alice\0pw")).unwrap(),
            ("alice".to_string(), "pw".to_string())
        );
        let msg = |t: Option<&[u8]>| decode_plain(t).unwrap_err().message().to_string();
        assert_eq!(msg(Some(b"\0alice\0")), "Password must not be null");
        assert_eq!(msg(Some(b"nothing")), "Password must not be null");
        assert_eq!(msg(None), "Password must not be null");
        assert_eq!(msg(Some(b"\0\0pw")), "Authentication ID must not be null");
        assert!(msg(Some(b"a\0b\0c\0d")).starts_with("Credential format error"));
        let huge = vec![b'x'; 3 * MAX_CREDENTIAL_BYTES];
        assert!(msg(Some(&huge)).contains("too long"));
        assert!(matches!(
            decode_plain(Some(b"\0alice\0pw\xff")),
            Ok((_, p)) if p.ends_with('\u{fffd}')
        ));
    }

    /// Arbitrary tokens never panic; tokens built from a name and password without NUL decode
    /// back to them (a deterministic stand-in for a fuzz target: the decoder is tiny).
    #[test]
    fn arbitrary_tokens_decode_or_fail_cleanly() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let len = (next() % 40) as usize;
            let token: Vec<u8> = (0..len)
                .map(|_| match next() % 4 {
                    0 => 0,
                    _ => (next() % 256) as u8,
                })
                .collect();
            let _ = decode_plain(Some(&token));
            let user: String = (0..1 + next() % 8)
                .map(|_| (b'a' + (next() % 26) as u8) as char)
                .collect();
            let pass: String = (0..1 + next() % 8)
                .map(|_| (b'A' + (next() % 26) as u8) as char)
                .collect();
            let built = [
                b"authz\0".as_slice(),
                user.as_bytes(),
                b"\0",
                pass.as_bytes(),
            ]
            .concat();
            assert_eq!(decode_plain(Some(&built)).unwrap(), (user, pass));
        }
    }

    #[test]
    fn throttle_refuses_after_the_limit_until_the_window_ends() {
        let t = Throttle::new(3, Duration::from_secs(60));
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(t.check(ip, t0).is_ok());
            t.failed(ip, t0);
        }
        let e = t.check(ip, t0 + Duration::from_secs(1)).unwrap_err();
        assert!(
            e.message().contains("Too many failed login attempts"),
            "{e}"
        );
        assert!(
            t.check(other, t0).is_ok(),
            "another address is not throttled"
        );
        assert!(t.check(ip, t0 + Duration::from_secs(61)).is_ok());
        t.failed(ip, t0 + Duration::from_secs(62));
        t.succeeded(ip);
        assert!(t.check(ip, t0 + Duration::from_secs(62)).is_ok());
    }
}
