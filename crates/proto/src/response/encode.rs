//! Encoding responses (the server's side): result bodies, errors with their per-version
//! downgrades, events.

use super::*;

// ---- encode -------------------------------------------------------------------------------

fn global_spec(columns: &[ColumnSpec]) -> Option<(&str, &str)> {
    let first = columns.first()?;
    columns
        .iter()
        .all(|c| c.keyspace == first.keyspace && c.table == first.table)
        .then_some((first.keyspace.as_str(), first.table.as_str()))
}

fn write_col_specs(
    out: &mut BytesMut,
    version: ProtocolVersion,
    cols: &[ColumnSpec],
    global: bool,
) {
    for c in cols {
        if !global {
            wire::put_string(out, &c.keyspace);
            wire::put_string(out, &c.table);
        }
        wire::put_string(out, &c.name);
        c.ty.write_option(version, out);
    }
}

pub(super) fn count_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl RowsMetadata {
    /// A Rows result's body up to its rows: the result kind, this metadata and `rows_count`
    /// (the rows' cells follow, as they are).
    pub fn encode_rows_head(&self, version: ProtocolVersion, rows_count: i32, out: &mut BytesMut) {
        out.put_i32(RESULT_ROWS);
        self.encode(version, out);
        out.put_i32(rows_count);
    }

    pub fn encode(&self, version: ProtocolVersion, out: &mut BytesMut) {
        use rows_flags::*;
        let global = if self.no_metadata {
            None
        } else {
            global_spec(&self.columns)
        };
        let mut f = 0;
        if global.is_some() {
            f |= GLOBAL_TABLES_SPEC;
        }
        if self.paging_state.is_some() {
            f |= HAS_MORE_PAGES;
        }
        if self.no_metadata {
            f |= NO_METADATA;
        }
        let changed = version >= ProtocolVersion::V5 && self.new_metadata_id.is_some();
        if changed {
            f |= METADATA_CHANGED;
        }
        out.put_i32(f);
        out.put_i32(count_i32(self.columns.len()));
        if let Some(p) = &self.paging_state {
            wire::put_bytes(out, Some(p));
        }
        if changed {
            wire::put_short_bytes(out, self.new_metadata_id.as_deref().unwrap_or(&[]));
        }
        if !self.no_metadata {
            if let Some((ks, t)) = global {
                wire::put_string(out, ks);
                wire::put_string(out, t);
            }
            write_col_specs(out, version, &self.columns, global.is_some());
        }
    }
}

impl PreparedMetadata {
    pub fn encode(&self, version: ProtocolVersion, out: &mut BytesMut) {
        let global = global_spec(&self.columns);
        out.put_i32(if global.is_some() {
            rows_flags::GLOBAL_TABLES_SPEC
        } else {
            0
        });
        out.put_i32(count_i32(self.columns.len()));
        if version >= ProtocolVersion::V4 {
            out.put_i32(count_i32(self.pk_indexes.len()));
            for i in &self.pk_indexes {
                out.put_u16(*i);
            }
        }
        if let Some((ks, t)) = global {
            wire::put_string(out, ks);
            wire::put_string(out, t);
        }
        write_col_specs(out, version, &self.columns, global.is_some());
    }
}

impl SchemaChange {
    pub fn encode(&self, out: &mut BytesMut) {
        wire::put_string(out, self.change.as_str());
        match &self.target {
            SchemaChangeTarget::Keyspace(ks) => {
                wire::put_string(out, "KEYSPACE");
                wire::put_string(out, ks);
            }
            SchemaChangeTarget::Table { keyspace, name } => {
                wire::put_string(out, "TABLE");
                wire::put_string(out, keyspace);
                wire::put_string(out, name);
            }
            SchemaChangeTarget::Type { keyspace, name } => {
                wire::put_string(out, "TYPE");
                wire::put_string(out, keyspace);
                wire::put_string(out, name);
            }
            SchemaChangeTarget::Function {
                keyspace,
                name,
                args,
            } => {
                wire::put_string(out, "FUNCTION");
                wire::put_string(out, keyspace);
                wire::put_string(out, name);
                wire::put_string_list(out, args);
            }
            SchemaChangeTarget::Aggregate {
                keyspace,
                name,
                args,
            } => {
                wire::put_string(out, "AGGREGATE");
                wire::put_string(out, keyspace);
                wire::put_string(out, name);
                wire::put_string_list(out, args);
            }
        }
    }
}

