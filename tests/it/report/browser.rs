//! The HTML report in headless Chromium: loads without script errors, draws its charts.

use super::*;

const CHROMIUM: &str = "/usr/bin/chromium";

/// The browser, or `None` (with a printed reason) when it is absent outside CI.
pub(crate) fn chromium() -> Option<&'static str> {
    if Path::new(CHROMIUM).exists() {
        return Some(CHROMIUM);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{CHROMIUM} is missing but CI is set: .ci/run installs it with apt-get install -y chromium"
    );
    println!(
        "SKIPPED: {CHROMIUM} not found; install it with `apt-get install -y chromium` to run the HTML browser test"
    );
    None
}

fn chromium_cmd(browser: &str, profile: &Path) -> Command {
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// Load `html` in headless Chromium: assert no console errors, that the DOM holds
/// `expect_svgs` charts, and that a screenshot is not blank. Returns the screenshot path.
pub(crate) fn check_in_browser(
    browser: &str,
    html: &str,
    expect_svgs: usize,
    dir: &Path,
) -> PathBuf {
    let page = dir.join("report.html");
    std::fs::write(&page, html).expect("write page");
    let url = format!("file://{}", page.display());

    let (dom, console_errors) = load_page(browser, &url, &dir.join("profile-dom"));
    assert_eq!(
        dom.matches("<svg").count(),
        expect_svgs,
        "charts in the rendered DOM"
    );
    assert!(
        console_errors.is_empty(),
        "console errors: {console_errors:#?}"
    );

    let shot = dir.join("shot.png");
    let out = chromium_cmd(browser, &dir.join("profile-shot"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1200,2600")
        .arg(&url)
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "screenshot failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (variance, dark_share) = image_stats(&shot);
    assert!(
        variance > 200.0,
        "screenshot looks blank: luminance variance {variance}"
    );
    assert!(
        dark_share > 0.005,
        "screenshot has almost no ink: {dark_share}"
    );
    shot
}

/// Load `url` and return the DOM after load and every console message or load failure the
/// browser logged.
fn load_page(browser: &str, url: &str, profile: &Path) -> (String, Vec<String>) {
    let out = chromium_cmd(browser, profile)
        .args(["--enable-logging=stderr", "--v=0", "--dump-dom"])
        .arg(url)
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = String::from_utf8_lossy(&out.stderr);
    let errors = log
        .lines()
        .filter(|l| {
            l.contains("CONSOLE") || l.contains("Uncaught") || l.contains("Failed to load resource")
        })
        .map(str::to_string)
        .collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), errors)
}

/// Luminance variance and share of pixels darker than mid-grey.
fn image_stats(path: &Path) -> (f64, f64) {
    let decoder = png::Decoder::new(std::fs::File::open(path).expect("png"));
    let mut reader = decoder.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("png frame");
    let channels = info.color_type.samples();
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let lum: Vec<f64> = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|px| match channels {
            1 | 2 => f64::from(px[0]),
            _ => 0.299 * f64::from(px[0]) + 0.587 * f64::from(px[1]) + 0.114 * f64::from(px[2]),
        })
        .collect();
    let n = lum.len() as f64;
    let mean = lum.iter().sum::<f64>() / n;
    let var = lum.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / n;
    let dark = lum.iter().filter(|l| **l < 128.0).count() as f64 / n;
    (var, dark)
}

#[test]
fn html_loads_cleanly_in_headless_chromium() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let html = report::formats::html::render(&sample_report(1.0));
    let shot = check_in_browser(browser, &html, 11, dir.path());
    if let Some(keep) = std::env::var_os("SERVEBENCH_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).expect("keep screenshot");
    }
}

/// The console check is only worth something if it sees a broken page.
#[test]
fn the_browser_check_sees_script_errors() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let page = dir.path().join("broken.html");
    std::fs::write(
        &page,
        "<html><body><script>missing_function();</script></body></html>",
    )
    .expect("write page");
    let (_, errors) = load_page(
        browser,
        &format!("file://{}", page.display()),
        &dir.path().join("p"),
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("missing_function is not defined")),
        "{errors:#?}"
    );
}

#[test]
fn seed_004_html_loads_cleanly_in_headless_chromium() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let r = report::read_report(Path::new(SEED_004)).expect("seed 004");
    // Two sweep charts, two percentile charts, the recheck chart; no records, no scatter.
    check_in_browser(browser, &report::formats::html::render(&r), 5, dir.path());
}
