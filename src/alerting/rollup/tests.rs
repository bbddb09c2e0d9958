//! Rollup tests: histogram bins and quantiles, covers of a window, window sums against a
//! brute-force count, and which rows the sweep finds stale.

use super::*;

#[test]
fn bins_grow_by_an_eighth_of_an_octave() {
    assert_eq!(bin_of(0.5), 0);
    assert_eq!(bin_of(1.0), 1);
    assert!(bin_of(100.0) < bin_of(110.0));
    assert_eq!(bin_of(100.0), bin_of(101.0));
    assert_eq!(bin_of(f64::NAN), 0);
    assert_eq!(bin_of(1e300), MAX_BIN);
}

#[test]
fn quantiles_are_exact_for_equal_values_and_close_otherwise() {
    let mut rollup = Rollup::default();
    for _ in 0..20 {
        rollup.add_duration(300.0);
    }
    assert_eq!(rollup.quantile(0.95), Some(300.0));
    let mut spread = Rollup::default();
    for ms in 1..=1000 {
        spread.add_duration(f64::from(ms));
    }
    let p95 = spread.quantile(0.95).unwrap();
    assert!((p95 - 950.0).abs() / 950.0 < 0.09, "{p95}");
    assert_eq!(Rollup::default().quantile(0.95), None);
}

#[test]
fn covers_are_exact_contiguous_and_few() {
    let size = |letter: char| LEVELS.iter().find(|(l, _)| *l == letter).unwrap().1;
    for (first, last) in [
        (0, 0),
        (7, 7),
        (59, 61),
        (1_000_003, 1_086_402),
        (3_599, 7_201),
    ] {
        let runs = cover(first, last);
        let mut at = first;
        for &(letter, from, to) in &runs {
            assert_eq!(from * size(letter), at, "{runs:?}");
            at = (to + 1) * size(letter);
        }
        assert_eq!(at, last + 1, "{runs:?}");
        let rows: i64 = runs.iter().map(|(_, from, to)| to - from + 1).sum();
        assert!(rows <= 80, "{rows} rows for {first}..={last}");
    }
}

/// The window sums of the store equal a brute-force count of the same arrivals.
#[test]
fn windows_match_a_brute_force_count() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::Store::open(
        &dir.path().join("db.redb"),
        crate::store::StoreOptions::default(),
    )
    .unwrap();
    let org = OrgId::generate();
    let now = 1_795_348_800_i64;
    // Deterministic pseudo-random arrivals over the last two hours.
    let arrivals: Vec<i64> = (0..3000_i64)
        .map(|n| now - (n * 7_919 + n * n * 13) % 7_200)
        .collect();
    let (batch_org, batch) = (org.clone(), arrivals.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime
        .block_on(store.write(move |txn| {
            let mut rollups = RollupBatch::new();
            for (n, at) in batch.iter().enumerate() {
                let service = if n % 2 == 0 { Some("web") } else { None };
                rollups.count(
                    &batch_org,
                    Metric::Errors,
                    service,
                    None,
                    Timestamp(at * 1000),
                );
            }
            rollups.flush(txn)
        }))
        .unwrap();
    // Two hours on, the 1 s and 10 s rows of the first hour are stale, the others not.
    let later = Timestamp((now + 7_200) * 1000);
    let stale = store.read_blocking(|txn| stale_rows(txn, later)).unwrap();
    assert!(!stale.is_empty());
    assert!(stale.iter().all(|key| {
        let last = key.rsplit('/').next().unwrap();
        last.starts_with('s') || last.starts_with('t')
    }));
    // Two days on, every row but the hour rows (kept for the hourly error chart) is stale.
    let two_days_on = Timestamp((now + 2 * 86_400) * 1000);
    let stale = store
        .read_blocking(|txn| stale_rows(txn, two_days_on))
        .unwrap();
    let hour_rows = |key: &String| key.rsplit('/').next().unwrap().starts_with('h');
    assert!(!stale.is_empty() && !stale.iter().any(hour_rows));
    let a_month_on = Timestamp((now + 32 * 86_400) * 1000);
    let all = store
        .read_blocking(|txn| stale_rows(txn, a_month_on))
        .unwrap();
    let rows = store.read_blocking(|txn| ROLLUPS.row_count(txn)).unwrap();
    assert_eq!(all.len() as u64, rows, "everything is stale a month on");
    for seconds in [1, 9, 10, 59, 60, 61, 299, 300, 3_599, 3_600] {
        let expected = arrivals.iter().filter(|at| **at > now - seconds).count() as u64;
        let web = arrivals
            .iter()
            .enumerate()
            .filter(|(n, at)| n % 2 == 0 && **at > now - seconds)
            .count() as u64;
        let (org, end) = (org.clone(), Timestamp(now * 1000 + 999));
        let (any, only_web) = store
            .read_blocking(move |txn| {
                let any = window(txn, &org, Metric::Errors, None, None, end, seconds)?;
                let web = window(txn, &org, Metric::Errors, Some("web"), None, end, seconds)?;
                Ok::<_, StoreError>((any.count, web.count))
            })
            .unwrap();
        assert_eq!(any, expected, "window {seconds}");
        assert_eq!(only_web, web, "web, window {seconds}");
    }
}