fn put_reasons(out: &mut BytesMut, version: ProtocolVersion, num: i32, reasons: &[FailureReason]) {
    if version >= ProtocolVersion::V5 {
        out.put_i32(count_i32(reasons.len()));
        for r in reasons {
            wire::put_inetaddr(out, &r.endpoint);
            out.put_u16(r.code);
        }
    } else {
        out.put_i32(num.max(count_i32(reasons.len())));
    }
}

/// Maps an error to what a client of `version` understands (as Cassandra's ErrorMessage
/// codec does): failures become timeouts for v3, FunctionFailure becomes Invalid for v3,
/// CAS_WRITE_UNKNOWN and CDC_WRITE_FAILURE exist only in v5.
fn downgrade(e: &DbError, version: ProtocolVersion) -> Option<DbError> {
    match e {
        DbError::ReadFailure {
            message,
            consistency,
            received,
            block_for,
            data_present,
            ..
        } if version < ProtocolVersion::V4 => Some(DbError::ReadTimeout {
            message: message.clone(),
            consistency: *consistency,
            received: *received,
            block_for: *block_for,
            data_present: *data_present,
        }),
        DbError::WriteFailure {
            message,
            consistency,
            received,
            block_for,
            write_type,
            ..
        } if version < ProtocolVersion::V4 => Some(DbError::WriteTimeout {
            message: message.clone(),
            consistency: *consistency,
            received: *received,
            block_for: *block_for,
            write_type: *write_type,
            contentions: None,
        }),
        DbError::FunctionFailure { message, .. } if version < ProtocolVersion::V4 => {
            Some(DbError::invalid(message.clone()))
        }
        DbError::CasWriteUnknown {
            message,
            consistency,
            received,
            block_for,
        } if version < ProtocolVersion::V5 => Some(DbError::WriteTimeout {
            message: message.clone(),
            consistency: *consistency,
            received: *received,
            block_for: *block_for,
            write_type: WriteType::Cas,
            contentions: None,
        }),
        DbError::CdcWriteFailure { message } if version < ProtocolVersion::V5 => {
            Some(DbError::server(message.clone()))
        }
        _ => None,
    }
}

/// Writes an ERROR body: code, message, and the code's extra fields.
pub fn encode_error(e: &DbError, version: ProtocolVersion, out: &mut BytesMut) {
    if let Some(d) = downgrade(e, version) {
        return encode_error(&d, version, out);
    }
    out.put_i32(e.code());
    wire::put_string(out, e.message());
    match e {
        DbError::ServerError { .. }
        | DbError::ProtocolError { .. }
        | DbError::BadCredentials { .. }
        | DbError::Overloaded { .. }
        | DbError::IsBootstrapping { .. }
        | DbError::Truncate { .. }
        | DbError::CdcWriteFailure { .. }
        | DbError::SyntaxError { .. }
        | DbError::Unauthorized { .. }
        | DbError::Invalid { .. }
        | DbError::ConfigError { .. } => {}
        DbError::Unavailable {
            consistency,
            required,
            alive,
            ..
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*required);
            out.put_i32(*alive);
        }
        DbError::WriteTimeout {
            consistency,
            received,
            block_for,
            write_type,
            contentions,
            ..
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*received);
            out.put_i32(*block_for);
            wire::put_string(out, write_type.as_str());
            if version >= ProtocolVersion::V5 && *write_type == WriteType::Cas {
                out.put_u16(contentions.unwrap_or(0));
            }
        }
        DbError::ReadTimeout {
            consistency,
            received,
            block_for,
            data_present,
            ..
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*received);
            out.put_i32(*block_for);
            out.put_u8(u8::from(*data_present));
        }
        DbError::ReadFailure {
            consistency,
            received,
            block_for,
            num_failures,
            reasons,
            data_present,
            ..
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*received);
            out.put_i32(*block_for);
            put_reasons(out, version, *num_failures, reasons);
            out.put_u8(u8::from(*data_present));
        }
        DbError::FunctionFailure {
            keyspace,
            function,
            arg_types,
            ..
        } => {
            wire::put_string(out, keyspace);
            wire::put_string(out, function);
            wire::put_string_list(out, arg_types);
        }
        DbError::WriteFailure {
            consistency,
            received,
            block_for,
            num_failures,
            reasons,
            write_type,
            ..
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*received);
            out.put_i32(*block_for);
            put_reasons(out, version, *num_failures, reasons);
            wire::put_string(out, write_type.as_str());
        }
        DbError::CasWriteUnknown {
            consistency,
            received,
            block_for,
            ..
        } => {
            out.put_u16(consistency.code());
            out.put_i32(*received);
            out.put_i32(*block_for);
        }
        DbError::AlreadyExists {
            keyspace, table, ..
        } => {
            wire::put_string(out, keyspace);
            wire::put_string(out, table);
        }
        DbError::Unprepared { id, .. } => wire::put_short_bytes(out, id),
    }
}

