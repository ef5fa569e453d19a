//! `LocalBackend`: standalone mode, the embedded engine behind the [`Backend`] trait.
//!
//! Placeholder until the engine is wired in: every request is answered with a ServerError.

use proto::error::DbError;
use proto::request::Request;
use proto::response::Response;

use crate::backend::{Backend, ConnState};
use crate::config::Config;

/// The embedded storage engine as a backend.
pub struct LocalBackend {
    _private: (),
}

impl LocalBackend {
    /// Opens (or creates) the database under `config.data_dir`.
    pub fn open(_config: &Config) -> anyhow::Result<Self> {
        Ok(LocalBackend { _private: () })
    }
}

impl Backend for LocalBackend {
    async fn handle(&self, _conn: &ConnState, _req: Request) -> Response {
        Response::Error(DbError::server("not implemented"))
    }
}
