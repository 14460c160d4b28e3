//! The columns of `requests.parquet`, in file order: how each is typed and how it is read
//! from and written to a [`RecordRow`]. Every column is defined here and nowhere else.

use crate::client::{ErrorKind, OutputTokenSource, RequestError};

use super::{RecordRow, Window};

/// A column's Parquet type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `DOUBLE`.
    F64,
    /// `INT64`.
    I64,
    /// `BYTE_ARRAY (STRING)`.
    Str,
    /// `BOOLEAN`.
    Bool,
}

/// One cell's value, the same shape both ways.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    F64(f64),
    I64(i64),
    Str(String),
    Bool(bool),
}

pub struct Column {
    pub name: &'static str,
    pub kind: Kind,
    /// Nullable (`OPTIONAL`); required columns never hold [`Cell::Null`].
    pub optional: bool,
    pub get: fn(&RecordRow) -> Cell,
    pub set: fn(&mut RecordRow, Cell) -> Result<(), String>,
}

impl Cell {
    fn opt_f64(self) -> Result<Option<f64>, String> {
        match self {
            Cell::Null => Ok(None),
            Cell::F64(v) => Ok(Some(v)),
            other => Err(format!("expected a double, found {other:?}")),
        }
    }
    fn f64(self) -> Result<f64, String> {
        self.opt_f64()?
            .ok_or_else(|| "missing a required double".to_string())
    }
    fn opt_u64(self) -> Result<Option<u64>, String> {
        match self {
            Cell::Null => Ok(None),
            Cell::I64(v) => u64::try_from(v)
                .map(Some)
                .map_err(|_| format!("{v} is negative")),
            other => Err(format!("expected an int64, found {other:?}")),
        }
    }
    fn u64(self) -> Result<u64, String> {
        self.opt_u64()?
            .ok_or_else(|| "missing a required int64".to_string())
    }
    fn opt_str(self) -> Result<Option<String>, String> {
        match self {
            Cell::Null => Ok(None),
            Cell::Str(s) => Ok(Some(s)),
            other => Err(format!("expected a string, found {other:?}")),
        }
    }
    fn str(self) -> Result<String, String> {
        self.opt_str()?
            .ok_or_else(|| "missing a required string".to_string())
    }
    fn opt_bool(self) -> Result<Option<bool>, String> {
        match self {
            Cell::Null => Ok(None),
            Cell::Bool(b) => Ok(Some(b)),
            other => Err(format!("expected a boolean, found {other:?}")),
        }
    }
}

fn f64_cell(v: Option<f64>) -> Cell {
    v.map_or(Cell::Null, Cell::F64)
}

fn u64_cell(v: Option<u64>) -> Cell {
    // Counts and indexes stay far below i64::MAX; saturate rather than wrap.
    v.map_or(Cell::Null, |n| {
        Cell::I64(i64::try_from(n).unwrap_or(i64::MAX))
    })
}

fn str_cell(v: Option<&str>) -> Cell {
    v.map_or(Cell::Null, |s| Cell::Str(s.to_string()))
}

/// Enum values as they are spelled in report.json.
fn enum_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

fn enum_value<T: serde::de::DeserializeOwned>(name: String) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(name.clone()))
        .map_err(|_| format!("unknown value {name:?}"))
}

/// The error's parts live in six columns; a row has an error when `error_kind` is set.
fn error_mut(row: &mut RecordRow) -> &mut RequestError {
    row.record
        .error
        .get_or_insert_with(|| RequestError::new(ErrorKind::Connect, None, String::new()))
}

/// A record field's Rust type as a column: its Parquet type, whether it may be null, and its
/// conversion to and from a cell.
trait FieldValue: Sized {
    const KIND: Kind;
    const OPTIONAL: bool;
    fn cell(&self) -> Cell;
    fn from_cell(cell: Cell) -> Result<Self, String>;
}

macro_rules! field_values {
    ($($t:ty: $kind:ident, optional $optional:literal, $cell:expr, $from:ident;)*) => {$(
        impl FieldValue for $t {
            const KIND: Kind = Kind::$kind;
            const OPTIONAL: bool = $optional;
            fn cell(&self) -> Cell {
                $cell(*self)
            }
            fn from_cell(cell: Cell) -> Result<Self, String> {
                cell.$from()
            }
        }
    )*};
}

