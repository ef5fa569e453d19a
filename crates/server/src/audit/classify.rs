//! What a CQL statement is, for the audit log: its `AuditLogEntryType`, keyspace and scope
//! (table, type, index, function, ...), read from the statement's text, and the text with its
//! passwords replaced by `*******`.
//!
//! Lexical on purpose: the front end does not depend on the CQL parser, and both backends (the
//! engine, and a proxy that never parses) need the same answer. Only the first few tokens are
//! read (up to the first top-level `FROM` for SELECT and DELETE); a statement the server
//! refused is logged as a failure whatever it is, so a statement this does not recognise is
//! one that succeeded without being one of Cassandra's types (a Peregrine extension).

use super::EntryType;

/// What the audit log records of one statement.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Described {
    pub kind: Option<EntryType>,
    /// The statement's own keyspace (`ks.t`), if it names one.
    pub keyspace: Option<String>,
    pub scope: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    /// An unquoted identifier or keyword, lowercased (CQL folds them).
    Word(String),
    /// A double-quoted identifier, case kept.
    Quoted(String),
    /// A string literal (single quotes or `$$`).
    Str,
    Punct(char),
    /// Numbers and anything else.
    Other,
}

/// Splits `text` into tokens, skipping whitespace and comments; stops after `limit` tokens.
fn tokens(text: &str, limit: usize) -> Vec<Tok> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() && out.len() < limit {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if text[i..].starts_with("--") || text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(b.len(), |n| i + n + 1);
        } else if text[i..].starts_with("/*") {
            i = text[i + 2..].find("*/").map_or(b.len(), |n| i + 2 + n + 2);
        } else if c == b'\'' {
            i = skip_quoted(b, i, b'\'');
            out.push(Tok::Str);
        } else if text[i..].starts_with("$$") {
            i = text[i + 2..].find("$$").map_or(b.len(), |n| i + 2 + n + 2);
            out.push(Tok::Str);
        } else if c == b'"' {
            let end = skip_quoted(b, i, b'"');
            let inner = &text[i + 1..end.saturating_sub(1).max(i + 1)];
            out.push(Tok::Quoted(inner.replace("\"\"", "\"")));
            i = end;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Word(text[start..i].to_ascii_lowercase()));
        } else if c.is_ascii_punctuation() {
            out.push(Tok::Punct(c as char));
            i += 1;
        } else {
            // Numbers, non-ASCII: one token per run.
            while i < b.len() && !b[i].is_ascii_whitespace() && !b[i].is_ascii_punctuation() {
                i += 1;
            }
            out.push(Tok::Other);
        }
    }
    out
}

