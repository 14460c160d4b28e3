//! The trend report as one offline HTML file: the summary tables, then per phase a table of
//! its figures and their charts (inline SVG, no scripts, nothing fetched).

use super::TrendReport;
use super::trend::{Extent, document};

/// The HTML document of `report`.
pub fn render(report: &TrendReport) -> String {
    let extent = Extent {
        charts: true,
        every_series: true,
        phases: usize::MAX,
    };
    document(report, extent).0.html()
}
