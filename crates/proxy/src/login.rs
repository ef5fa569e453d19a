//! Logins: the proxy announces Cassandra's PasswordAuthenticator when the upstream requires
//! authentication, and checks a client's SASL PLAIN credentials by logging in upstream with
//! them. A verified login is trusted for [`CREDENTIALS_TTL`]; the pools of a role log in
//! upstream with its credentials.

use std::sync::PoisonError;
use std::time::{Duration, Instant};

use bytes::Bytes;
use proto::error::DbError;
use proto::request::Request;
use proto::response::Response;
use server::ConnState;

use crate::upstream::{Connection, Credentials, UpstreamError};
use crate::ProxyBackend;

/// The authenticator class Cassandra's PasswordAuthenticator announces.
pub(crate) const PASSWORD_AUTHENTICATOR: &str = "org.apache.cassandra.auth.PasswordAuthenticator";

/// How long a login verified upstream is trusted before it is checked upstream again.
const CREDENTIALS_TTL: Duration = Duration::from_secs(300);

impl ProxyBackend {
    pub(crate) fn auth_required(&self) -> bool {
        self.auth_class
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// AUTH_RESPONSE: SASL PLAIN, checked by logging in upstream (then trusted for
    /// `CREDENTIALS_TTL`).
    pub(crate) async fn login(&self, conn: &ConnState, token: Option<Bytes>) -> Response {
        let token = token.unwrap_or_default();
        let mut parts = token.split(|&b| b == 0);
        let (Some(_authz), Some(user), Some(_pass)) = (parts.next(), parts.next(), parts.next())
        else {
            return Response::Error(DbError::protocol(
                "Authentication failed: expected a SASL PLAIN token (authzid NUL user NUL password)",
            ));
        };
        let user = String::from_utf8_lossy(user).into_owned();
        let creds = Credentials {
            user: user.clone(),
            token: token.clone(),
        };
        let known = self
            .logins
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&user)
            .is_some_and(|(c, at)| *c == creds && at.elapsed() < CREDENTIALS_TTL);
        if !known {
            let mut last = None;
            for &addr in self.hosts.iter() {
                match Connection::open(
                    addr,
                    conn.version(),
                    Some(&creds),
                    None,
                    self.settings.connect_timeout,
                    None,
                    self.settings.tls.as_ref(),
                )
                .await
                {
                    Ok(_) => {
                        last = None;
                        break;
                    }
                    Err(UpstreamError::Rejected(e)) => return Response::Error(e),
                    Err(e) => last = Some(e),
                }
            }
            if let Some(e) = last {
                return self.upstream_error(e, &Request::AuthResponse(None), false);
            }
            let mut logins = self.logins.write().unwrap_or_else(PoisonError::into_inner);
            let changed = logins.get(&user).is_some_and(|(c, _)| *c != creds);
            logins.insert(user.clone(), (creds, Instant::now()));
            drop(logins);
            if changed {
                // Pools of this role log in with the new password from now on.
                self.pools.retain(|k| k.0.as_deref() != Some(user.as_str()));
            }
        }
        conn.set_role(&user);
        Response::AuthSuccess(None)
    }
}
