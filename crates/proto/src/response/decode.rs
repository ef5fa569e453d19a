//! Decoding responses (tests and the proxy read what an upstream sends): every length is
//! checked against what remains before anything is allocated.

use super::encode::count_i32;
use super::*;

// ---- decode -------------------------------------------------------------------------------

fn read_col_specs(
    r: &mut Reader,
    n: usize,
    global: Option<(String, String)>,
) -> Result<Vec<ColumnSpec>, DbError> {
    r.check_count("column spec", n, 4)?;
    let mut cols = Vec::with_capacity(n);
    for _ in 0..n {
        let (keyspace, table) = match &global {
            Some((k, t)) => (k.clone(), t.clone()),
            None => (r.string("keyspace")?, r.string("table")?),
        };
        let name = r.string("column name")?;
        let ty = ColumnType::read_option(r, 0)?;
        cols.push(ColumnSpec {
            keyspace,
            table,
            name,
            ty,
        });
    }
    Ok(cols)
}

fn read_count(r: &mut Reader, what: &str) -> Result<usize, DbError> {
    let n = r.i32(what)?;
    usize::try_from(n).map_err(|_| DbError::protocol(format!("Invalid negative {what} {n}")))
}

fn read_rows_metadata(r: &mut Reader, version: ProtocolVersion) -> Result<RowsMetadata, DbError> {
    use rows_flags::*;
    let f = r.i32("metadata flags")?;
    let n = read_count(r, "column count")?;
    let paging_state = if f & HAS_MORE_PAGES != 0 {
        r.bytes("paging state")?
    } else {
        None
    };
    let new_metadata_id = if f & METADATA_CHANGED != 0 && version >= ProtocolVersion::V5 {
        Some(r.short_bytes("new metadata id")?)
    } else {
        None
    };
    let no_metadata = f & NO_METADATA != 0;
    let columns = if no_metadata {
        // Only the count is known; keep it as placeholder columns so `columns.len()` holds.
        r.check_count("column", n, 0)?;
        if n > 65_535 {
            return Err(DbError::protocol(format!("Invalid column count {n}")));
        }
        // Built in place, not cloned from one (`vec![spec; n]` cloned the strings and the
        // type per column: ~2,000 instructions of a proxy cache miss's 25,000 for ten columns).
        std::iter::repeat_with(|| ColumnSpec {
            keyspace: String::new(),
            table: String::new(),
            name: String::new(),
            ty: ColumnType::Blob,
        })
        .take(n)
        .collect()
    } else {
        let global = if f & GLOBAL_TABLES_SPEC != 0 {
            Some((r.string("keyspace")?, r.string("table")?))
        } else {
            None
        };
        read_col_specs(r, n, global)?
    };
    Ok(RowsMetadata {
        columns: columns.into(),
        paging_state,
        no_metadata,
        new_metadata_id,
    })
}

fn read_schema_change(r: &mut Reader) -> Result<SchemaChange, DbError> {
    let change = match r.string("change type")?.as_str() {
        "CREATED" => SchemaChangeType::Created,
        "UPDATED" => SchemaChangeType::Updated,
        "DROPPED" => SchemaChangeType::Dropped,
        other => {
            return Err(DbError::protocol(format!(
                "Unknown schema change type {other}"
            )))
        }
    };
    let target = match r.string("change target")?.as_str() {
        "KEYSPACE" => SchemaChangeTarget::Keyspace(r.string("keyspace")?),
        "TABLE" => SchemaChangeTarget::Table {
            keyspace: r.string("keyspace")?,
            name: r.string("name")?,
        },
        "TYPE" => SchemaChangeTarget::Type {
            keyspace: r.string("keyspace")?,
            name: r.string("name")?,
        },
        "FUNCTION" => SchemaChangeTarget::Function {
            keyspace: r.string("keyspace")?,
            name: r.string("name")?,
            args: r.string_list("argument types")?,
        },
        "AGGREGATE" => SchemaChangeTarget::Aggregate {
            keyspace: r.string("keyspace")?,
            name: r.string("name")?,
            args: r.string_list("argument types")?,
        },
        other => {
            return Err(DbError::protocol(format!(
                "Unknown schema change target {other}"
            )))
        }
    };
    Ok(SchemaChange { change, target })
}

fn read_reasons(
    r: &mut Reader,
    version: ProtocolVersion,
) -> Result<(i32, Vec<FailureReason>), DbError> {
    if version >= ProtocolVersion::V5 {
        let n = read_count(r, "failure count")?;
        r.check_count("failure reason", n, 7)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let endpoint: IpAddr = r.inetaddr("failure endpoint")?;
            let code = r.u16("failure code")?;
            v.push(FailureReason { endpoint, code });
        }
        Ok((count_i32(v.len()), v))
    } else {
        Ok((r.i32("failure count")?, Vec::new()))
    }
}

fn write_type(r: &mut Reader) -> Result<WriteType, DbError> {
    let s = r.string("write type")?;
    WriteType::parse(&s).ok_or_else(|| DbError::protocol(format!("Unknown write type {s}")))
}

