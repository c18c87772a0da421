//! goldgate's E-divisive means against Apache Otava on Otava's own test series: the change
//! points apache-otava 0.8.0 returned for each case (recorded in the fixture by
//! `benches/otava_compare.py`), for every window, p-value and magnitude its tests use.

#![allow(clippy::unwrap_used)] // a test: a failed unwrap is a failed test

use goldgate_judge::history::changes::{Options, detect};

#[test]
fn every_otava_test_case_finds_otavas_change_points() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/otava/otava_series.json"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 12);
    let mut failures = Vec::new();
    for case in cases {
        let name = case["series"].as_str().unwrap();
        let series: Vec<f64> = doc["series"][name]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let opts = Options {
            window: case["window"].as_u64().unwrap() as usize,
            max_pvalue: case["max_pvalue"].as_f64().unwrap(),
            min_magnitude: case["min_magnitude"].as_f64().unwrap(),
        };
        let otava: Vec<usize> = case["otava_0_8_0"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        let ours = detect(&series, &opts).indices();
        if ours != otava {
            failures.push(format!(
                "{name} {opts:?}:\n  otava    {otava:?}\n  goldgate {ours:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