impl Response {
    pub fn opcode(&self) -> Opcode {
        match self {
            Response::Error(_) => Opcode::Error,
            Response::Ready => Opcode::Ready,
            Response::Authenticate(_) => Opcode::Authenticate,
            Response::Supported(_) => Opcode::Supported,
            Response::Result(_) => Opcode::Result,
            Response::Event(_) => Opcode::Event,
            Response::AuthChallenge(_) => Opcode::AuthChallenge,
            Response::AuthSuccess(_) => Opcode::AuthSuccess,
        }
    }

    /// Appends the response body.
    pub fn encode_body(&self, version: ProtocolVersion, out: &mut BytesMut) {
        match self {
            Response::Error(e) => encode_error(e, version, out),
            Response::Ready => {}
            Response::Authenticate(class) => wire::put_string(out, class),
            Response::Supported(m) => wire::put_string_multimap(out, m),
            Response::Result(r) => match r {
                ResultBody::Void => out.put_i32(RESULT_VOID),
                ResultBody::Rows(rows) => {
                    out.reserve(rows.data.len() + 64);
                    rows.metadata
                        .encode_rows_head(version, rows.rows_count, out);
                    out.put_slice(&rows.data);
                }
                ResultBody::Encoded(body) => out.put_slice(body),
                ResultBody::SetKeyspace(ks) => {
                    out.put_i32(RESULT_SET_KEYSPACE);
                    wire::put_string(out, ks);
                }
                ResultBody::Prepared(p) => {
                    out.put_i32(RESULT_PREPARED);
                    wire::put_short_bytes(out, &p.id);
                    if version >= ProtocolVersion::V5 {
                        wire::put_short_bytes(out, p.result_metadata_id.as_deref().unwrap_or(&[]));
                    }
                    p.bind_metadata.encode(version, out);
                    p.result_metadata.encode(version, out);
                }
                ResultBody::SchemaChange(sc) => {
                    out.put_i32(RESULT_SCHEMA_CHANGE);
                    sc.encode(out);
                }
            },
            Response::Event(ev) => match ev {
                Event::SchemaChange(sc) => {
                    wire::put_string(out, "SCHEMA_CHANGE");
                    sc.encode(out);
                }
                Event::TopologyChange { change, addr } => {
                    wire::put_string(out, "TOPOLOGY_CHANGE");
                    wire::put_string(out, change);
                    wire::put_inet(out, addr);
                }
                Event::StatusChange { change, addr } => {
                    wire::put_string(out, "STATUS_CHANGE");
                    wire::put_string(out, change);
                    wire::put_inet(out, addr);
                }
            },
            Response::AuthChallenge(t) | Response::AuthSuccess(t) => {
                wire::put_bytes(out, t.as_deref())
            }
        }
    }

