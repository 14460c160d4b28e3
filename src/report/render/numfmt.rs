//! Number formatting shared by the writers: milliseconds, rates, changes, metric values.

use crate::report::model::figure_path::Unit;

/// Seconds shown as milliseconds with precision that suits the size.
pub fn ms_from_s(seconds: f64) -> String {
    ms(seconds * 1000.0)
}

/// Milliseconds with 2, 1 or 0 decimals depending on size (after rounding, so 9.996 is
/// `10.0`, not `10.00`).
pub fn ms(millis: f64) -> String {
    if !millis.is_finite() {
        return "–".to_string();
    }
    let a = millis.abs();
    if a < 9.995 {
        format!("{millis:.2}")
    } else if a < 99.95 {
        format!("{millis:.1}")
    } else {
        format!("{millis:.0}")
    }
}

/// About three significant digits, without an exponent for everyday magnitudes. The
/// decimals follow the rounded value, so 0.9996 is `1.00`, not `1.000`.
pub fn sig3(x: f64) -> String {
    if !x.is_finite() {
        return "–".to_string();
    }
    if x == 0.0 {
        return "0".to_string();
    }
    let exponent = x.abs().log10().floor() as i32;
    let scale = 10f64.powi(2 - exponent);
    let rounded = (x * scale).round() / scale;
    let a = rounded.abs();
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else if a >= 0.001 {
        let digits = (2 - a.log10().floor() as i32).clamp(0, 6) as usize;
        format!("{x:.digits$}")
    } else {
        format!("{x:.2e}")
    }
}

/// A value with its unit, for tables that mix metrics (rechecks, compare).
pub fn with_unit(value: f64, unit: Unit) -> String {
    match unit {
        // Sub-100 ms times read better in milliseconds than as 0.00645 s.
        Unit::Seconds if value.abs() < 0.1 && value != 0.0 => {
            format!("{} ms", sig3(value * 1000.0))
        }
        Unit::Seconds => format!("{} s", sig3(value)),
        Unit::Millis => format!("{} ms", sig3(value)),
        Unit::TokensPerSecond => format!("{} tok/s", sig3(value)),
        Unit::RequestsPerSecond => format!("{} req/s", sig3(value)),
        Unit::InputsPerSecond => format!("{} inputs/s", sig3(value)),
        Unit::ImagesPerSecond => format!("{} images/s", sig3(value)),
        Unit::Bytes => format!("{} B", sig3(value)),
        Unit::BytesPerSecond => format!("{} B/s", sig3(value)),
        Unit::Count | Unit::Tokens => {
            if value.fract() == 0.0 && value.abs() < 1e15 {
                format!("{value:.0}")
            } else {
                sig3(value)
            }
        }
        Unit::Ratio => format!("{}%", sig3(value * 100.0)),
        Unit::PricePerMillionTokens => format!("{} per Mtok", sig3(value)),
        Unit::Watts => format!("{} W", sig3(value)),
        Unit::JoulesPerToken => format!("{} J/tok", sig3(value)),
        Unit::JoulesPerRequest => format!("{} J/req", sig3(value)),
    }
}

/// A figure with its unit for a table of mixed figures (rechecks, compare): a time under
/// 100 s in milliseconds, as the rest of the report reads latencies, so a column never
/// switches unit between rows (`26.7 ms` above `261 ms`, not `0.261 s`).
pub fn figure_value(value: f64, unit: Unit) -> String {
    match unit {
        Unit::Seconds if value.abs() < 100.0 => format!("{} ms", sig3(value * 1000.0)),
        _ => with_unit(value, unit),
    }
}

/// A signed difference of a figure, in [`figure_value`]'s units; no difference has no sign.
pub fn figure_change(diff: f64, unit: Unit) -> String {
    format!("{}{}", sign(diff), figure_value(diff.abs(), unit))
}

/// A relative change as a signed percentage (`+12.3%`, `−97.9%`). The sign is the change's
/// even when it rounds to nothing (`−0.0%` beside `−0.180 tok/s`); no change at all is `0.0%`.
pub fn pct_change(change: f64) -> String {
    if !change.is_finite() {
        return if change > 0.0 { "+∞%" } else { "−∞%" }.to_string();
    }
    let p = change * 100.0;
    let body = if p.abs() >= 100.0 {
        format!("{:.0}", p.abs())
    } else {
        format!("{:.1}", p.abs())
    };
    format!("{}{body}%", sign(p))
}

/// A signed absolute difference with unit; no difference at all has no sign.
pub fn signed(diff: f64, unit: Unit) -> String {
    format!("{}{}", sign(diff), with_unit(diff.abs(), unit))
}

/// `+`, `−`, or nothing for zero (and −0).
fn sign(x: f64) -> &'static str {
    if x > 0.0 {
        "+"
    } else if x < 0.0 {
        "−"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(ms_from_s(14.9), "14900");
        assert_eq!(ms_from_s(0.15225), "152");
        assert_eq!(ms_from_s(0.006237), "6.24");
        assert_eq!(sig3(0.3219), "0.322");
        assert_eq!(sig3(146.779), "147");
        // The decimals follow the rounded value.
        assert_eq!(sig3(0.99996), "1.00");
        assert_eq!(sig3(9.996), "10.0");
        assert_eq!(sig3(99.96), "100");
        assert_eq!(sig3(0.09996), "0.100");
        assert_eq!(sig3(-0.99996), "-1.00");
        assert_eq!(sig3(0.0009996), "0.00100");
        assert_eq!(ms(9.996), "10.0");
        assert_eq!(ms(99.96), "100");
        assert_eq!(ms(9.994), "9.99");
        assert_eq!(pct_change(-0.9785), "−97.9%");
        assert_eq!(pct_change(0.1), "+10.0%");
        assert_eq!(pct_change(-0.0), "0.0%");
        assert_eq!(pct_change(0.0), "0.0%");
        // A tiny change keeps its sign, as its absolute change beside it does.
        assert_eq!(pct_change(-0.0001), "−0.0%");
        assert_eq!(pct_change(0.0001), "+0.0%");
        assert_eq!(signed(-0.18, Unit::TokensPerSecond), "−0.180 tok/s");
        assert_eq!(signed(0.0, Unit::Count), "0");
        assert_eq!(with_unit(14.9, Unit::Seconds), "14.9 s");
        assert_eq!(with_unit(0.258, Unit::Seconds), "0.258 s");
        assert_eq!(with_unit(0.00645, Unit::Seconds), "6.45 ms");
        assert_eq!(with_unit(0.01, Unit::Ratio), "1.00%");
        // Figure tables keep latencies in milliseconds up to 100 s.
        assert_eq!(figure_value(0.0267, Unit::Seconds), "26.7 ms");
        assert_eq!(figure_value(0.261, Unit::Seconds), "261 ms");
        assert_eq!(figure_value(14.9, Unit::Seconds), "14900 ms");
        assert_eq!(figure_value(150.0, Unit::Seconds), "150 s");
        assert_eq!(figure_value(0.0, Unit::Seconds), "0 ms");
        assert_eq!(figure_value(6.45, Unit::Millis), "6.45 ms");
        assert_eq!(figure_change(-0.127, Unit::Seconds), "−127 ms");
        assert_eq!(figure_change(0.0, Unit::Seconds), "0 ms");
    }
}
