//! Stage "history": the two database backends behind one small surface — run a statement,
//! read rows — so the query layer ([`super::store`]) writes each statement once. Statements
//! use `?` placeholders (SQLite's); for PostgreSQL they become `$1, $2, …`. Values are the
//! three types the schema uses: 64-bit integers, doubles and text.

use std::collections::HashMap;

use postgres::types::{ToSql, Type};

use super::error::HistoryError;

/// A statement parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    /// `None` stores NULL (a NaN sample).
    Real(Option<f64>),
    /// `None` stores NULL.
    Text(Option<String>),
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(Some(v.to_owned()))
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(Some(v))
    }
}

impl From<Option<f64>> for Value {
    fn from(v: Option<f64>) -> Value {
        Value::Real(v)
    }
}

/// One column of a result row.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl Cell {
    pub fn int(&self) -> Option<i64> {
        match self {
            Cell::Int(v) => Some(*v),
            _ => None,
        }
    }

    pub fn real(&self) -> Option<f64> {
        match self {
            Cell::Real(v) => Some(*v),
            Cell::Int(v) => Some(*v as f64),
            _ => None,
        }
    }

    pub fn text(&self) -> Option<&str> {
        match self {
            Cell::Text(v) => Some(v),
            _ => None,
        }
    }
}

/// An open connection.
pub enum Backend {
    Sqlite(rusqlite::Connection),
    Postgres(Box<Postgres>),
}

/// A PostgreSQL client and the statements it prepared (one round trip each, once).
pub struct Postgres {
    pub(crate) client: postgres::Client,
    prepared: HashMap<String, postgres::Statement>,
}

impl Postgres {
    pub(crate) fn new(client: postgres::Client) -> Postgres {
        Postgres {
            client,
            prepared: HashMap::new(),
        }
    }

    fn statement(&mut self, sql: &str, what: &str) -> Result<postgres::Statement, HistoryError> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let s = self
            .client
            .prepare(&dollar_placeholders(sql))
            .map_err(|source| pg_error(what, source))?;
        self.prepared.insert(sql.to_owned(), s.clone());
        Ok(s)
    }
}

fn pg_error(what: &str, source: postgres::Error) -> HistoryError {
    HistoryError::Postgres {
        what: what.to_owned(),
        source,
    }
}

fn sqlite_error(what: &str, source: rusqlite::Error) -> HistoryError {
    HistoryError::Sqlite {
        what: what.to_owned(),
        source,
    }
}

/// `a = ? AND b = ?` → `a = $1 AND b = $2` (the query layer's statements hold no `?` in text).
pub(crate) fn dollar_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

impl Backend {
    /// `sqlite` or `postgres` (for the schema's one dialect difference and for messages).
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }

    /// Runs several statements without parameters (migrations, BEGIN/COMMIT).
    pub fn batch(&mut self, sql: &str, what: &str) -> Result<(), HistoryError> {
        match self {
            Backend::Sqlite(c) => c.execute_batch(sql).map_err(|e| sqlite_error(what, e)),
            Backend::Postgres(p) => p.client.batch_execute(sql).map_err(|e| pg_error(what, e)),
        }
    }

    /// Runs one statement; returns the rows it changed.
    pub fn execute(
        &mut self,
        sql: &str,
        params: &[Value],
        what: &str,
    ) -> Result<u64, HistoryError> {
        match self {
            Backend::Sqlite(c) => {
                let mut s = c.prepare_cached(sql).map_err(|e| sqlite_error(what, e))?;
                let n = s
                    .execute(rusqlite::params_from_iter(params.iter().map(sqlite_value)))
                    .map_err(|e| sqlite_error(what, e))?;
                Ok(n as u64)
            }
            Backend::Postgres(p) => {
                let statement = p.statement(sql, what)?;
                let boxed = pg_params(params);
                let refs: Vec<&(dyn ToSql + Sync)> = boxed.iter().map(|b| b.as_ref()).collect();
                p.client
                    .execute(&statement, &refs)
                    .map_err(|e| pg_error(what, e))
            }
        }
    }

    /// Runs one query; returns its rows, each as its cells in column order.
    pub fn query(
        &mut self,
        sql: &str,
        params: &[Value],
        what: &str,
    ) -> Result<Vec<Vec<Cell>>, HistoryError> {
        match self {
            Backend::Sqlite(c) => sqlite_query(c, sql, params, what),
            Backend::Postgres(p) => {
                let statement = p.statement(sql, what)?;
                let boxed = pg_params(params);
                let refs: Vec<&(dyn ToSql + Sync)> = boxed.iter().map(|b| b.as_ref()).collect();
                let rows = p
                    .client
                    .query(&statement, &refs)
                    .map_err(|e| pg_error(what, e))?;
                rows.iter().map(|row| pg_row(row, what)).collect()
            }
        }
    }

    /// Runs `f` in one write transaction — committed when it returns `Ok`, rolled back
    /// otherwise — holding the store's one write lock from its first statement on, so
    /// concurrent writers (two CI jobs ingesting at once) wait for each other instead of
    /// failing. SQLite: `BEGIN IMMEDIATE` takes the write lock at once, waiting through the
    /// busy timeout (a plain `BEGIN` reads first and, when another process wrote meanwhile,
    /// fails `database is locked` at once on its first write, whatever the timeout).
    /// PostgreSQL: a transaction-scoped advisory lock, released by COMMIT or ROLLBACK.
    pub fn write_transaction<T>(
        &mut self,
        what: &str,
        f: impl FnOnce(&mut Backend) -> Result<T, HistoryError>,
    ) -> Result<T, HistoryError> {
        match self {
            Backend::Sqlite(_) => self.batch("BEGIN IMMEDIATE", what)?,
            Backend::Postgres(_) => {
                self.batch("BEGIN", what)?;
                let lock = format!("SELECT pg_advisory_xact_lock({WRITE_LOCK})");
                if let Err(e) = self.batch(&lock, what) {
                    let _ = self.batch("ROLLBACK", what);
                    return Err(e);
                }
            }
        }
        match f(self) {
            Ok(v) => {
                self.batch("COMMIT", what)?;
                Ok(v)
            }
            Err(e) => {
                // The first error is the one to report; a failed rollback adds nothing to it.
                let _ = self.batch("ROLLBACK", what);
                Err(e)
            }
        }
    }
}