/// Decodes an ERROR body.
pub(crate) fn decode_error(r: &mut Reader, version: ProtocolVersion) -> Result<DbError, DbError> {
    let code = r.i32("error code")?;
    let message = r.string("error message")?;
    let cl = |r: &mut Reader| -> Result<Consistency, DbError> { r.consistency("consistency") };
    Ok(match code {
        0x0000 => DbError::ServerError { message },
        0x000A => DbError::ProtocolError { message },
        0x0100 => DbError::BadCredentials { message },
        0x1000 => DbError::Unavailable {
            message,
            consistency: cl(r)?,
            required: r.i32("required")?,
            alive: r.i32("alive")?,
        },
        0x1001 => DbError::Overloaded { message },
        0x1002 => DbError::IsBootstrapping { message },
        0x1003 => DbError::Truncate { message },
        0x1100 => {
            let consistency = cl(r)?;
            let received = r.i32("received")?;
            let block_for = r.i32("block for")?;
            let write_type = write_type(r)?;
            let contentions = if version >= ProtocolVersion::V5 && write_type == WriteType::Cas {
                Some(r.u16("contentions")?)
            } else {
                None
            };
            DbError::WriteTimeout {
                message,
                consistency,
                received,
                block_for,
                write_type,
                contentions,
            }
        }
        0x1200 => DbError::ReadTimeout {
            message,
            consistency: cl(r)?,
            received: r.i32("received")?,
            block_for: r.i32("block for")?,
            data_present: r.u8("data present")? != 0,
        },
        0x1300 => {
            let consistency = cl(r)?;
            let received = r.i32("received")?;
            let block_for = r.i32("block for")?;
            let (num_failures, reasons) = read_reasons(r, version)?;
            DbError::ReadFailure {
                message,
                consistency,
                received,
                block_for,
                num_failures,
                reasons,
                data_present: r.u8("data present")? != 0,
            }
        }
        0x1400 => DbError::FunctionFailure {
            message,
            keyspace: r.string("keyspace")?,
            function: r.string("function")?,
            arg_types: r.string_list("argument types")?,
        },
        0x1500 => {
            let consistency = cl(r)?;
            let received = r.i32("received")?;
            let block_for = r.i32("block for")?;
            let (num_failures, reasons) = read_reasons(r, version)?;
            DbError::WriteFailure {
                message,
                consistency,
                received,
                block_for,
                num_failures,
                reasons,
                write_type: write_type(r)?,
            }
        }
        0x1600 => DbError::CdcWriteFailure { message },
        0x1700 => DbError::CasWriteUnknown {
            message,
            consistency: cl(r)?,
            received: r.i32("received")?,
            block_for: r.i32("block for")?,
        },
        0x2000 => DbError::SyntaxError { message },
        0x2100 => DbError::Unauthorized { message },
        0x2200 => DbError::Invalid { message },
        0x2300 => DbError::ConfigError { message },
        0x2400 => DbError::AlreadyExists {
            message,
            keyspace: r.string("keyspace")?,
            table: r.string("table")?,
        },
        0x2500 => DbError::Unprepared {
            message,
            id: r.short_bytes("prepared id")?,
        },
        other => {
            return Err(DbError::protocol(format!(
                "Unknown error code {other:#06x}: {message}"
            )))
        }
    })
}

