//! CQL text to syntax tree.
//!
//! `cql` turns the text of a CQL statement (what a driver sends in QUERY, PREPARE or BATCH)
//! into an AST the engine executes. It is a hand-written lexer and recursive-descent parser
//! that follows Apache Cassandra's `Parser.g` / `Lexer.g`: keywords are case-insensitive,
//! unquoted names are lower-cased, quoted names keep their case, comments (`--`, `//`,
//! `/* */`) and a trailing `;` are allowed, and errors read like Cassandra's
//! `SyntaxException` (`line 1:9 mismatched input 'FRO' expecting K_FROM (SELECT * [FRO]...)`).
//!
//! What it is **not**: it knows no schema, so it neither resolves names nor checks types.
//! Literals keep their source text ([`ast::Literal::Integer`] holds `"-42"`) for the executor
//! to convert by the receiving column's type; user types are names; `{}` is an empty set that
//! the executor must also accept where a map is expected. Functions, aggregates and triggers
//! parse to [`Statement::Unsupported`].
//!
//! # Module map
//! - [`ast`]: the tree ([`Statement`] and everything below it), plus `Display` for types,
//!   terms and table/keyspace option values so DESCRIBE can print DDL back.
//! - [`error`]: [`ParseError`] with line, column and kind (syntax vs invalid request).
//! - `lexer`: text to a flat token list (kinds + byte spans, one allocation).
//! - `parser`: tokens to AST.
//! - [`keywords`]: reserved words and identifier/string quoting for output.
//!
//! # Invariants
//! - Never panics, whatever the input (fuzzed by `fuzz/fuzz_targets/cql_parse.rs`).
//! - Nesting of terms, types, selectors and relations (and chains of operators) is capped
//!   at 32 levels, so recursion depth is bounded by a constant.
//! - Work is linear in the input length.
//! - Bind markers are numbered 0, 1, ... in textual order across the whole statement
//!   (including all children of a batch); [`ParsedStatement::bind_count`] is their number.

pub mod ast;
pub mod error;
pub mod keywords;
mod lexer;
mod parser;

pub use ast::{ParsedStatement, Statement};
pub use error::{ParseError, ParseErrorKind};
pub use keywords::{quote_identifier, quote_string};

/// Parses exactly one statement (optionally followed by `;`).
pub fn parse(text: &str) -> Result<ParsedStatement, ParseError> {
    parser::Parser::new(text)?.parse_single()
}

/// Parses a script of `;`-separated statements (empty statements are skipped). Each statement
/// numbers its bind markers from 0.
pub fn parse_statements(text: &str) -> Result<Vec<ParsedStatement>, ParseError> {
    parser::Parser::new(text)?.parse_script()
}

/// Parses a CQL type, e.g. `frozen<map<text, list<int>>>` (for schema tables and tools).
pub fn parse_type(text: &str) -> Result<ast::CqlType, ParseError> {
    parser::Parser::new(text)?.parse_type_only()
}
