//! `compare --format html`: what the markdown holds, in the same order, as one offline page
//! that loads cleanly in headless Chromium.

use super::*;
use servebench::report::SaltUsed;

/// `compare BASE NEW --force` with failing gates, written in `format` to `out`: the exit
/// code and stderr.
fn compare(base: &Path, new: &Path, format: &str, out: &Path) -> (Option<i32>, String) {
    let run = servebench()
        .arg("compare")
        .args([base, new])
        .args([
            "--force",
            "--gate",
            "ttft.p95 < +10%",
            "--gate",
            "errors <= 3",
        ])
        .args(["--format", format, "-o"])
        .arg(out)
        .output()
        .expect("run");
    (
        run.status.code(),
        String::from_utf8_lossy(&run.stderr).into_owned(),
    )
}

/// Markdown text as a reader sees it: emphasis and code marks dropped, escapes undone.
fn plain(md: &str) -> String {
    let mut out = String::new();
    let mut chars = md
        .replace("**", "")
        .replace('`', "")
        .chars()
        .collect::<Vec<_>>();
    chars.reverse();
    while let Some(c) = chars.pop() {
        match c {
            '\\' => out.extend(chars.pop()),
            c => out.push(c),
        }
    }
    out
}

/// Every piece of text the markdown shows, in order: each heading, paragraph, quote and list
/// item, and each table cell (a table's rule row left out).
fn markdown_texts(md: &str) -> Vec<String> {
    let mut texts = Vec::new();
    for line in md
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("|---"))
    {
        if let Some(row) = line.strip_prefix("| ") {
            let row = row.strip_suffix(" |").unwrap_or(row);
            texts.extend(row.split(" | ").map(plain).filter(|t| !t.is_empty()));
        } else {
            let text = line.trim_start_matches('#').trim_start();
            let text = text.strip_prefix("> ").unwrap_or(text);
            let text = text.strip_prefix("- ").unwrap_or(text);
            texts.push(plain(text));
        }
    }
    texts
}

/// The page's text: tags dropped, entities decoded.
fn page_text(html: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

#[test]
fn compare_as_html_holds_what_the_markdown_holds_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut base = sample_report(1.0);
    let mut new = sample_report(1.5);
    // Provenance that differs, a phase forced across different work, prompts sent unsalted.
    new.metadata.insert("engine".into(), "vllm 0.27".into());
    base.phases[0].header.work_sha256 = Some("a".repeat(64));
    new.phases[0].header.work_sha256 = Some("b".repeat(64));
    new.phases[1].header.prompt_salt = Some(SaltUsed::None);
    let base = write_json(dir.path(), "base.json", &base);
    let new = write_json(dir.path(), "new.json", &new);
    let (md_path, html_path) = (dir.path().join("c.md"), dir.path().join("c.html"));
    for (format, path) in [("md", &md_path), ("html", &html_path)] {
        let (code, stderr) = compare(&base, &new, format, path);
        assert_eq!(code, Some(1), "{format}: a gate fails: {stderr}");
    }
    let md = std::fs::read_to_string(&md_path).expect("markdown");
    let html = std::fs::read_to_string(&html_path).expect("html");

    let text = page_text(&html);
    let mut at = 0;
    let texts = markdown_texts(&md);
    assert!(texts.len() > 100, "{md}");
    for piece in &texts {
        match text[at..].find(piece.as_str()) {
            Some(found) => at += found + piece.len(),
            None => panic!("`{piece}` is in the markdown but not (in order) on the page:\n{text}"),
        }
    }
    assert_eq!(
        html.matches("<table>").count(),
        md.lines().filter(|l| l.starts_with("|---")).count(),
        "one table for each"
    );
    // What each callout and mark looks like on the page.
    for shown in [
        "<div class=\"banner\"><b>✗ 6 of 12 gate checks failed.</b></div>",
        "<div class=\"banner warn\"><b>Forced:</b> the two runs asked for different work; \
         compared because of <code>--force</code>.</div>",
        "(<code>salt: none</code>)",
        "<td class=\"r bad\">+50.0%</td>",
        "<h2 id=\"what-differs-between-the-runs\">What differs between the runs</h2>",
        "<h3 id=\"gateway-c16\">gateway-c16</h3>",
    ] {
        assert!(html.contains(shown), "{shown}\n{html}");
    }
    assert!(
        !html.contains("src=") && !html.contains("href=\"http"),
        "offline: {html}"
    );

    if let Some(browser) = browser::chromium() {
        browser::check_in_browser(browser, &html, 0, dir.path());
    }
}
