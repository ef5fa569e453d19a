//! `INSERT ... JSON`: the JSON object of a row decoded into column values, for a literal at
//! plan time and for a bind marker (`INSERT INTO t JSON ?`) at each execution.
//!
//! Keys match column names case-insensitively unless double-quoted (`"\"Mixed\""`); a key
//! naming no column, a text that is not a JSON object, and a value that does not fit its column
//! fail with Cassandra's messages. Which columns a missing key leaves null or untouched
//! (`DEFAULT UNSET`) is the caller's business.

use crate::EngineError;
use proto::types::ColumnType;

/// The columns a JSON row may name, in the table's order: (name, type).
pub type JsonColumns = [(String, ColumnType)];

/// A column's position among [`JsonColumns`] and its value (None: null).
pub(crate) type ColumnValue = (usize, Option<Vec<u8>>);

/// Decodes `text` into (column position, value) for each key present.
/// `now` is the statement's clock (a timestamp `"now"`).
pub(crate) fn decode(
    columns: &JsonColumns,
    text: &str,
    now: crate::Now,
) -> Result<Vec<ColumnValue>, EngineError> {
    let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        EngineError::invalid(format!(
            "Could not decode JSON string as a map: {e}. (String was: {text})"
        ))
    })?;
    let serde_json::Value::Object(map) = doc else {
        return Err(EngineError::invalid(format!(
            "Could not decode JSON string as a map: {text}"
        )));
    };
    let mut out = Vec::with_capacity(map.len());
    for (key, v) in &map {
        let name = match key.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
            Some(quoted) => quoted.to_string(),
            None => key.to_lowercase(),
        };
        let Some(pos) = columns.iter().position(|(n, _)| *n == name) else {
            return Err(EngineError::invalid(format!(
                "JSON values map contains unrecognized column: {key}"
            )));
        };
        let ty = &columns[pos].1;
        let bytes = crate::json::from_json(ty, v, now).map_err(|e| {
            EngineError::invalid(format!("Error decoding JSON value for {name}: {e}"))
        })?;
        out.push((pos, bytes));
    }
    Ok(out)
}

/// The value of column `pos` in the bound JSON row `text` (None: null). A column the row
/// leaves out is null, or unset (`EngineError::Unset(bind)`, the column keeps its value) when
/// `unset_if_missing`. `decoded` keeps the decoded row for the statement's other columns (a
/// row that fails to decode fails each column alike).
pub(crate) fn column_of_bound(
    columns: &JsonColumns,
    text: Option<&[u8]>,
    decoded: &std::sync::OnceLock<Vec<ColumnValue>>,
    pos: usize,
    unset_if_missing: bool,
    bind: usize,
    now: crate::Now,
) -> Result<Option<Vec<u8>>, EngineError> {
    let Some(text) = text else {
        return Err(EngineError::invalid("Got null for INSERT JSON values"));
    };
    let row = match decoded.get() {
        Some(row) => row,
        None => {
            let text = std::str::from_utf8(text)
                .map_err(|_| EngineError::invalid("Got invalid UTF-8 for INSERT JSON values"))?;
            let _ = decoded.set(decode(columns, text, now)?);
            decoded.get().expect("set above")
        }
    };
    match row.iter().find(|(p, _)| *p == pos) {
        Some((_, v)) => Ok(v.clone()),
        None if unset_if_missing => Err(EngineError::Unset(bind)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols() -> Vec<(String, ColumnType)> {
        vec![
            ("k".into(), ColumnType::Int),
            ("Mixed".into(), ColumnType::Varchar),
        ]
    }

    #[test]
    fn keys_match_columns_case_insensitively_unless_quoted() {
        let mut got = decode(
            &cols(),
            r#"{"K": 1, "\"Mixed\"": "a"}"#,
            crate::tests::at(1),
        )
        .unwrap();
        got.sort();
        assert_eq!(
            got,
            vec![(0, Some(vec![0, 0, 0, 1])), (1, Some(b"a".to_vec()))]
        );
        let err = decode(&cols(), r#"{"mixed": "a"}"#, crate::tests::at(1)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "JSON values map contains unrecognized column: mixed"
        );
    }

    #[test]
    fn a_bound_row_leaves_missing_columns_null_or_unset() {
        let column = |text: Option<&[u8]>,
                      decoded: &std::sync::OnceLock<Vec<ColumnValue>>,
                      pos,
                      unset_if_missing| {
            column_of_bound(
                &cols(),
                text,
                decoded,
                pos,
                unset_if_missing,
                0,
                crate::tests::at(1),
            )
        };
        let text = br#"{"k": 2}"#;
        assert_eq!(
            column(Some(text), &Default::default(), 1, false).unwrap(),
            None
        );
        assert!(matches!(
            column(Some(text), &Default::default(), 1, true),
            Err(EngineError::Unset(0))
        ));
        let err = column(None, &Default::default(), 0, false).unwrap_err();
        assert_eq!(err.to_string(), "Got null for INSERT JSON values");
        // The row is decoded once for all the statement's columns.
        let decoded = Default::default();
        let text = br#"{"k": 2, "\"Mixed\"": "b"}"#;
        assert_eq!(
            column(Some(text), &decoded, 0, false).unwrap(),
            Some(vec![0, 0, 0, 2])
        );
        assert_eq!(decoded.get().map(Vec::len), Some(2));
        assert_eq!(
            column(Some(text), &decoded, 1, false).unwrap(),
            Some(b"b".to_vec())
        );
    }
}
