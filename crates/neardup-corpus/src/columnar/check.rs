//! Whether one table output can hold the rows of every input, decided before anything is read
//! or written.
//!
//! Parquet and Arrow parts with other columns, or JSON records after rows of a table, cannot go
//! into one Parquet or Arrow output. This was found when the second pass reached the odd part,
//! after `--clusters -` had already streamed to standard output, and said only the columns'
//! names (`[id, text] and [id, text]`, when a type differed). Each part's schema is read from
//! its footer (or its first message) first, and a difference is said by column, type and file.

use arrow_schema::{DataType, Schema};

use super::open::open_table;
use crate::read::{open_file, ReadOptions, Source};
use crate::CorpusError;

/// Refuses inputs that one table output cannot hold: Parquet and Arrow inputs whose columns
/// differ (their partition columns included), naming the column, both types and both files,
/// and a JSON Lines or text input after a table. An input that cannot be opened is left to the
/// read, which says so in its place.
pub fn check_table_inputs(sources: &[Source], opts: &ReadOptions) -> Result<(), CorpusError> {
    let mut first: Option<(String, arrow_schema::SchemaRef)> = None;
    for source in sources {
        let format = opts.format_of(source);
        if !format.is_columnar() {
            if let Some((table, _)) = &first {
                return Err(CorpusError::Usage(format!(
                    "{} holds JSON records and comes after the table {table}: one table output \
                     holds rows of one schema (write JSON Lines, -o kept.jsonl, or dedup them \
                     apart)",
                    source.name()
                )));
            }
            continue;
        }
        let Ok(file) = open_file(source) else { continue };
        let Ok(table) = open_table(file, format, Some(&[])) else { continue };
        let schema = table.with_partition(source.partition()).schema;
        match &first {
            None => first = Some((source.name(), schema)),
            Some((first_name, first_schema)) => {
                if let Some(d) = difference(first_schema, first_name, &schema, &source.name()) {
                    return Err(CorpusError::Usage(format!(
                        "the inputs' columns differ and one {} output holds one schema: {d} \
                         (write JSON Lines, -o kept.jsonl, or dedup them apart)",
                        format.name()
                    )));
                }
            }
        }
    }
    Ok(())
}

/// How the columns of `b` differ from those of `a`, in words (`column "score" is Int64 in A
/// and Utf8 in B`); `None` when a table writer can hold both (nullability and metadata aside).
pub(crate) fn difference(a: &Schema, a_name: &str, b: &Schema, b_name: &str) -> Option<String> {
    for field in a.fields() {
        match b.field_with_name(field.name()) {
            Err(_) => {
                return Some(format!("column {:?} is in {a_name}, not in {b_name}", field.name()))
            }
            Ok(other) if !same_type(field.data_type(), other.data_type()) => {
                return Some(format!(
                    "column {:?} is {} in {a_name} and {} in {b_name}",
                    field.name(),
                    field.data_type(),
                    other.data_type()
                ))
            }
            Ok(_) => {}
        }
    }
    if let Some(extra) = b.fields().iter().find(|f| a.field_with_name(f.name()).is_err()) {
        return Some(format!("column {:?} is in {b_name}, not in {a_name}", extra.name()));
    }
    let names = |s: &Schema| s.fields().iter().map(|f| f.name().clone()).collect::<Vec<_>>();
    (names(a) != names(b)).then(|| {
        format!(
            "the columns are in another order: [{}] in {a_name}, [{}] in {b_name}",
            names(a).join(", "),
            names(b).join(", ")
        )
    })
}

/// Equal types, but for the nullability and metadata of nested fields.
fn same_type(a: &DataType, b: &DataType) -> bool {
    let fields = |x: &arrow_schema::Fields, y: &arrow_schema::Fields| {
        x.len() == y.len()
            && x.iter()
                .zip(y.iter())
                .all(|(f, g)| f.name() == g.name() && same_type(f.data_type(), g.data_type()))
    };
    match (a, b) {
        (DataType::Struct(x), DataType::Struct(y)) => fields(x, y),
        (DataType::List(f), DataType::List(g))
        | (DataType::LargeList(f), DataType::LargeList(g))
        | (DataType::Map(f, _), DataType::Map(g, _)) => same_type(f.data_type(), g.data_type()),
        (DataType::FixedSizeList(f, n), DataType::FixedSizeList(g, m)) => {
            n == m && same_type(f.data_type(), g.data_type())
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Field;

    #[test]
    fn a_difference_names_the_column_both_types_and_both_files() {
        let a = Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("score", DataType::Int64, true),
        ]);
        let b = Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("score", DataType::Utf8, true),
        ]);
        assert_eq!(
            difference(&a, "p0", &b, "p1").as_deref(),
            Some("column \"score\" is Int64 in p0 and Utf8 in p1")
        );
        let c = Schema::new(vec![Field::new("id", DataType::Int64, true)]);
        assert_eq!(
            difference(&a, "p0", &c, "p1").as_deref(),
            Some("column \"score\" is in p0, not in p1")
        );
        let reordered = Schema::new(vec![a.field(1).clone(), a.field(0).clone()]);
        assert!(difference(&a, "p0", &reordered, "p1").is_some_and(|d| d.contains("another order")));
        let nullable =
            Schema::new(vec![a.field(0).clone().with_nullable(true), a.field(1).clone()]);
        assert_eq!(difference(&a, "p0", &nullable, "p1"), None, "nullability aside");
    }
}
