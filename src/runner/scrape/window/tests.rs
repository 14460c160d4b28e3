use super::*;
use crate::runner::scrape::parse_prometheus;
use crate::runner::scrape::reading::read;

fn reading(text: &str) -> Result<Reading, String> {
    read(&parse_prometheus(text))
}

/// A vLLM-named scrape: requests running and waiting, generated tokens.
fn vllm(running: f64, waiting: f64, generated: f64) -> Result<Reading, String> {
    reading(&format!(
        "vllm:num_requests_running {running}\nvllm:num_requests_waiting {waiting}\n\
         vllm:generation_tokens_total {generated}\n"
    ))
}

fn one_endpoint() -> Window {
    Window::new(Duration::from_secs(1), 1, vec![0])
}

#[test]
fn ranges_and_time_weighted_means_come_from_the_samples() {
    let mut w = one_endpoint();
    // Idle as the window opens, 4 running and 4 waiting while it runs, idle when it closes;
    // the last full second is sampled half a second after the one before.
    for (t, running, waiting) in [
        (0.0, 0.0, 0.0),
        (1.0, 4.0, 4.0),
        (2.0, 4.0, 4.0),
        (3.0, 4.0, 2.0),
        (3.5, 0.0, 0.0),
    ] {
        w.add(t, &[vllm(running, waiting, 0.0)]);
    }
    let figures = w.finish();
    let running = figures.levels["requests_running"];
    assert_eq!((running.min, running.max), (0.0, 4.0));
    // Area under the line joining the samples: 2 + 4 + 4 + 1 over 3.5 s.
    assert_eq!(running.mean, Some(11.0 / 3.5));
    let waiting = figures.levels["requests_waiting"];
    // 2 + 4 + 3 + 0.5 over 3.5 s.
    assert_eq!(waiting.mean, Some(9.5 / 3.5));
    // The raw gauge under the server's own name says the same.
    assert_eq!(
        figures.endpoints[0].gauges["vllm:num_requests_running"],
        running
    );
    assert_eq!(figures.sampling.samples, 5);
    assert_eq!(figures.sampling.span_s, 3.5);
    assert_eq!(figures.timeline.len(), 5);
}

#[test]
fn one_sample_is_its_own_mean() {
    let mut w = one_endpoint();
    w.add(0.25, &[vllm(3.0, 1.0, 10.0)]);
    let figures = w.finish();
    let running = figures.levels["requests_running"];
    assert_eq!(
        (running.min, running.max, running.mean),
        (3.0, 3.0, Some(3.0))
    );
    assert_eq!(figures.sampling.span_s, 0.0);
    assert_eq!(figures.sampling.generation_tok_s, None);
}

#[test]
fn a_failed_scrape_is_counted_and_left_out() {
    let mut w = one_endpoint();
    w.add(0.0, &[vllm(1.0, 0.0, 0.0)]);
    w.add(1.0, &[Err("cannot scrape u: connection refused".into())]);
    w.add(2.0, &[vllm(3.0, 0.0, 100.0)]);
    let figures = w.finish();
    assert_eq!(figures.sampling.samples, 2);
    assert_eq!(figures.sampling.failed, 1);
    assert_eq!(
        figures.sampling.first_failure.as_deref(),
        Some("cannot scrape u: connection refused")
    );
    assert_eq!(figures.endpoints[0].answered, 2);
    // The line joins the samples on each side of the gap.
    assert_eq!(figures.levels["requests_running"].mean, Some(2.0));
    assert_eq!(figures.timeline.len(), 2);
    assert_eq!(figures.sampling.generation_tok_s, Some(50.0));
}