/// The PostgreSQL advisory lock every write of the store holds: `goldgate` in ASCII.
const WRITE_LOCK: i64 = 0x676f_6c64_6761_7465;

fn sqlite_value(v: &Value) -> rusqlite::types::Value {
    use rusqlite::types::Value as V;
    match v {
        Value::Int(i) => V::Integer(*i),
        Value::Real(Some(r)) => V::Real(*r),
        Value::Text(Some(t)) => V::Text(t.clone()),
        Value::Real(None) | Value::Text(None) => V::Null,
    }
}

fn sqlite_query(
    c: &rusqlite::Connection,
    sql: &str,
    params: &[Value],
    what: &str,
) -> Result<Vec<Vec<Cell>>, HistoryError> {
    use rusqlite::types::ValueRef;
    let mut s = c.prepare_cached(sql).map_err(|e| sqlite_error(what, e))?;
    let columns = s.column_count();
    let mut rows = s
        .query(rusqlite::params_from_iter(params.iter().map(sqlite_value)))
        .map_err(|e| sqlite_error(what, e))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(|e| sqlite_error(what, e))? {
        let mut cells = Vec::with_capacity(columns);
        for i in 0..columns {
            let cell = match row.get_ref(i).map_err(|e| sqlite_error(what, e))? {
                ValueRef::Null => Cell::Null,
                ValueRef::Integer(v) => Cell::Int(v),
                ValueRef::Real(v) => Cell::Real(v),
                ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(_) => {
                    return Err(HistoryError::ColumnType {
                        what: what.to_owned(),
                        column: i,
                        found: "blob".into(),
                        expected: "integer, real or text",
                    });
                }
            };
            cells.push(cell);
        }
        out.push(cells);
    }
    Ok(out)
}

fn pg_params(params: &[Value]) -> Vec<Box<dyn ToSql + Sync>> {
    params
        .iter()
        .map(|v| -> Box<dyn ToSql + Sync> {
            match v {
                Value::Int(i) => Box::new(*i),
                Value::Real(r) => Box::new(*r),
                Value::Text(t) => Box::new(t.clone()),
            }
        })
        .collect()
}

fn pg_row(row: &postgres::Row, what: &str) -> Result<Vec<Cell>, HistoryError> {
    let get_err = |e| pg_error(what, e);
    (0..row.len())
        .map(|i| {
            let ty = row.columns()[i].type_();
            let cell = if *ty == Type::INT8 {
                row.try_get::<_, Option<i64>>(i)
                    .map_err(get_err)?
                    .map(Cell::Int)
            } else if *ty == Type::INT4 {
                row.try_get::<_, Option<i32>>(i)
                    .map_err(get_err)?
                    .map(|v| Cell::Int(i64::from(v)))
            } else if *ty == Type::FLOAT8 {
                row.try_get::<_, Option<f64>>(i)
                    .map_err(get_err)?
                    .map(Cell::Real)
            } else if *ty == Type::TEXT || *ty == Type::VARCHAR {
                row.try_get::<_, Option<String>>(i)
                    .map_err(get_err)?
                    .map(Cell::Text)
            } else {
                return Err(HistoryError::ColumnType {
                    what: what.to_owned(),
                    column: i,
                    found: ty.name().to_owned(),
                    expected: "bigint, double precision or text",
                });
            };
            Ok(cell.unwrap_or(Cell::Null))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_in_order() {
        assert_eq!(
            dollar_placeholders("INSERT INTO t VALUES (?, ?), (?, ?)"),
            "INSERT INTO t VALUES ($1, $2), ($3, $4)"
        );
    }
}