    /// Writes a whole response envelope (header, tracing id / warnings, body) into `out`,
    /// encoding the body in place after the header (no intermediate body buffer unless the
    /// body is compressed).
    pub fn encode_envelope(
        &self,
        version: ProtocolVersion,
        stream: i16,
        extras: &ResponseExtras,
        compression: Option<Compression>,
        out: &mut BytesMut,
    ) {
        match compression {
            Some(c) if version < ProtocolVersion::V5 => {
                let mut body = BytesMut::new();
                let flags = self.encode_extras_and_body(version, extras, &mut body);
                let env = Envelope {
                    version,
                    flags,
                    stream,
                    opcode: self.opcode(),
                    body: body.freeze(),
                };
                frame::encode_envelope(&env, Some(c), out);
            }
            _ => {
                // The body is written in place after a placeholder header (no second buffer
                // to join: splitting `out` would make it shared, an allocation per answer);
                // the flags and length are patched in after.
                let header_at = out.len();
                frame::encode_header(version, 0, stream, self.opcode(), 0, out);
                let body_at = out.len();
                let flags = self.encode_extras_and_body(version, extras, out);
                let len = u32::try_from(out.len() - body_at).unwrap_or(u32::MAX);
                out[header_at + 1] = flags;
                out[header_at + 5..header_at + 9].copy_from_slice(&len.to_be_bytes());
            }
        }
    }

    /// Writes an uncompressed response envelope into `out` up to its body's bulk (a Rows
    /// result's row data, an already encoded result), which it returns instead of copying:
    /// the envelope is what was appended followed by the returned bytes, which a writer can
    /// send as they are (the length in the header counts them). Other responses are written
    /// whole (`None`).
    ///
    /// Kept apart from [`Response::encode_envelope`], which every point answer takes: that
    /// path pays nothing for this one.
    pub fn encode_envelope_head(
        &self,
        version: ProtocolVersion,
        stream: i16,
        extras: &ResponseExtras,
        out: &mut BytesMut,
    ) -> Option<&Bytes> {
        let bulk = match self {
            Response::Result(ResultBody::Rows(rows)) => &rows.data,
            Response::Result(ResultBody::Encoded(body)) => body,
            _ => {
                self.encode_envelope(version, stream, extras, None, out);
                return None;
            }
        };
        let header_at = out.len();
        frame::encode_header(version, 0, stream, self.opcode(), 0, out);
        let body_at = out.len();
        let flags = self.encode_extras(version, extras, out);
        if let Response::Result(ResultBody::Rows(rows)) = self {
            rows.metadata
                .encode_rows_head(version, rows.rows_count, out);
        }
        let len = u32::try_from(out.len() - body_at + bulk.len()).unwrap_or(u32::MAX);
        out[header_at + 1] = flags;
        out[header_at + 5..header_at + 9].copy_from_slice(&len.to_be_bytes());
        Some(bulk)
    }

    /// Appends the envelope body: the extras its flags announce, then the message. Returns
    /// the flags.
    fn encode_extras_and_body(
        &self,
        version: ProtocolVersion,
        extras: &ResponseExtras,
        body: &mut BytesMut,
    ) -> u8 {
        let fl = self.encode_extras(version, extras, body);
        self.encode_body(version, body);
        fl
    }

    /// Appends the extras `extras` asks for (those `version` has); returns their flags.
    fn encode_extras(
        &self,
        version: ProtocolVersion,
        extras: &ResponseExtras,
        body: &mut BytesMut,
    ) -> u8 {
        let mut fl = 0u8;
        if let Some(id) = extras.tracing_id {
            fl |= flags::TRACING;
            body.put_slice(&id);
        }
        if !extras.warnings.is_empty() && version >= ProtocolVersion::V4 {
            fl |= flags::WARNING;
            wire::put_string_list(body, &extras.warnings);
        }
        if !extras.custom_payload.is_empty() && version >= ProtocolVersion::V4 {
            fl |= flags::CUSTOM_PAYLOAD;
            wire::put_bytes_map(body, &extras.custom_payload);
        }
        fl
    }
}