field_values! {
    Option<f64>: F64, optional true, f64_cell, opt_f64;
    f64: F64, optional false, Cell::F64, f64;
    Option<u64>: I64, optional true, u64_cell, opt_u64;
    u64: I64, optional false, |v| u64_cell(Some(v)), u64;
}

/// The column of an optional text field of the record's error.
macro_rules! error_text_column {
    ($name:literal, $field:ident) => {
        Column {
            name: $name,
            kind: Kind::Str,
            optional: true,
            get: |r| str_cell(r.record.error.as_ref().and_then(|e| e.$field.as_deref())),
            set: |r, c| {
                if let Some(text) = c.opt_str()? {
                    error_mut(r).$field = Some(text);
                }
                Ok(())
            },
        }
    };
}

/// The column of a numeric `RecordRow::record` field of type `$t`, named as the field.
macro_rules! column {
    ($field:ident: $t:ty) => {
        Column {
            name: stringify!($field),
            kind: <$t as FieldValue>::KIND,
            optional: <$t as FieldValue>::OPTIONAL,
            get: |r| FieldValue::cell(&r.record.$field),
            set: |r, c| {
                r.record.$field = <$t as FieldValue>::from_cell(c)?;
                Ok(())
            },
        }
    };
}

/// Every column of `requests.parquet`, in file order. Times are milliseconds, rates per
/// second, exactly as in report.json's `request_timings`.
pub static COLUMNS: &[Column] = &[
    Column {
        name: "phase",
        kind: Kind::Str,
        optional: false,
        get: |r| Cell::Str(r.phase.clone()),
        set: |r, c| {
            r.phase = c.str()?;
            Ok(())
        },
    },
    Column {
        name: "window",
        kind: Kind::Str,
        optional: false,
        get: |r| Cell::Str(r.window.as_str().to_string()),
        set: |r, c| {
            r.window = enum_value::<Window>(c.str()?)?;
            Ok(())
        },
    },
    Column {
        name: "shard",
        kind: Kind::I64,
        optional: true,
        get: |r| u64_cell(r.shard.map(u64::from)),
        set: |r, c| {
            r.shard = c
                .opt_u64()?
                .map(u32::try_from)
                .transpose()
                .map_err(|e| e.to_string())?;
            Ok(())
        },
    },
    column!(request_index: u64),
    Column {
        name: "request_id",
        kind: Kind::Str,
        optional: false,
        get: |r| Cell::Str(r.record.request_id.clone()),
        set: |r, c| {
            r.record.request_id = c.str()?;
            Ok(())
        },
    },
    Column {
        name: "sent_request_id",
        kind: Kind::Str,
        optional: true,
        get: |r| str_cell(r.record.sent_request_id.as_deref()),
        set: |r, c| {
            r.record.sent_request_id = c.opt_str()?;
            Ok(())
        },
    },
    Column {
        name: "trace_id",
        kind: Kind::Str,
        optional: true,
        get: |r| str_cell(r.record.trace_id.as_deref()),
        set: |r, c| {
            r.record.trace_id = c.opt_str()?;
            Ok(())
        },
    },
    column!(start_offset_ms: f64),
    column!(scheduled_offset_ms: Option<f64>),
    column!(send_lag_ms: Option<f64>),
    column!(slot_wait_ms: Option<f64>),
    column!(time_to_first_output_ms: Option<f64>),
    column!(ttft_ms: Option<f64>),
    column!(e2e_ms: f64),
    column!(generation_ms: Option<f64>),
    column!(visible_generation_ms: Option<f64>),
    column!(decode_tok_s: Option<f64>),
    column!(mean_inter_token_latency_ms: Option<f64>),
    column!(tpot_ms: Option<f64>),
    column!(effective_prefill_tok_s: Option<f64>),
    column!(planned_context_tokens: Option<u64>),
    column!(prompt_tokens: Option<u64>),
    column!(cached_tokens: Option<u64>),
    column!(output_tokens: Option<u64>),
    Column {
        name: "output_token_source",
        kind: Kind::Str,
        optional: true,
        get: |r| {
            str_cell(
                r.record
                    .output_token_source
                    .map(|s| enum_name(&s))
                    .as_deref(),
            )
        },
        set: |r, c| {
            r.record.output_token_source = c
                .opt_str()?
                .map(enum_value::<OutputTokenSource>)
                .transpose()?;
            Ok(())
        },
    },
    column!(content_chunks: u64),
    column!(reasoning_chunks: u64),
    column!(max_inter_chunk_ms: Option<f64>),
    Column {
        name: "error_kind",
        kind: Kind::Str,
        optional: true,
        get: |r| {
            str_cell(
                r.record
                    .error
                    .as_ref()
                    .map(|e| enum_name(&e.kind))
                    .as_deref(),
            )
        },
        set: |r, c| {
            if let Some(kind) = c.opt_str()? {
                error_mut(r).kind = enum_value::<ErrorKind>(kind)?;
            }
            Ok(())
        },
    },
    Column {
        name: "error_status",
        kind: Kind::I64,
        optional: true,
        get: |r| {
            u64_cell(
                r.record
                    .error
                    .as_ref()
                    .and_then(|e| e.status)
                    .map(u64::from),
            )
        },
        set: |r, c| {
            if let Some(status) = c.opt_u64()? {
                error_mut(r).status = Some(u16::try_from(status).map_err(|e| e.to_string())?);
            }
            Ok(())
        },
    },
    Column {
        name: "error_message",
        kind: Kind::Str,
        optional: true,
        get: |r| str_cell(r.record.error.as_ref().map(|e| e.message.as_str())),
        set: |r, c| {
            if let Some(message) = c.opt_str()? {
                error_mut(r).message = message;
            }
            Ok(())
        },
    },
    error_text_column!("error_body", body),
    error_text_column!("error_code", code),
    error_text_column!("error_type", error_type),
    Column {
        name: "connection_retries",
        kind: Kind::I64,
        optional: false,
        get: |r| u64_cell(Some(u64::from(r.record.connection_retries))),
        set: |r, c| {
            r.record.connection_retries = u32::try_from(c.u64()?).map_err(|e| e.to_string())?;
            Ok(())
        },
    },
    Column {
        name: "new_connection",
        kind: Kind::Bool,
        optional: true,
        get: |r| r.record.new_connection.map_or(Cell::Null, Cell::Bool),
        set: |r, c| {
            r.record.new_connection = c.opt_bool()?;
            Ok(())
        },
    },
    column!(connect_ms: Option<f64>),
    column!(tls_ms: Option<f64>),
    column!(session: Option<u64>),
    column!(turn: Option<u64>),
    column!(server_queue_ms: Option<f64>),
    column!(server_prompt_ms: Option<f64>),
    column!(server_total_ms: Option<f64>),
    column!(inputs: Option<u64>),
    column!(ttft_tool_ms: Option<f64>),
    // Optional so that files written before tool calls were measured still read (as 0).
    Column {
        name: "tool_call_chunks",
        kind: Kind::I64,
        optional: true,
        get: |r| u64_cell(Some(r.record.tool_call_chunks)),
        set: |r, c| {
            r.record.tool_call_chunks = c.opt_u64()?.unwrap_or(0);
            Ok(())
        },
    },
    Column {
        name: "model",
        kind: Kind::Str,
        optional: true,
        get: |r| str_cell(r.record.model.as_deref()),
        set: |r, c| {
            r.record.model = c.opt_str()?;
            Ok(())
        },
    },
    column!(cancelled_ms: Option<f64>),
    column!(request_bytes: Option<u64>),
    // Optional so that files written before images were sent still read (as 0).
    Column {
        name: "images",
        kind: Kind::I64,
        optional: true,
        get: |r| u64_cell(Some(r.record.images)),
        set: |r, c| {
            r.record.images = c.opt_u64()?.unwrap_or(0);
            Ok(())
        },
    },
    column!(reasoning_tokens: Option<u64>),
    Column {
        name: "reasoning_token_source",
        kind: Kind::Str,
        optional: true,
        get: |r| {
            str_cell(
                r.record
                    .reasoning_token_source
                    .map(|s| enum_name(&s))
                    .as_deref(),
            )
        },
        set: |r, c| {
            r.record.reasoning_token_source = c
                .opt_str()?
                .map(enum_value::<OutputTokenSource>)
                .transpose()?;
            Ok(())
        },
    },
    // The server's object as it sent it, JSON; the two figures beside it are read from it.
    Column {
        name: "spec_decoding",
        kind: Kind::Str,
        optional: true,
        get: |r| {
            let json = r
                .record
                .spec_decoding
                .as_ref()
                .map(|s| serde_json::to_string(s).unwrap_or_default());
            str_cell(json.as_deref())
        },
        set: |r, c| {
            r.record.spec_decoding = c
                .opt_str()?
                .map(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
                .transpose()?;
            Ok(())
        },
    },
    Column {
        name: "spec_acceptance_length",
        kind: Kind::F64,
        optional: true,
        get: |r| f64_cell(r.record.value(crate::figure::Figure::SpecAcceptanceLength)),
        set: |_, _| Ok(()),
    },
    Column {
        name: "spec_acceptance_rate",
        kind: Kind::F64,
        optional: true,
        get: |r| f64_cell(r.record.value(crate::figure::Figure::SpecAcceptanceRate)),
        set: |_, _| Ok(()),
    },
    // Optional so that files written before archetype mixes still read.
    Column {
        name: "archetype",
        kind: Kind::Str,
        optional: true,
        get: |r| str_cell(r.record.archetype.as_deref()),
        set: |r, c| {
            r.record.archetype = c.opt_str()?;
            Ok(())
        },
    },
    // A checked reply (`response_format`, `score`): its text, how it ended and its verdict.
    Column {
        name: "reply",
        kind: Kind::Str,
        optional: true,
        get: |r| str_cell(r.record.reply.as_deref()),
        set: |r, c| {
            r.record.reply = c.opt_str()?;
            Ok(())
        },
    },
    Column {
        name: "finish_reason",
        kind: Kind::Str,
        optional: true,
        get: |r| str_cell(r.record.finish_reason.as_deref()),
        set: |r, c| {
            r.record.finish_reason = c.opt_str()?;
            Ok(())
        },
    },
    Column {
        name: "valid",
        kind: Kind::Bool,
        optional: true,
        get: |r| r.record.valid.map_or(Cell::Null, Cell::Bool),
        set: |r, c| {
            r.record.valid = c.opt_bool()?;
            Ok(())
        },
    },
    Column {
        name: "invalid_reason",
        kind: Kind::Str,
        optional: true,
        get: |r| str_cell(r.record.invalid_reason.as_deref()),
        set: |r, c| {
            r.record.invalid_reason = c.opt_str()?;
            Ok(())
        },
    },
    Column {
        name: "expected",
        kind: Kind::Str,
        optional: true,
        get: |r| str_cell(r.record.expected.as_deref()),
        set: |r, c| {
            r.record.expected = c.opt_str()?;
            Ok(())
        },
    },
    Column {
        name: "correct",
        kind: Kind::Bool,
        optional: true,
        get: |r| r.record.correct.map_or(Cell::Null, Cell::Bool),
        set: |r, c| {
            r.record.correct = c.opt_bool()?;
            Ok(())
        },
    },
];

/// The Parquet schema of [`COLUMNS`].
pub fn message_type() -> String {
    let mut text = String::from("message request_record {\n");
    for column in COLUMNS {
        let repetition = if column.optional {
            "OPTIONAL"
        } else {
            "REQUIRED"
        };
        let physical = match column.kind {
            Kind::F64 => "DOUBLE",
            Kind::I64 => "INT64",
            Kind::Str => "BYTE_ARRAY",
            Kind::Bool => "BOOLEAN",
        };
        let logical = if column.kind == Kind::Str {
            " (STRING)"
        } else {
            ""
        };
        text.push_str(&format!(
            "  {repetition} {physical} {}{logical};\n",
            column.name
        ));
    }
    text.push('}');
    text
}