/// The index just past the quoted run starting at `start` (doubled quotes escape).
fn skip_quoted(b: &[u8], start: usize, q: u8) -> usize {
    let mut i = start + 1;
    while i < b.len() {
        if b[i] == q {
            if b.get(i + 1) == Some(&q) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    b.len()
}

/// A cursor over the tokens.
struct Cur {
    toks: Vec<Tok>,
    at: usize,
}

impl Cur {
    fn word(&self, n: usize) -> Option<&str> {
        match self.toks.get(self.at + n) {
            Some(Tok::Word(w)) => Some(w),
            _ => None,
        }
    }

    /// Consumes the keywords `ws` if they come next.
    fn eat(&mut self, ws: &[&str]) -> bool {
        if ws.iter().enumerate().all(|(n, w)| self.word(n) == Some(w)) {
            self.at += ws.len();
            true
        } else {
            false
        }
    }

    fn skip_if_exists(&mut self) {
        if !self.eat(&["if", "not", "exists"]) {
            self.eat(&["if", "exists"]);
        }
    }

    fn name(&mut self) -> Option<String> {
        let n = match self.toks.get(self.at)? {
            Tok::Word(w) => w.clone(),
            Tok::Quoted(q) => q.clone(),
            _ => return None,
        };
        self.at += 1;
        Some(n)
    }

    /// `[ks.]name`: (keyspace, name).
    fn qualified(&mut self) -> (Option<String>, Option<String>) {
        let Some(first) = self.name() else {
            return (None, None);
        };
        if self.toks.get(self.at) == Some(&Tok::Punct('.')) {
            self.at += 1;
            let second = self.name();
            return (Some(first), second);
        }
        (None, Some(first))
    }

    /// Moves past the first `FROM` outside parentheses.
    fn past_from(&mut self) -> bool {
        let mut depth = 0i32;
        while let Some(t) = self.toks.get(self.at) {
            self.at += 1;
            match t {
                Tok::Punct('(') => depth += 1,
                Tok::Punct(')') => depth -= 1,
                Tok::Word(w) if depth == 0 && w == "from" => return true,
                _ => {}
            }
        }
        false
    }
}

/// Tokens read at most (a SELECT's column list can be long; the FROM comes after it).
const MAX_TOKENS: usize = 4096;

/// The type, keyspace and scope of one CQL statement, as Cassandra's audit log names them.
pub fn describe(text: &str) -> Described {
    let mut c = Cur {
        toks: tokens(text, MAX_TOKENS),
        at: 0,
    };
    let mut d = Described::default();
    let table = |c: &mut Cur, d: &mut Described| {
        let (ks, name) = c.qualified();
        d.keyspace = ks;
        d.scope = name;
    };
    let Some(first) = c.word(0).map(str::to_string) else {
        return d;
    };
    c.at = 1;
    use EntryType as T;
    match first.as_str() {
        "select" => {
            d.kind = Some(T::Select);
            if c.past_from() {
                table(&mut c, &mut d);
            }
        }
        "insert" => {
            d.kind = Some(T::Update);
            c.eat(&["into"]);
            table(&mut c, &mut d);
        }
        "update" => {
            d.kind = Some(T::Update);
            table(&mut c, &mut d);
        }
        "delete" => {
            d.kind = Some(T::Delete);
            if c.past_from() {
                table(&mut c, &mut d);
            }
        }
        "begin" | "apply" => d.kind = Some(T::Batch),
        "truncate" => {
            d.kind = Some(T::Truncate);
            if !c.eat(&["table"]) {
                c.eat(&["columnfamily"]);
            }
            table(&mut c, &mut d);
        }
        "use" => {
            d.kind = Some(T::UseKeyspace);
            d.keyspace = c.name();
        }
        "describe" | "desc" => d.kind = Some(T::Describe),
        "list" => {
            d.kind = Some(if c.eat(&["roles"]) || c.eat(&["users"]) {
                T::ListRoles
            } else {
                T::ListPermissions
            });
        }
        "grant" | "revoke" => {
            d.kind = Some(if first == "grant" {
                T::Grant
            } else {
                T::Revoke
            });
            resource(&mut c, &mut d);
        }
        "create" | "alter" | "drop" => schema(&first, &mut c, &mut d),
        _ => {}
    }
    d
}

/// CREATE / ALTER / DROP of a keyspace, table, index, type, function, aggregate, trigger,
/// view or role.
fn schema(verb: &str, c: &mut Cur, d: &mut Described) {
    use EntryType as T;
    c.eat(&["or", "replace"]);
    c.eat(&["custom"]);
    let Some(object) = c.word(0).map(str::to_string) else {
        return;
    };
    c.at += 1;
    if object == "materialized" {
        c.eat(&["view"]);
    }
    let pick = |create, alter, drop| match verb {
        "create" => create,
        "alter" => alter,
        _ => drop,
    };
    let kind = match object.as_str() {
        "keyspace" | "schema" => Some(pick(T::CreateKeyspace, T::AlterKeyspace, T::DropKeyspace)),
        "table" | "columnfamily" => Some(pick(T::CreateTable, T::AlterTable, T::DropTable)),
        "index" => Some(pick(T::CreateIndex, T::CreateIndex, T::DropIndex)),
        "type" => Some(pick(T::CreateType, T::AlterType, T::DropType)),
        "function" => Some(pick(T::CreateFunction, T::CreateFunction, T::DropFunction)),
        "aggregate" => Some(pick(
            T::CreateAggregate,
            T::CreateAggregate,
            T::DropAggregate,
        )),
        "trigger" => Some(pick(T::CreateTrigger, T::CreateTrigger, T::DropTrigger)),
        "materialized" | "view" => Some(pick(T::CreateView, T::AlterView, T::DropView)),
        // Cassandra 5.0 logs the legacy USER statements with the ROLE types.
        "role" | "user" => Some(pick(T::CreateRole, T::AlterRole, T::DropRole)),
        _ => None,
    };
    d.kind = kind;
    c.skip_if_exists();
    match kind {
        Some(T::CreateKeyspace | T::AlterKeyspace | T::DropKeyspace) => d.keyspace = c.name(),
        Some(T::CreateRole | T::AlterRole | T::DropRole) | None => {}
        Some(T::CreateIndex) => {
            // CREATE INDEX [name] ON [ks.]table: Cassandra names only the keyspace.
            let mut depth = 0;
            while let Some(t) = c.toks.get(c.at) {
                c.at += 1;
                match t {
                    Tok::Punct('(') => depth += 1,
                    Tok::Punct(')') => depth -= 1,
                    Tok::Word(w) if depth == 0 && w == "on" => {
                        d.keyspace = c.qualified().0;
                        break;
                    }
                    _ => {}
                }
            }
        }
        Some(T::CreateTrigger | T::DropTrigger) => {
            d.scope = c.name();
            if c.eat(&["on"]) {
                d.keyspace = c.qualified().0;
            }
        }
        Some(_) => {
            let (ks, name) = c.qualified();
            d.keyspace = ks;
            d.scope = name;
        }
    }
}

/// The resource of GRANT / REVOKE as Cassandra's audit log names it: a data resource's
/// parent as the keyspace and the resource itself as the scope (`data`, `data/ks`,
/// `data/ks/*` and `data/ks/t`); roles and functions likewise. `GRANT role TO role` has none.
fn resource(c: &mut Cur, d: &mut Described) {
    let mut on = false;
    while let Some(t) = c.toks.get(c.at) {
        c.at += 1;
        if matches!(t, Tok::Word(w) if w == "on") {
            on = true;
            break;
        }
        if matches!(t, Tok::Word(w) if w == "to" || w == "from") {
            break;
        }
    }
    if !on {
        return;
    }
    let set = |d: &mut Described, ks: String, scope: String| {
        d.keyspace = Some(ks);
        d.scope = Some(scope);
    };
    if c.eat(&["all", "keyspaces"]) {
        set(d, "data".into(), "data".into());
    } else if c.eat(&["keyspace"]) {
        if let Some(ks) = c.name() {
            set(d, "data".into(), format!("data/{ks}"));
        }
    } else if c.eat(&["all", "roles"]) {
        set(d, "roles".into(), "roles".into());
    } else if c.eat(&["role"]) {
        if let Some(r) = c.name() {
            set(d, "roles".into(), format!("roles/{r}"));
        }
    } else if c.eat(&["all", "functions", "in", "keyspace"]) {
        if let Some(ks) = c.name() {
            set(d, "functions".into(), format!("functions/{ks}"));
        }
    } else if c.eat(&["all", "functions"]) {
        set(d, "functions".into(), "functions".into());
    } else if c.eat(&["function"]) {
        if let (Some(ks), Some(_)) = c.qualified() {
            d.keyspace = Some(format!("functions/{ks}"));
        }
    } else {
        c.eat(&["table"]);
        if let (Some(ks), Some(t)) = c.qualified() {
            set(d, format!("data/{ks}/*"), format!("data/{ks}/{t}"));
        }
    }
}

/// Cassandra's obfuscation token.
pub const OBFUSCATED: &str = "*******";

/// The statement with the string literal after each `PASSWORD` keyword (also `HASHED
/// PASSWORD`, in any case) replaced by `*******`, as Cassandra writes role statements to its
/// audit log. A `PASSWORD` not followed by a string literal hides everything after it
/// (Cassandra's fallback), so a malformed statement never shows a password either.
pub fn obfuscate_statement(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    if !lower.contains("password") {
        return text.to_string();
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'\'' {
            i = skip_quoted(b, i, b'\'');
        } else if c == b'"' {
            i = skip_quoted(b, i, b'"');
        } else if lower[i..].starts_with("password")
            && (i == 0 || !is_ident(b[i - 1]))
            && b.get(i + 8).is_none_or(|&n| !is_ident(n))
        {
            let mut j = i + 8;
            while j < b.len() && (b[j].is_ascii_whitespace() || b[j] == b'=' || b[j] == b':') {
                j += 1;
            }
            if b.get(j) == Some(&b'\'') {
                let end = skip_quoted(b, j, b'\'');
                out.push_str(&text[copied..=j]);
                out.push_str(OBFUSCATED);
                out.push('\'');
                copied = end;
                i = end;
            } else if text[j..].starts_with("$$") {
                let end = text[j + 2..].find("$$").map_or(b.len(), |n| j + 2 + n + 2);
                out.push_str(&text[copied..j + 2]);
                out.push_str(OBFUSCATED);
                out.push_str("$$");
                copied = end;
                i = end;
            } else {
                out.push_str(&text[copied..i + 8]);
                out.push(' ');
                out.push_str(OBFUSCATED);
                return out;
            }
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied.min(b.len())..]);
    out
}

/// Cassandra's `PasswordObfuscator.obfuscate(String)`: everything after the first
/// `password` (any case) becomes ` *******`. Used on error messages.
pub fn obfuscate_message(text: &str) -> String {
    match text.to_ascii_lowercase().find("password") {
        Some(i) => format!("{} {OBFUSCATED}", &text[..i + 8]),
        None => text.to_string(),
    }
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

#[cfg(test)]
mod tests {
    use super::*;
    use EntryType as T;

    fn d(
        text: &str,
    ) -> (
        Option<EntryType>,
        Option<&'static str>,
        Option<&'static str>,
    ) {
        let x = describe(text);
        let leak = |s: Option<String>| s.map(|s| &*Box::leak(s.into_boxed_str()));
        (x.kind, leak(x.keyspace), leak(x.scope))
    }

    #[test]
    fn statements_are_typed_as_cassandras_audit_log_types() {
        assert_eq!(
            d("SELECT * FROM ak.t WHERE k=1"),
            (Some(T::Select), Some("ak"), Some("t"))
        );
        assert_eq!(
            d("select count(*), writetime(v) from \"Ks\".\"T\""),
            (Some(T::Select), Some("Ks"), Some("T"))
        );
        assert_eq!(
            d("INSERT INTO t (k) VALUES (1)"),
            (Some(T::Update), None, Some("t"))
        );
        assert_eq!(
            d("UPDATE ak.t SET v='b' WHERE k=1"),
            (Some(T::Update), Some("ak"), Some("t"))
        );
        assert_eq!(
            d("DELETE v FROM ak.t WHERE k=3"),
            (Some(T::Delete), Some("ak"), Some("t"))
        );
        assert_eq!(d("BEGIN UNLOGGED BATCH APPLY BATCH").0, Some(T::Batch));
        assert_eq!(
            d("TRUNCATE TABLE ak.t"),
            (Some(T::Truncate), Some("ak"), Some("t"))
        );
        assert_eq!(d("USE \"ak\""), (Some(T::UseKeyspace), Some("ak"), None));
        assert_eq!(
            d("CREATE KEYSPACE IF NOT EXISTS ak WITH replication = {}"),
            (Some(T::CreateKeyspace), Some("ak"), None)
        );
        assert_eq!(
            d("-- c\nCREATE TABLE IF NOT EXISTS ak.t (k int PRIMARY KEY)"),
            (Some(T::CreateTable), Some("ak"), Some("t"))
        );
        assert_eq!(
            d("ALTER TABLE ak.t ADD w int"),
            (Some(T::AlterTable), Some("ak"), Some("t"))
        );
        assert_eq!(
            d("CREATE INDEX ON ak.t (w)"),
            (Some(T::CreateIndex), Some("ak"), None)
        );
        assert_eq!(
            d("CREATE CUSTOM INDEX i ON t (w) USING 'x'"),
            (Some(T::CreateIndex), None, None)
        );
        assert_eq!(
            d("DROP INDEX IF EXISTS ak.nope"),
            (Some(T::DropIndex), Some("ak"), Some("nope"))
        );
        assert_eq!(
            d("CREATE MATERIALIZED VIEW ak.v AS SELECT"),
            (Some(T::CreateView), Some("ak"), Some("v"))
        );
        assert_eq!(
            d("CREATE OR REPLACE FUNCTION ak.f (a int)").0,
            Some(T::CreateFunction)
        );
        assert_eq!(
            d("CREATE USER bob WITH PASSWORD 'x'").0,
            Some(T::CreateRole)
        );
        assert_eq!(d("DROP USER bob").0, Some(T::DropRole));
        assert_eq!(d("LIST USERS").0, Some(T::ListRoles));
        assert_eq!(
            d("LIST ALL PERMISSIONS OF carol").0,
            Some(T::ListPermissions)
        );
        assert_eq!(d("DESCRIBE KEYSPACES").0, Some(T::Describe));
        assert_eq!(
            d("GRANT SELECT ON ak.t TO alice"),
            (Some(T::Grant), Some("data/ak/*"), Some("data/ak/t"))
        );
        assert_eq!(
            d("GRANT SELECT ON KEYSPACE ak TO carol"),
            (Some(T::Grant), Some("data"), Some("data/ak"))
        );
        assert_eq!(
            d("REVOKE MODIFY ON ALL KEYSPACES FROM carol"),
            (Some(T::Revoke), Some("data"), Some("data"))
        );
        assert_eq!(d("GRANT r1 TO carol"), (Some(T::Grant), None, None));
        assert_eq!(d("SELEC * FROM t").0, None);
        assert_eq!(d("").0, None);
    }

    #[test]
    fn passwords_are_obfuscated_as_cassandra_does() {
        assert_eq!(
            obfuscate_statement(
                "CREATE ROLE IF NOT EXISTS alice WITH PASSWORD = 'sekret1' AND LOGIN = true"
            ),
            "CREATE ROLE IF NOT EXISTS alice WITH PASSWORD = '*******' AND LOGIN = true"
        );
        assert_eq!(
            obfuscate_statement("ALTER ROLE alice WITH PASSWORD='it''s' AND LOGIN = true"),
            "ALTER ROLE alice WITH PASSWORD='*******' AND LOGIN = true"
        );
        assert_eq!(
            obfuscate_statement("CREATE USER bob WITH password 'sekret3' SUPERUSER"),
            "CREATE USER bob WITH password '*******' SUPERUSER"
        );
        assert_eq!(
            obfuscate_statement("CREATE ROLE hh WITH HASHED PASSWORD = '$2a$10$abc'"),
            "CREATE ROLE hh WITH HASHED PASSWORD = '*******'"
        );
        assert_eq!(
            obfuscate_statement("CREATE ROLE r WITH PASSWORD = $$pa'ss$$"),
            "CREATE ROLE r WITH PASSWORD = $$*******$$"
        );
        // A literal that only mentions the word is left alone; an unquoted password is not.
        assert_eq!(
            obfuscate_statement("INSERT INTO t (k, v) VALUES (1, 'password')"),
            "INSERT INTO t (k, v) VALUES (1, 'password')"
        );
        assert_eq!(
            obfuscate_statement("CREAT ROLE x WITH PASSWORD zzz"),
            "CREAT ROLE x WITH PASSWORD *******"
        );
        assert_eq!(
            obfuscate_message("Provided username cassandra and/or password are incorrect"),
            "Provided username cassandra and/or password *******"
        );
        assert_eq!(
            obfuscate_message("table t2 does not exist"),
            "table t2 does not exist"
        );
    }
}