impl Response {
    /// Decodes a response body (client side: proxy mode and tests).
    pub fn decode(
        version: ProtocolVersion,
        opcode: Opcode,
        body: Bytes,
    ) -> Result<Response, DbError> {
        let mut r = Reader::new(body);
        Ok(match opcode {
            Opcode::Error => Response::Error(decode_error(&mut r, version)?),
            Opcode::Ready => Response::Ready,
            Opcode::Authenticate => Response::Authenticate(r.string("authenticator")?),
            Opcode::Supported => Response::Supported(r.string_multimap("supported options")?),
            Opcode::AuthChallenge => Response::AuthChallenge(r.bytes("auth token")?),
            Opcode::AuthSuccess => Response::AuthSuccess(r.bytes("auth token")?),
            Opcode::Result => Response::Result(match r.i32("result kind")? {
                RESULT_VOID => ResultBody::Void,
                RESULT_ROWS => {
                    let metadata = read_rows_metadata(&mut r, version)?;
                    let rows_count = r.i32("rows count")?;
                    let data = r.rest();
                    let rows = Rows {
                        metadata,
                        rows_count,
                        data,
                    };
                    let expected = (rows_count.max(0) as u64)
                        .saturating_mul(rows.metadata.columns.len() as u64);
                    let cells = rows.cells().count() as u64;
                    if rows_count < 0 || cells != expected {
                        return Err(DbError::protocol(format!(
                            "Rows result announces {rows_count} rows of {} columns but carries {cells} cells",
                            rows.metadata.columns.len()
                        )));
                    }
                    ResultBody::Rows(rows)
                }
                RESULT_SET_KEYSPACE => ResultBody::SetKeyspace(r.string("keyspace")?),
                RESULT_PREPARED => {
                    let id = r.short_bytes("prepared id")?;
                    let result_metadata_id = if version >= ProtocolVersion::V5 {
                        Some(r.short_bytes("result metadata id")?)
                    } else {
                        None
                    };
                    let f = r.i32("metadata flags")?;
                    let n = read_count(&mut r, "column count")?;
                    let pk_indexes = if version >= ProtocolVersion::V4 {
                        let k = read_count(&mut r, "partition key count")?;
                        r.check_count("partition key index", k, 2)?;
                        let mut v = Vec::with_capacity(k);
                        for _ in 0..k {
                            v.push(r.u16("partition key index")?);
                        }
                        v
                    } else {
                        Vec::new()
                    };
                    let global = if f & rows_flags::GLOBAL_TABLES_SPEC != 0 {
                        Some((r.string("keyspace")?, r.string("table")?))
                    } else {
                        None
                    };
                    let columns = read_col_specs(&mut r, n, global)?;
                    let result_metadata = read_rows_metadata(&mut r, version)?;
                    ResultBody::Prepared(Prepared {
                        id,
                        result_metadata_id,
                        bind_metadata: PreparedMetadata {
                            columns,
                            pk_indexes,
                        },
                        result_metadata,
                    })
                }
                RESULT_SCHEMA_CHANGE => ResultBody::SchemaChange(read_schema_change(&mut r)?),
                k => return Err(DbError::protocol(format!("Unknown result kind {k}"))),
            }),
            Opcode::Event => Response::Event(match r.string("event type")?.as_str() {
                "SCHEMA_CHANGE" => Event::SchemaChange(read_schema_change(&mut r)?),
                "TOPOLOGY_CHANGE" => Event::TopologyChange {
                    change: r.string("change")?,
                    addr: r.inet("address")?,
                },
                "STATUS_CHANGE" => Event::StatusChange {
                    change: r.string("change")?,
                    addr: r.inet("address")?,
                },
                other => return Err(DbError::protocol(format!("Unknown event type {other}"))),
            }),
            Opcode::Startup
            | Opcode::Options
            | Opcode::Query
            | Opcode::Prepare
            | Opcode::Execute
            | Opcode::Register
            | Opcode::Batch
            | Opcode::AuthResponse => {
                return Err(DbError::protocol(format!(
                    "Opcode {:#04x} is not a response",
                    opcode as u8
                )))
            }
        })
    }

    /// Decodes a response envelope with its tracing id, warnings and custom payload.
    pub fn from_envelope(env: &Envelope) -> Result<DecodedResponse, DbError> {
        Self::from_envelope_as(env, false)
    }

    /// [`Response::from_envelope`] for a proxy passing answers through: a Rows result is not
    /// decoded but kept as the RESULT body as received (`ResultBody::Encoded`, a view into the
    /// envelope body, kind included), to be relayed as is or decoded later
    /// ([`Rows::decode_result`]) where a decision needs its rows. Every other response decodes
    /// as usual: they are small, and a proxy acts on them (errors, prepared ids, keyspace and
    /// schema changes).
    pub fn from_envelope_lazy(env: &Envelope) -> Result<DecodedResponse, DbError> {
        Self::from_envelope_as(env, true)
    }

    fn from_envelope_as(env: &Envelope, lazy: bool) -> Result<DecodedResponse, DbError> {
        let mut r = Reader::new(env.body.clone());
        let tracing_id = if env.flags & flags::TRACING != 0 {
            Some(r.uuid("tracing id")?)
        } else {
            None
        };
        let warnings = if env.flags & flags::WARNING != 0 && env.version >= ProtocolVersion::V4 {
            r.string_list("warnings")?
        } else {
            Vec::new()
        };
        let custom_payload =
            if env.flags & flags::CUSTOM_PAYLOAD != 0 && env.version >= ProtocolVersion::V4 {
                r.bytes_map("custom payload")?
            } else {
                Vec::new()
            };
        let body = r.rest();
        let rows = |b: &Bytes| b.get(..4).is_some_and(|k| k == RESULT_ROWS.to_be_bytes());
        let response = if lazy && env.opcode == Opcode::Result && rows(&body) {
            Response::Result(ResultBody::Encoded(body))
        } else {
            Response::decode(env.version, env.opcode, body)?
        };
        Ok(DecodedResponse {
            response,
            tracing_id,
            warnings,
            custom_payload,
        })
    }
}

impl Rows {
    /// Decodes a whole RESULT body of kind Rows (as [`Response::from_envelope_lazy`] keeps
    /// it); the cells stay a view into `body`.
    pub fn decode_result(version: ProtocolVersion, body: Bytes) -> Result<Rows, DbError> {
        match Response::decode(version, Opcode::Result, body)? {
            Response::Result(ResultBody::Rows(rows)) => Ok(rows),
            other => Err(DbError::protocol(format!(
                "Expected a Rows result, got {:?}",
                other.opcode()
            ))),
        }
    }
}