#[test]
fn merging_keeps_bins_sorted() {
    let mut a = Rollup::default();
    a.add_duration(500.0);
    a.add_duration(5.0);
    a.add_duration(50.0);
    let bins: Vec<u16> = a.histogram.iter().map(|entry| entry.0).collect();
    let mut sorted = bins.clone();
    sorted.sort();
    assert_eq!(bins, sorted);
    assert_eq!(a.count, 3);
}

/// Organisation, metric, service, environment, second and span duration of one item.
type Item<'a> = (
    &'a OrgId,
    Metric,
    Option<&'a str>,
    Option<&'a str>,
    i64,
    f64,
);

#[test]
fn a_folded_batch_adds_what_its_items_add_one_by_one() {
    let (web, shop) = (OrgId::generate(), OrgId::generate());
    // Runs of alike items broken by others: another organisation, service, environment,
    // second and metric, spans with durations, and items without a service.
    let items: Vec<Item> = (0..400_i64)
        .map(|n| {
            let org = if n % 97 == 0 { &shop } else { &web };
            let metric = match n % 41 {
                0 => Metric::NewGroups,
                1..=5 => Metric::Spans,
                _ => Metric::Errors,
            };
            let service = match (n / 7) % 3 {
                0 => Some("web"),
                1 => Some("api"),
                _ => None,
            };
            let environment = if (n / 13) % 2 == 0 {
                Some("prod")
            } else {
                None
            };
            (
                org,
                metric,
                service,
                environment,
                1_795_348_800 + n / 30,
                (n % 500) as f64,
            )
        })
        .collect();
    let add = |batch: &mut RollupBatch,
               item: &(&OrgId, Metric, Option<&str>, Option<&str>, i64, f64)| {
        let (org, metric, service, environment, second, ms) = *item;
        let at = Timestamp(second * 1000);
        match metric {
            Metric::Spans => batch.span(org, service.unwrap_or("web"), environment, at, ms),
            _ => batch.count(org, metric, service, environment, at),
        }
    };
    let mut folded = RollupBatch::new();
    for item in &items {
        add(&mut folded, item);
    }
    let mut one_by_one: HashMap<String, Rollup> = HashMap::new();
    for item in &items {
        let mut single = RollupBatch::new();
        add(&mut single, item);
        for (key, change) in single.rows() {
            one_by_one.entry(key).or_default().add(&change);
        }
    }
    let folded = folded.rows();
    assert_eq!(folded.len(), one_by_one.len());
    for (key, rollup) in &one_by_one {
        assert_eq!(folded.get(key), Some(rollup), "{key}");
    }
}