#[test]
fn levels_are_summed_over_backends_and_rates_come_from_successive_samples() {
    // A gateway (index 0, not summed) and two backends.
    let mut w = Window::new(Duration::from_millis(500), 3, vec![1, 2]);
    let backend = |running: f64, success: f64, kv: f64| {
        reading(&format!(
            "vllm:num_requests_running {running}\nvllm:request_success_total {success}\n\
             vllm:kv_cache_usage_perc {kv}\n"
        ))
    };
    let gateway = || reading("vllm_router_requests_total 5\n");
    w.add(
        0.0,
        &[gateway(), backend(1.0, 10.0, 0.2), backend(2.0, 0.0, 0.5)],
    );
    w.add(
        0.5,
        &[gateway(), backend(0.0, 14.0, 0.1), backend(4.0, 2.0, 0.3)],
    );
    // A backend down: the gateway's own figures still take the sample, the server's do not.
    w.add(
        1.0,
        &[gateway(), backend(9.0, 20.0, 0.9), Err("down".into())],
    );
    let figures = w.finish();
    let s = &figures.timeline;
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].requests_running, Some(3.0));
    assert_eq!(s[0].kv_cache_usage, Some(0.5));
    assert_eq!(s[0].requests_per_s, None);
    assert_eq!(s[1].requests_running, Some(4.0));
    // (16 − 10) requests over 0.5 s.
    assert_eq!(s[1].requests_per_s, Some(12.0));
    assert_eq!(s[1].generation_tok_s, None);
    let running = figures.levels["requests_running"];
    assert_eq!(
        (running.min, running.max, running.mean),
        (3.0, 4.0, Some(3.5))
    );
    assert_eq!(figures.endpoints[0].answered, 3);
    assert_eq!(figures.endpoints[2].answered, 2);
    assert_eq!(
        figures.endpoints[1].gauges["vllm:num_requests_running"].max,
        9.0
    );
    assert_eq!((figures.sampling.samples, figures.sampling.failed), (2, 1));
}

#[test]
fn generation_rate_over_the_window_and_its_peak_between_samples() {
    let mut w = one_endpoint();
    for (t, generated) in [(0.0, 1000.0), (1.0, 1100.0), (2.0, 1400.0), (2.5, 1450.0)] {
        w.add(t, &[vllm(1.0, 0.0, generated)]);
    }
    let sampling = w.finish().sampling;
    assert_eq!(sampling.generation_tok_s, Some(450.0 / 2.5));
    assert_eq!(sampling.generation_tok_s_peak, Some(300.0));
}

#[test]
fn a_counter_that_goes_down_gives_no_rate() {
    let mut w = one_endpoint();
    w.add(0.0, &[vllm(1.0, 0.0, 500.0)]);
    w.add(1.0, &[vllm(1.0, 0.0, 20.0)]);
    let figures = w.finish();
    assert_eq!(figures.timeline[1].generation_tok_s, None);
    assert_eq!(figures.sampling.generation_tok_s, None);
}

#[test]
fn prefix_cache_hit_rate_between_samples() {
    let mut w = one_endpoint();
    let cache = |hits: f64, queries: f64| {
        reading(&format!(
            "vllm:prefix_cache_hits_total {hits}\nvllm:prefix_cache_queries_total {queries}\n"
        ))
    };
    w.add(0.0, &[cache(0.0, 0.0)]);
    w.add(1.0, &[cache(30.0, 40.0)]);
    w.add(2.0, &[cache(30.0, 40.0)]);
    let timeline = w.finish().timeline;
    assert_eq!(timeline[1].prefix_cache_hit_rate, Some(0.75));
    // No queries in between: no rate.
    assert_eq!(timeline[2].prefix_cache_hit_rate, None);
}

#[test]
fn a_long_window_keeps_a_bounded_series_with_exact_rates() {
    let mut w = one_endpoint();
    let samples = 5 * MAX_POINTS + 3;
    for i in 0..samples {
        let t = i as f64;
        // 10 tokens a second throughout; running goes 0, 1, 2, 0, 1, 2, …
        w.add(t, &[vllm((i % 3) as f64, 0.0, 10.0 * t)]);
    }
    let figures = w.finish();
    let s = &figures.timeline;
    assert!(s.len() <= MAX_POINTS, "{} points", s.len());
    assert!(s.len() > MAX_POINTS / 4, "{} points", s.len());
    assert_eq!(s[0].t_s, 0.0);
    assert_eq!(s.last().unwrap().t_s, (samples - 1) as f64);
    assert!(s.windows(2).all(|p| p[0].t_s < p[1].t_s));
    // Rates over the wider gaps between kept points are still the counter's.
    assert!(s[1..].iter().all(|p| p.generation_tok_s == Some(10.0)));
    // The figures still use every sample.
    assert_eq!(figures.sampling.samples, samples as u64);
    let running = figures.levels["requests_running"];
    assert_eq!((running.min, running.max), (0.0, 2.0));
}
