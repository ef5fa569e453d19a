//! ScyllaDB's service level statements (workload prioritization): the AST.
//!
//! Parsed only where Cassandra's grammar has no meaning (`crate::parser::service_level`);
//! docs/extensions.md lists them.

/// `CREATE | ALTER | DROP | ATTACH | DETACH | LIST ... SERVICE LEVEL ...` (ScyllaDB's syntax;
/// `SERVICE_LEVEL` is accepted for `SERVICE LEVEL` as ScyllaDB does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServiceLevelStatement {
    /// `CREATE SERVICE LEVEL [IF NOT EXISTS] name [WITH options]`.
    Create {
        name: String,
        if_not_exists: bool,
        options: ServiceLevelOptions,
    },
    /// `ALTER SERVICE LEVEL name WITH options`.
    Alter {
        name: String,
        options: ServiceLevelOptions,
    },
    /// `DROP SERVICE LEVEL [IF EXISTS] name`.
    Drop { name: String, if_exists: bool },
    /// `ATTACH SERVICE LEVEL level TO role`.
    Attach { level: String, role: String },
    /// `DETACH SERVICE LEVEL FROM role`.
    Detach { role: String },
    /// `LIST SERVICE LEVEL name` (`Some`) or `LIST ALL SERVICE LEVELS` (`None`).
    List { name: Option<String> },
    /// `LIST ATTACHED SERVICE LEVEL OF role` (`Some`) or `LIST ALL ATTACHED SERVICE LEVELS`.
    ListAttached { role: Option<String> },
    /// `LIST EFFECTIVE SERVICE LEVEL OF role`: the options the role runs with, merged over
    /// its levels and those of the roles granted to it, and which level gave each.
    ListEffective { role: String },
}

/// The options a statement sets (`None`: not given). Validated by the parser as ScyllaDB
/// validates them (`shares` 1..=1000, `workload_type` one of its words).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceLevelOptions {
    pub shares: Option<u32>,
    /// `Some(None)`: set back to unspecified (`workload_type = null`).
    pub workload_type: Option<Option<WorkloadType>>,
    /// `timeout` as written (a duration, checked when executed); `Some(None)`: removed
    /// (`timeout = null`).
    pub timeout: Option<Option<String>>,
}

/// ScyllaDB's `workload_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadType {
    Interactive,
    Batch,
}

impl WorkloadType {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadType::Interactive => "interactive",
            WorkloadType::Batch => "batch",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "interactive" => Some(WorkloadType::Interactive),
            "batch" => Some(WorkloadType::Batch),
            _ => None,
        }
    }
}

impl super::Statement {
    /// True for the service level statements (they write and sync the records, like role
    /// statements).
    pub fn is_service_level_statement(&self) -> bool {
        matches!(self, super::Statement::ServiceLevel(_))
    }
}
