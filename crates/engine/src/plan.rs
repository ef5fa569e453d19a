//! Resolved statements ("plans"): what the executor runs, with the schema already looked up
//! and every value either a constant or a bind-marker index. Built once at PREPARE (or per
//! QUERY) by `build.rs`; executed many times by `exec.rs`.

use crate::catalog::{ColumnKind, TableDef};
pub use cql::ast::ArithOp;
use proto::response::ColumnSpec;
use proto::types::ColumnType;
use std::sync::Arc;

/// Where a value comes from at execution time.
#[derive(Debug, Clone, PartialEq)]
pub enum Src {
    /// A literal, already serialized; `None` is null.
    Const(Option<Vec<u8>>),
    /// The n-th bound value.
    Bind(usize),
    /// A tuple or UDT literal with bind markers among its fields: each field resolved and
    /// serialized as `[bytes]` (null as -1), in the type's field order. An unset field is
    /// refused with the message kept beside it.
    Fields(Vec<(Src, String)>),
    /// A vector literal with bind markers among its elements (`[1.0, ?, ?]`): each element
    /// resolved, none may be null or unset, then serialized as a vector of this element type.
    Elements(ColumnType, Vec<Src>),
    /// A function over bind markers: an operator (`(int) ? + 1`, `-(int) ?`) or a native
    /// function (`abs(?)`), picked as Cassandra picks it (`build::operation`, `build::call`);
    /// boxed, being rare and large.
    Op(Box<OpSrc>),
    /// A field of the n-th bound value, a tuple: `(a, b) > ?`.
    Field(usize, usize),
    /// A value that may not be null, with the message Cassandra refuses a null with there
    /// (a multi-column relation's: "Invalid null value for column c2").
    NotNull(Box<Src>, String),
    /// `fromJson(?)`: the JSON text bound to the source, decoded for a receiver of this type.
    FromJson(Box<Src>, ColumnType),
    /// `INSERT ... JSON ?`: column `pos` of the JSON row bound to marker `bind`; a column the
    /// row leaves out is null, or unset when `unset_if_missing` (`DEFAULT UNSET`).
    JsonColumn {
        bind: usize,
        columns: std::sync::Arc<crate::json_row::JsonColumns>,
        pos: usize,
        unset_if_missing: bool,
    },
}

/// A function called over bind markers in a term: an operator, a negation, or a native
/// function (`abs(?)`, `textAsBlob(?)`, `token(?)`) by the name Cassandra gives it (the
/// lower-cased name as written, `blob_as_int` or `blobasint`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Callee {
    Negate,
    Arith(cql::ast::ArithOp),
    Native(&'static str),
}

/// A function's call over bind markers: the arguments, of types `params`, give a `ret`,
/// stored in a receiver of type `out`.
#[derive(Debug, Clone, PartialEq)]
pub struct OpSrc {
    pub op: Callee,
    pub params: Vec<ColumnType>,
    pub ret: ColumnType,
    pub out: ColumnType,
    pub args: Vec<Src>,
}

/// A restriction to one or several values of one key column.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyValues {
    Eq(Src),
    In(Vec<Src>),
    /// `IN ?`: one bound list.
    InBind(usize, ColumnType),
}

