//! The search flags `dedup` and `report` share: the measure a run finds its pairs with
//! (`--method`, `--threshold`, `--hamming`, `--verify`), read into the library's
//! [`SearchSpec`] by the option table's names, and its contradictions spelled as flags.

use anyhow::anyhow;
use clap::Args;
use neardup::{SearchSpec, SearchSpecError};

use crate::Failure;

/// The measure of a run (the help of each flag is the option table's).
#[derive(Debug, Args)]
pub struct MeasureArgs {
    #[arg(long, value_name = "METHOD")]
    method: Option<String>,

    // The default is the table's (shown in the help); not given, `dedup --against` takes the
    // index's.
    #[arg(long, value_name = "T")]
    threshold: Option<f64>,

    #[arg(long, value_name = "K")]
    hamming: Option<u32>,

    #[arg(long, value_name = "MEASURE")]
    verify: Option<String>,
}

impl MeasureArgs {
    /// The measure's options as given (the others not given).
    pub fn spec(&self) -> Result<SearchSpec, Failure> {
        Ok(SearchSpec {
            method: choice("--method", self.method.as_deref())?,
            threshold: self.threshold,
            hamming: self.hamming,
            verify: choice("--verify", self.verify.as_deref())?,
            ..SearchSpec::default()
        })
    }
}

/// A choice flag's value as the library's value (the option table's choices are the serde
/// names, which the command line checked already).
fn choice<T: serde::de::DeserializeOwned>(
    flag: &str,
    value: Option<&str>,
) -> Result<Option<T>, Failure> {
    value
        .map(|v| serde_json::from_value(serde_json::json!(v)))
        .transpose()
        .map_err(|e| Failure::Usage(anyhow!("{flag}: {e}")))
}

/// A contradiction among the search options, with the option spelled as a flag.
pub fn search_failure(e: SearchSpecError) -> Failure {
    Failure::Usage(anyhow!("--{} {}", e.option.replace('_', "-"), e.message))
}
