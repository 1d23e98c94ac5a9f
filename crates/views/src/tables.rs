//! The table of states and the table of the critical path's edges, as
//! Arrow record batches written as CSV or Parquet.

use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use critpath_engine::Analysis;
use std::io::Write;
use std::sync::Arc;

pub(crate) fn str_col(v: Vec<&str>) -> ArrayRef {
    Arc::new(StringArray::from(v))
}

/// A column of counts or nanoseconds, as signed 64-bit integers: what
/// pandas reads as `int64` (the Python package's tables have that type;
/// an unsigned column turns a difference below zero into a huge number).
/// Times are at most 2^63 - 1 ns; a sum past it is kept at that.
pub(crate) fn int_col(v: impl IntoIterator<Item = u64>) -> ArrayRef {
    let v = v.into_iter().map(|x| i64::try_from(x).unwrap_or(i64::MAX));
    Arc::new(Int64Array::from_iter_values(v))
}

pub(crate) fn f64_col(v: Vec<f64>) -> ArrayRef {
    Arc::new(Float64Array::from(v))
}

/// One row per state: its SM, visits, total and critical time.
pub fn states_batch(a: &Analysis) -> RecordBatch {
    let st = &a.states;
    let schema = Schema::new(vec![
        Field::new("sys", DataType::Utf8, false),
        Field::new("sm", DataType::Utf8, false),
        Field::new("state", DataType::Utf8, false),
        Field::new("visits", DataType::Int64, false),
        Field::new("total_ns", DataType::Int64, false),
        Field::new("critical_ns", DataType::Int64, false),
        Field::new("criticality", DataType::Float64, false),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            str_col(st.iter().map(|s| s.sys.as_str()).collect()),
            str_col(st.iter().map(|s| s.sm.as_str()).collect()),
            str_col(st.iter().map(|s| s.state.as_str()).collect()),
            int_col(st.iter().map(|s| s.visits)),
            int_col(st.iter().map(|s| s.total_ns)),
            int_col(st.iter().map(|s| s.critical_ns)),
            f64_col(st.iter().map(|s| s.criticality).collect()),
        ],
    )
    .expect("columns match the schema")
}

/// One row per edge of the critical path, in time order.
pub fn edges_batch(a: &Analysis) -> RecordBatch {
    let p: &[critpath_engine::results::PathSegment] = a.path.as_deref().unwrap_or(&[]);
    let schema = Schema::new(vec![
        Field::new("start_ns", DataType::Int64, false),
        Field::new("end_ns", DataType::Int64, false),
        Field::new("sys", DataType::Utf8, false),
        Field::new("sm", DataType::Utf8, false),
        Field::new("state", DataType::Utf8, false),
        Field::new("from_sm", DataType::Utf8, false),
        Field::new("inter", DataType::Boolean, false),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            int_col(p.iter().map(|e| e.start_ns)),
            int_col(p.iter().map(|e| e.end_ns)),
            str_col(p.iter().map(|e| e.sys.as_str()).collect()),
            str_col(p.iter().map(|e| e.sm.as_str()).collect()),
            str_col(p.iter().map(|e| e.state.as_str()).collect()),
            str_col(p.iter().map(|e| e.from_sm.as_str()).collect()),
            Arc::new(BooleanArray::from(
                p.iter().map(|e| e.inter).collect::<Vec<_>>(),
            )),
        ],
    )
    .expect("columns match the schema")
}

/// Writes a batch as CSV (a header line, then a line per row).
pub fn write_csv(b: &RecordBatch, out: impl Write) -> csv::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(b.schema().fields().iter().map(|f| f.name().as_str()))?;
    for row in 0..b.num_rows() {
        let cells: Vec<String> = b.columns().iter().map(|c| cell(c, row)).collect();
        w.write_record(&cells)?;
    }
    w.flush()?;
    Ok(())
}

/// One cell of a column as text.
fn cell(c: &ArrayRef, row: usize) -> String {
    use arrow_array::Array;
    let any = c.as_any();
    if let Some(a) = any.downcast_ref::<StringArray>() {
        a.value(row).to_string()
    } else if let Some(a) = any.downcast_ref::<Int64Array>() {
        a.value(row).to_string()
    } else if let Some(a) = any.downcast_ref::<Float64Array>() {
        a.value(row).to_string()
    } else if let Some(a) = any.downcast_ref::<BooleanArray>() {
        a.value(row).to_string()
    } else {
        debug_assert!(c.is_empty(), "unexpected column type");
        String::new()
    }
}

/// Writes a batch as a Parquet file.
pub fn write_parquet(
    b: &RecordBatch,
    out: impl Write + Send,
) -> Result<(), parquet::errors::ParquetError> {
    let mut w = parquet::arrow::ArrowWriter::try_new(out, b.schema(), None)?;
    w.write(b)?;
    w.close()?;
    Ok(())
}
