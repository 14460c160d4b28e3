//! The offline HTML page every human-readable writer shares: its stylesheet and its head.

use std::fmt::Write;

use super::svg::esc;

pub(crate) const CSS: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px auto;max-width:1100px;padding:0 16px;color:#222;background:#fff}\
h1{font-size:1.5em;margin-bottom:.3em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}\
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}\
th,td{border:1px solid #ddd;padding:3px 7px}th{background:#f4f4f4;text-align:left}\
td.r{text-align:right;font-variant-numeric:tabular-nums}\
.bad{color:#b00020;font-weight:600}.warn{color:#8a5a00;font-weight:600}.good{color:#1b7a2b}\
.banner{border-left:4px solid #b00020;background:#fdecee;padding:8px 12px;margin:.8em 0}\
.banner.warn{border-color:#c98a00;background:#fff6e0}\
.facts th{width:9em}.facts ul{margin:0;padding-left:1.2em}.note{color:#555;font-size:.9em}\
.toc{font-size:.9em;line-height:1.7;margin:.4em 0 .8em}.toc a{color:#1a5fb4;text-decoration:none;white-space:nowrap}.toc a:hover{text-decoration:underline}\
svg.chart{width:100%;max-width:760px;height:auto;display:block;margin:.8em 0}\
svg .ct{font-size:14px;font-weight:600;fill:#222}svg .tick{font-size:11px;fill:#444}\
svg .al{font-size:12px;fill:#333}svg .lg{font-size:11px;fill:#333}\
svg .grid{stroke:#e6e6e6;stroke-width:1}svg .axis{stroke:#555;stroke-width:1}\
svg .pt{fill:#1f77b4;fill-opacity:.55}";

/// The document's start up to its `<h1>`: inline stylesheet, nothing from the network.
pub(crate) fn open(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t}</title><style>{CSS}</style></head><body>\n<h1>{t}</h1>\n",
        t = esc(title)
    );
}

/// The document's end.
pub(crate) const CLOSE: &str = "</body></html>\n";
