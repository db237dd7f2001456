//! Issue 12: one unauthenticated GET of a long span
//! (`t=sc&from=315360011&to=2000000000`, 53 years over the 1-minute file)
//! took ~440 MB, because the 28 million 1-minute rows were fetched before
//! being consolidated to the image's 400 pixels. They are now consolidated
//! while the file is read (`rrd_engine::reduce`).
//!
//! This test binary counts the heap with its own global allocator: the
//! peak growth of one such request (graph, xport, summary) must stay under
//! [`BOUND`] bytes, and the numbers must equal what a small range around
//! the same data computes.

mod api_support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use api_support::*;

/// Bytes allocated now and the most since the last [`reset_peak`].
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

struct Counting;

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Relaxed) + layout.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let now = CURRENT.fetch_add(new_size - layout.size(), Relaxed) + new_size - layout.size();
                PEAK.fetch_max(now, Relaxed);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most one long-span request may add to the heap (1.3 MB measured): the picture (a
/// 481×~200 RGBA canvas, its mask and PNG, under 2 MB), the per-DEF rows
/// at the image's width (kilobytes), the 512 KiB read buffer, and the
/// server's own per-request buffers, with room to spare. Fetching the
/// 1-minute rows whole took 440 MB.
const BOUND: usize = 8 << 20;

/// Runs `f` and returns the peak heap growth during it.
async fn peak_growth<F: std::future::Future<Output = T>, T>(f: F) -> (T, usize) {
    let base = CURRENT.load(Relaxed);
    PEAK.store(base, Relaxed);
    let out = f.await;
    (out, PEAK.load(Relaxed).saturating_sub(base))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_53_year_span_is_answered_within_a_memory_bound() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path()).await;
    // Ten minutes of numbers, a minute apart, ending a few minutes ago.
    let t0 = (now() / 60 - 20) * 60;
    for k in 0..10 {
        post_number(addr, "/api/svc/sec/load", &format!("number={}&timestamp={}", 10 + k * 7, t0 + k * 60))
            .await;
    }
    let long = "t=sc&from=315360011&to=2000000000";
    let small = format!("t=sc&from={}&to={}", t0 - 3600, t0 + 3600);
    // Warm up: the first draw loads fonts and caches.
    let (st, _) = http(addr, "GET", &format!("/graph/svc/sec/load?{small}"), "").await;
    assert_eq!(st, 200);

    let ((st, png), grew) = peak_growth(http(addr, "GET", &format!("/graph/svc/sec/load?{long}"), "")).await;
    assert_eq!(st, 200, "{}", String::from_utf8_lossy(&png));
    let (w, h) = png_size(&png);
    assert!(w > 400 && h > 100, "{w}x{h}");
    eprintln!("long-span graph: heap peak growth {grew} bytes");
    assert!(grew < BOUND, "the long-span graph grew the heap by {grew} bytes (bound {BOUND})");

    let ((st, x), grew) = peak_growth(json(addr, "GET", &format!("/xport/svc/sec/load?{long}"), "")).await;
    assert_eq!(st, 200, "{x}");
    eprintln!("long-span xport: heap peak growth {grew} bytes");
    assert!(grew < BOUND, "the long-span xport grew the heap by {grew} bytes (bound {BOUND})");
    // A row per pixel (about 49 days each); the ten minutes fall into one
    // of them (or two, when they straddle a boundary), averaged there.
    let rows = x["rows"].as_array().unwrap();
    assert!((300..=402).contains(&rows.len()), "{} rows", rows.len());
    let known: Vec<f64> = rows.iter().filter_map(|r| r[0].as_f64()).collect();
    assert!(!known.is_empty() && known.len() <= 2, "{known:?}");

    let ((st, long_sum), grew) =
        peak_growth(json(addr, "GET", &format!("/summary/svc/sec/load?{long}"), "")).await;
    assert_eq!(st, 200, "{long_sum}");
    eprintln!("long-span summary: heap peak growth {grew} bytes");
    assert!(grew < BOUND, "the long-span summary grew the heap by {grew} bytes (bound {BOUND})");

    // The same numbers at one-minute rows: the average over the small
    // range is the long range's average (which consolidated the same
    // minutes), and every minute is one of the numbers posted.
    let (st, small_x) = json(addr, "GET", &format!("/xport/svc/sec/load?{small}"), "").await;
    assert_eq!(st, 200, "{small_x}");
    assert_eq!(small_x["step"], 60);
    let minutes: Vec<f64> =
        small_x["rows"].as_array().unwrap().iter().filter_map(|r| r[0].as_f64()).collect();
    assert!(minutes.len() >= 8, "{minutes:?}");
    let (st, small_sum) = json(addr, "GET", &format!("/summary/svc/sec/load?{small}"), "").await;
    assert_eq!(st, 200);
    let avg = |v: &serde_json::Value| v["svc/sec/load"][1].as_str().unwrap().to_string();
    assert_eq!(avg(&long_sum), avg(&small_sum), "long {long_sum} small {small_sum}");
    if known.len() == 1 {
        let mean = minutes.iter().sum::<f64>() / minutes.len() as f64;
        assert!(
            (known[0] - mean).abs() <= 1e-9 * mean.abs(),
            "long row {} vs minutes' mean {mean}",
            known[0]
        );
    }
}
