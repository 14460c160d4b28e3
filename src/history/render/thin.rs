//! Which runs a trend chart draws, so a long history stays a small page: the newest
//! [`RECENT`] runs point by point, older runs as a line through one run in every k (at most
//! [`OLDER`] of them). The line breaks where a segment starts or provenance changes, so
//! runs of another tool or deployment are never joined to the ones before.

/// Runs drawn point by point, from the newest.
pub const RECENT: usize = 60;
/// Points at most on the line through the older runs.
pub const OLDER: usize = 60;

/// The first run (an index into the series) drawn point by point.
pub fn recent_from(runs: usize) -> usize {
    runs.saturating_sub(RECENT)
}

/// The line's pieces: `drawn` (the indices on the line, ascending) split before each of
/// `breaks`, older runs thinned to one in every k. Each piece keeps its first and last run,
/// so a break or thinning never shortens a piece.
pub fn pieces(runs: usize, drawn: &[usize], breaks: &[usize]) -> Vec<Vec<usize>> {
    let older = recent_from(runs);
    let every = older.div_ceil(OLDER).max(1);
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut piece_of_last = None;
    for &i in drawn {
        let piece = breaks.iter().filter(|&&b| b <= i).count();
        if piece_of_last != Some(piece) {
            out.push(Vec::new());
            piece_of_last = Some(piece);
        }
        if let Some(current) = out.last_mut() {
            current.push(i);
        }
    }
    for piece in &mut out {
        let last = piece.last().copied();
        let first = piece.first().copied();
        piece.retain(|&i| i >= older || i % every == 0 || Some(i) == first || Some(i) == last);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_series_is_drawn_whole() {
        let drawn: Vec<usize> = (0..40).collect();
        assert_eq!(recent_from(40), 0);
        assert_eq!(pieces(40, &drawn, &[]), vec![drawn.clone()]);
    }

    #[test]
    fn older_runs_are_thinned_and_the_newest_kept() {
        let drawn: Vec<usize> = (0..1000).collect();
        let line = pieces(1000, &drawn, &[]);
        assert_eq!(line.len(), 1);
        let recent = 1000 - RECENT;
        let older: Vec<usize> = line[0].iter().copied().filter(|&i| i < recent).collect();
        assert!(older.len() <= OLDER + 1, "{}", older.len());
        assert!(older.len() >= OLDER / 2, "{}", older.len());
        assert!(line[0].ends_with(&(recent..1000).collect::<Vec<_>>()));
        assert_eq!(line[0][0], 0);
    }

    #[test]
    fn a_break_starts_a_new_piece_and_left_out_runs_are_skipped() {
        let drawn = [0, 1, 2, 4, 5, 6];
        assert_eq!(pieces(7, &drawn, &[4]), vec![vec![0, 1, 2], vec![4, 5, 6]]);
        // A break at a run left off the line still splits there.
        assert_eq!(pieces(7, &drawn, &[3]), vec![vec![0, 1, 2], vec![4, 5, 6]]);
    }
}