/// A slice bound on clustering columns following the equality prefix.
#[derive(Debug, Clone, PartialEq)]
pub struct SliceBound {
    pub values: Vec<Src>,
    pub inclusive: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TokenBound {
    pub src: TokenSrc,
    pub inclusive: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TokenSrc {
    /// `token(k) > ?` / `> 123`: a bigint token.
    Token(Src),
    /// `token(k) > token(?, ?)`: the token of these key component values.
    KeyOf(Vec<Src>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum PartitionSel {
    /// One value set per partition key column (cartesian product), and the `token(..)`
    /// bounds given beside them (`k IN (1, 2) AND token(k) > 0`): only the named partitions
    /// whose token lies within them are read (see `token::in_key_token_filter`).
    Keys(Vec<KeyValues>, [Option<TokenBound>; 2]),
    Range {
        start: Option<TokenBound>,
        end: Option<TokenBound>,
    },
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClusteringSel {
    /// Equality (or IN) on the first clustering columns.
    pub eq: Vec<KeyValues>,
    /// `(a, b) IN ((..), (..))` / `(a, b) IN ?` on the columns right after `eq`.
    pub tuples: Option<TupleValues>,
    /// Lower / upper bounds on the columns after the equality prefix (in value order).
    pub start: Option<SliceBound>,
    pub end: Option<SliceBound>,
}

/// The tuples of a multi-column IN.
#[derive(Debug, Clone, PartialEq)]
pub enum TupleValues {
    /// `IN ((1, 'a'), (?, ?))` on `arity` columns (also when the list is empty).
    List { tuples: Vec<Vec<Src>>, arity: usize },
    /// `IN ?`: one bound list of tuples of `arity` fields; a null field is refused with
    /// `null_message`.
    Bind {
        index: usize,
        arity: usize,
        null_message: String,
    },
}

impl TupleValues {
    /// How many clustering columns each tuple sets.
    pub fn arity(&self) -> usize {
        match self {
            TupleValues::List { arity, .. } => *arity,
            TupleValues::Bind { arity, .. } => *arity,
        }
    }
}

impl ClusteringSel {
    pub fn is_unrestricted(&self) -> bool {
        self.eq.is_empty() && self.tuples.is_none() && self.start.is_none() && self.end.is_none()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl FilterOp {
    /// Whether a value that compares `ord` to the wanted one satisfies the operator.
    pub fn holds(self, ord: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            FilterOp::Eq => ord == Equal,
            FilterOp::Ne => ord != Equal,
            FilterOp::Lt => ord == Less,
            FilterOp::Le => ord != Greater,
            FilterOp::Gt => ord == Greater,
            FilterOp::Ge => ord != Less,
        }
    }

    /// The operator as CQL writes it.
    pub fn symbol(self) -> &'static str {
        match self {
            FilterOp::Eq => "=",
            FilterOp::Ne => "!=",
            FilterOp::Lt => "<",
            FilterOp::Le => "<=",
            FilterOp::Gt => ">",
            FilterOp::Ge => ">=",
        }
    }
}

/// A predicate on a non-key column (`ALLOW FILTERING`), or the check of an indexed read.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    pub column: usize,
    pub op: FilterOp,
    pub value: Src,
    pub target: FilterTarget,
    /// How text is analyzed before it is compared (an SAI index's options).
    pub analyzer: crate::index::Analyzer,
}

/// What of the column a filter compares.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterTarget {
    Whole,
    /// `c CONTAINS v`: an element of a list or set, a value of a map.
    Contains,
    /// `m CONTAINS KEY k`.
    ContainsKey,
    /// `m[k] op v`: the map's value at this key.
    Element(Src),
    /// `c IN (a, b)`: equal to one of these (the filter's own value is unused).
    In(Vec<Src>),
    /// `c IN ?`: equal to an element of the list that is the filter's value.
    InList,
}

/// The nearest-neighbour ordering of a SELECT on an SAI vector index.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnPlan {
    /// The vector column (position in the table's columns).
    pub column: usize,
    pub index_id: u32,
    pub similarity: crate::similarity::Similarity,
    /// The query vector (serialized `vector<float, n>`).
    pub query: Src,
}

/// An indexed read: which index, and which of its values (see `index::scan`).
#[derive(Debug, Clone, PartialEq)]
pub struct IndexScan {
    pub index_id: u32,
    /// The indexed column's name (for error messages).
    pub column: String,
    /// Type of the indexed values (a map entry's key type for an `Element` lookup).
    pub value_ty: ColumnType,
    pub analyzer: crate::index::Analyzer,
    pub lookup: IndexLookup,
}

#[derive(Debug, Clone, PartialEq)]
pub enum IndexLookup {
    Eq(Src),
    /// `m[k] = v`: the key, then the value of this type.
    Entry(Src, Src, ColumnType),
    Range {
        start: Option<(Src, bool)>,
        end: Option<(Src, bool)>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Selector {
    Column(usize),
    WriteTime(usize),
    /// `maxwritetime(c)`: the latest write time of the column's cells.
    MaxWriteTime(usize),
    /// `writetime(c[k])`, `maxwritetime(c[k])`, `ttl(c[k])`: of the element `key` of the
    /// set or map in column `column`.
    ElementTime {
        func: cql::ast::CellTimeFn,
        column: usize,
        key: Src,
    },
    /// `writetime(c[a..b])`, `maxwritetime(c[a..])`, `ttl(c[..b])`: of the elements of the set
    /// or map in column `column` whose keys are within the bounds (inclusive).
    SliceTime {
        func: cql::ast::CellTimeFn,
        column: usize,
        from: Option<Src>,
        to: Option<Src>,
    },
    Ttl(usize),
    /// `writetime(u.f)`, `maxwritetime(u.f)`, `ttl(u.f)`: of the field at positions `fields`
    /// (nested UDTs after the first) of the UDT in column `column`.
    FieldTime {
        func: cql::ast::CellTimeFn,
        column: usize,
        fields: Vec<usize>,
    },
    /// `token(pk...)` of the row's partition.
    Token,
    /// `udt_column.field`: the column and the field's position.
    Field(usize, usize),
    /// A function call or cast over other selectors.
    Expr(SelExpr),
    Const(Option<Vec<u8>>),
    /// `(type)?` in the select clause: the n-th bound value.
    Bind(usize),
    /// In an aggregate selection's outputs: the result of the n-th aggregate of the group.
    Agg(usize),
    /// In an aggregate selection's outputs: the n-th plain selector, as of the group's first row.
    First(usize),
}

/// A native function or cast applied to selectors (`toDate(t)`, `CAST(x AS text)`).
#[derive(Debug, Clone, PartialEq)]
pub enum SelExpr {
    Leaf(Box<Selector>, ColumnType),
    Const(ColumnType, Option<Vec<u8>>),
    Call {
        name: String,
        args: Vec<SelExpr>,
        ty: ColumnType,
    },
    Cast {
        inner: Box<SelExpr>,
        from: ColumnType,
        to: ColumnType,
    },
    /// `a + b`, `a - b`, ... (and unary minus as `0 - a` with `negate`), typed at plan time.
    Op {
        op: ArithOp,
        left: Box<SelExpr>,
        right: Box<SelExpr>,
        ty: ColumnType,
    },
    Negate(Box<SelExpr>),
    /// `x.field` of a UDT value that is not a plain column (`m['a'].f`).
    Field {
        udt: Box<SelExpr>,
        pos: usize,
        ty: ColumnType,
    },
    /// `m[key]` / `s[element]`: the map's value at the key, or the set's element if present.
    Element {
        coll: Box<SelExpr>,
        key: Box<SelExpr>,
        ty: ColumnType,
    },
    /// `m[from..to]` / `s[from..to]` (bounds inclusive, either optional): the entries in range;
    /// none gives null, or an empty collection when `frozen`.
    Slice {
        coll: Box<SelExpr>,
        from: Option<Box<SelExpr>>,
        to: Option<Box<SelExpr>>,
        frozen: bool,
    },
    /// `[a, b]`, `{a, b}`, `{k: v}`, `(a, b)` of selectors (`[v, 3]`), of type `ty` (a list,
    /// set, map or tuple; a map's keys and values alternate in `items`): the items' values as
    /// they are, a set's and a map's sorted by key without duplicates.
    Collect {
        items: Vec<SelExpr>,
        ty: ColumnType,
    },
}

impl SelExpr {
    pub fn ty(&self) -> &ColumnType {
        match self {
            SelExpr::Leaf(_, t) | SelExpr::Const(t, _) => t,
            SelExpr::Call { ty, .. } => ty,
            SelExpr::Cast { to, .. } => to,
            SelExpr::Op { ty, .. } => ty,
            SelExpr::Negate(inner) => inner.ty(),
            SelExpr::Element { ty, .. } | SelExpr::Field { ty, .. } => ty,
            SelExpr::Collect { ty, .. } => ty,
            SelExpr::Slice { coll, .. } => coll.ty(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct OutputColumn {
    pub name: String,
    pub ty: ColumnType,
}

/// A result's columns as the wire describes them (keyspace, table, name, type), built once
/// and shared by every result that has them.
pub fn wire_columns(
    keyspace: &str,
    table: &str,
    columns: impl IntoIterator<Item = OutputColumn>,
) -> Arc<[ColumnSpec]> {
    columns
        .into_iter()
        .map(|c| ColumnSpec {
            keyspace: keyspace.to_string(),
            table: table.to_string(),
            name: c.name,
            ty: c.ty,
        })
        .collect()
}

#[derive(Debug, Clone)]
pub enum Selection {
    Rows(Vec<Selector>),
    /// Aggregates and/or GROUP BY: one output row per group of rows.
    Aggregates(Box<AggSelection>),
}

/// A selection folded per group. Without GROUP BY every selected row is one group (and the
/// result is one row even when no row matched).
#[derive(Debug, Clone)]
pub struct AggSelection {
    /// Folded over each row of the group.
    pub aggs: Vec<Aggregate>,
    /// Plain selectors whose values are taken from the group's first row (as Cassandra does).
    pub firsts: Vec<Selector>,
    /// One per output column, over [`Selector::Agg`] and [`Selector::First`] leaves.
    pub outputs: Vec<Selector>,
    /// GROUP BY: how many clustering columns follow the partition key in the group key.
    pub group_by: Option<usize>,
    /// `GROUP BY ..., floor(t, 1h)`: the last grouped clustering column goes through this.
    pub group_fn: Option<SelExpr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggKind {
    CountRows,
    Count,
    Min,
    Max,
    Sum,
    Avg,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    pub kind: AggKind,
    /// The value aggregated, evaluated per row (`None` for `CountRows`).
    pub arg: Option<SelExpr>,
}

#[derive(Debug, Clone)]
pub struct SelectPlan {
    pub table: Arc<TableDef>,
    pub partitions: PartitionSel,
    pub clustering: ClusteringSel,
    pub filters: Vec<Filter>,
    pub selection: Selection,
    /// The result's columns, shared with every result of the plan (see [`wire_columns`]).
    pub output: Arc<[ColumnSpec]>,
    pub distinct: bool,
    pub reversed: bool,
    /// ORDER BY with IN on the partition key cannot be paged (Cassandra refuses it).
    pub order_with_in: bool,
    /// The clustering columns the rows of an `order_with_in` read are sorted by: those up
    /// to the last ORDER BY column. As in Cassandra, rows equal on them keep the order the
    /// partitions were read in (`IN (1, 2) ORDER BY c1` gives every row of partition 1
    /// with `c1 = 0` before those of partition 2, whatever the columns after c1).
    pub order_components: usize,
    /// `SELECT JSON`: one `[json]` column built from `json_columns`.
    pub json: bool,
    pub json_columns: Vec<OutputColumn>,
    pub limit: Option<Src>,
    pub per_partition_limit: Option<Src>,
    /// Rows come from this index's candidates instead of a scan of the partitions.
    pub index: Option<IndexScan>,
    /// `ORDER BY v ANN OF q LIMIT k` (see `index::ann`).
    pub ann: Option<AnnPlan>,
    /// What Cassandra's rebuild of the read names after SELECT (`*`, or the static and
    /// regular columns read): the tombstone warning's text (`read::tombstones`).
    pub queried_columns: String,
    /// The ids of the regular and static columns the read names (selected or filtered on),
    /// `None` for all of them (`*`, or a selection naming none): a row alive only through
    /// cells of other columns older than its marker is not returned (`Row::is_live_for`).
    pub queried: Option<Arc<[u16]>>,
    /// Whether a clustering filter that selects nothing (`c IN ()`) still reads the named
    /// partitions, checking their keys: Cassandra 5.0.9's filter of named rows (every
    /// clustering column restricted by `=` or `IN`) when the read fetches static columns. An
    /// empty slice (`c > 2 AND c < 1`) reads nothing whatever is fetched.
    pub empty_names_read: bool,
    /// A read of one partition that Cassandra 5.0.9 makes through a legacy index on a static
    /// column, which finds no row when the clustering filter has a start bound (see
    /// `build::where_clause::legacy_static_index_read`).
    pub legacy_static_index: bool,
    /// Every selector a key or regular column as stored (no function, cast, field, static
    /// column...): what a plain row visit can answer (`SelectRun::plain`). Kept with the
    /// selection: see [`SelectPlan::set_selection`].
    pub columns_only: bool,
    /// A server error every execution of the plan raises before reading anything, as
    /// Cassandra 5.0.9 raises it binding a similarity function's vector literal that holds a
    /// null (`similarity_cosine(v, [1, null, 3])`): PREPARE succeeds, EXECUTE fails.
    pub execution_error: Option<Arc<str>>,
}

impl SelectPlan {
    /// Replaces the selection, and what the plan knows of it.
    pub fn set_selection(&mut self, selection: Selection) {
        self.columns_only = columns_only(&self.table, &selection);
        self.selection = selection;
    }
}

/// Whether `selection` names only partition key, clustering and regular columns, whole.
pub fn columns_only(t: &TableDef, selection: &Selection) -> bool {
    matches!(selection, Selection::Rows(sel) if sel.iter().all(|s| matches!(s,
        Selector::Column(i) if matches!(t.columns[*i].kind,
            ColumnKind::PartitionKey | ColumnKind::Clustering | ColumnKind::Regular))))
}

#[derive(Debug, Clone, PartialEq)]
pub enum Assign {
    Set(Src),
    /// `c = c + v` for collections (append / union / put-all).
    Append(Src),
    /// `c = v + c` for lists.
    Prepend(Src),
    /// `c = c - v` for collections.
    Remove(Src),
    /// `c[k] = v` for maps (and lists by index).
    SetKey(Src, Src),
    /// `DELETE c[k]`: a map key, a set element or a list index.
    DeleteElement(Src),
    /// `u.f = v` (and `DELETE u.f`, a null value) on a non-frozen UDT: the field's index.
    SetField(usize, Src),
}

#[derive(Debug, Clone)]
pub enum WriteKind {
    /// INSERT writes a row marker; UPDATE does not.
    Upsert {
        marker: bool,
        assignments: Vec<(usize, Assign)>,
    },
    /// DELETE of the whole row/range/partition (`columns` and `elements` empty), of some
    /// columns, or of collection elements and UDT fields (`DELETE m[k], u.f`).
    Delete {
        columns: Vec<usize>,
        elements: Vec<(usize, Assign)>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    IfNotExists,
    IfExists,
    /// `IF c = v AND m[k] > w AND ...`: all must hold.
    Columns(Vec<ColumnCondition>),
}

/// One condition of an `IF`: on a column (its index), a part of it, with an operator.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnCondition {
    pub column: usize,
    pub target: CondTarget,
    pub op: CondOp,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CondTarget {
    Whole,
    /// `l[i]` or `m[k]`.
    Element(Src),
    /// `u.f`: the field's index.
    Field(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub enum CondOp {
    Compare(FilterOp, Src),
    In(Vec<Src>),
    /// `IN ?`: one bound list.
    InBind(usize),
    Contains(Src),
    ContainsKey(Src),
}

#[derive(Debug, Clone)]
pub struct WritePlan {
    pub table: Arc<TableDef>,
    pub partition: Vec<KeyValues>,
    /// An UPDATE's or DELETE's `token(..)` bounds given with the whole partition key: the
    /// write touches only the named partitions whose token lies within them (Cassandra
    /// 5.0.9 accepts both and writes nothing for a partition outside).
    pub token: [Option<TokenBound>; 2],
    pub clustering: ClusteringSel,
    pub kind: WriteKind,
    pub ttl: Option<Src>,
    pub timestamp: Option<Src>,
    pub condition: Option<Condition>,
    /// `USING VISIBILITY`: the label of every cell written (docs/visibility.md); `None`
    /// also for `VISIBILITY ''` (no label).
    pub visibility: Option<LabelSrc>,
}

/// Where a write's visibility label comes from (docs/visibility.md).
#[derive(Debug, Clone)]
pub enum LabelSrc {
    /// A string literal, checked when the statement was built.
    Label(crate::row::Label),
    /// A bind marker (`VISIBILITY ?`): its text value is checked at each execution.
    Bind(Src),
}

/// The type of each bind marker, for PREPARE's metadata and for validating bound values.
#[derive(Debug, Clone, PartialEq)]
pub struct BindSpec {
    pub name: String,
    pub ty: ColumnType,
    /// The table the marker belongs to (metadata shows keyspace and table).
    pub keyspace: String,
    pub table: String,
}
