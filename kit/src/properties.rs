//! The proptest settings of the property tests (`tests/*_properties.rs`).

use proptest::prelude::ProptestConfig;
use proptest::test_runner::FileFailurePersistence;

/// 64 cases unless `PROPTEST_CASES` asks for another number. A failing
/// case is saved next to the test file (`*.proptest-regressions`) and tried
/// first on later runs.
pub fn proptest_config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(64);
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}
