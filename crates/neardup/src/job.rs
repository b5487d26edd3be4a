//! `JobSpec`: a whole job as data (the pipeline that makes fingerprints, the search over them,
//! and the passage check's settings where the job keeps passages).
//!
//! It is the one persisted form of a job: Spark ships it to its executors as JSON, so each
//! executor runs the driver's job; a saved index's manifest, a service collection's settings and
//! a saved passage index's header each hold one, resolved ([`JobSpec::resolved`]: every option
//! given, so a later build's defaults cannot change what a stored job answers). The CLI, Python
//! and the service fill its parts from what their users gave, by the option table's names
//! ([`crate::PipelineOptions`], [`crate::SearchSpec`], [`crate::overlap::OverlapOptions`]).
//! Run-time resources (threads, a spill directory) are not part of a job: they change how it
//! runs, never its answer.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::overlap::OverlapSpec;
use crate::{
    BuildError, DedupError, Engine, Pipeline, PipelineSpec, SearchConfig, SearchSpec,
    SearchSpecError, SearchUse,
};

/// A job: the pipeline spec and the search settings as given (defaults applied by
/// [`JobSpec::compile`]).
///
/// ```
/// use neardup::{JobSpec, Method};
///
/// let job: JobSpec = serde_json::from_str(r#"{"pipeline": {"features": {"kind": "words"}},
///                                            "search": {"hamming": 4}}"#)?;
/// let compiled = job.compile()?;
/// assert_eq!(compiled.config().method, Method::SimHash);
/// assert_eq!(compiled.id(), JobSpec::from_json(&job.to_json())?.compile()?.id());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobSpec {
    /// Text to fingerprints.
    pub pipeline: PipelineSpec,
    /// Fingerprints to candidates, verified (left out of the JSON when nothing is given, as in
    /// a passage check's job).
    #[serde(skip_serializing_if = "SearchSpec::is_empty")]
    pub search: SearchSpec,
    /// The passage check's settings, when the job keeps passages (a service collection made
    /// with `"passages"`, a saved passage index); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passages: Option<OverlapSpec>,
}

/// Why a job cannot run: the part at fault.
#[derive(Debug)]
#[non_exhaustive]
pub enum JobError {
    /// The pipeline spec.
    Pipeline(BuildError),
    /// A contradiction among the search options.
    Search(SearchSpecError),
    /// The search settings do not fit the pipeline (a threshold out of range, a Hamming distance
    /// past the width, a banding longer than the signature).
    Config(DedupError),
    /// The passage settings.
    Passages(String),
    /// Malformed job JSON.
    Json(String),
}

impl std::fmt::Display for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobError::Pipeline(e) => write!(f, "pipeline: {e}"),
            JobError::Search(e) => write!(f, "{e}"),
            JobError::Config(e) => write!(f, "{e}"),
            JobError::Passages(m) => write!(f, "passages: {m}"),
            JobError::Json(m) => write!(f, "job spec: {m}"),
        }
    }
}

impl std::error::Error for JobError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JobError::Pipeline(e) => Some(e),
            JobError::Search(e) => Some(e),
            JobError::Config(e) => Some(e),
            JobError::Passages(_) | JobError::Json(_) => None,
        }
    }
}

impl JobSpec {
    /// A preset's pipeline with the default search.
    pub fn preset(name: &str) -> Result<JobSpec, BuildError> {
        Ok(JobSpec { pipeline: PipelineSpec::preset(name)?, ..JobSpec::default() })
    }

    /// The job a resolved configuration runs, every search option given
    /// ([`SearchSpec::of`]): the form jobs are persisted in.
    pub fn resolved(
        pipeline: PipelineSpec,
        config: &SearchConfig,
        usage: SearchUse,
        passages: Option<OverlapSpec>,
    ) -> JobSpec {
        JobSpec { pipeline, search: SearchSpec::of(config, usage), passages }
    }

    /// A passage check's job: its settings alone (its units come from the passage settings, not
    /// from a pipeline).
    pub fn passages(spec: OverlapSpec) -> JobSpec {
        JobSpec { passages: Some(spec), ..JobSpec::default() }
    }

    /// The job as JSON (what Spark ships to its executors).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a job spec is plain data")
    }

    /// A job from JSON; unknown fields are refused by name.
    pub fn from_json(text: &str) -> Result<JobSpec, JobError> {
        serde_json::from_str(text).map_err(|e| JobError::Json(e.to_string()))
    }

    /// Checks everything and compiles the pipeline: the one place a job's defaults, inferences
    /// and ranges are decided.
    pub fn compile(&self) -> Result<CompiledJob, JobError> {
        let config = self.search.resolve().map_err(JobError::Search)?;
        let pipeline = Arc::new(Pipeline::new(self.pipeline.clone()).map_err(JobError::Pipeline)?);
        CompiledJob::with_passages(pipeline, config, self.passages.clone())
    }
}

/// A checked job: its pipeline compiled and its search settings resolved against it (an empty
/// engine holds the resolved plan, so engines made from the job do not resolve it again).
#[derive(Debug)]
pub struct CompiledJob {
    engine: Engine,
    id: String,
}

impl CompiledJob {
    /// A job from a compiled pipeline and resolved settings, checked against each other.
    pub fn new(pipeline: Arc<Pipeline>, config: SearchConfig) -> Result<CompiledJob, JobError> {
        CompiledJob::with_passages(pipeline, config, None)
    }

    fn with_passages(
        pipeline: Arc<Pipeline>,
        config: SearchConfig,
        passages: Option<OverlapSpec>,
    ) -> Result<CompiledJob, JobError> {
        // The engine's plan is where the settings meet the pipeline (ranges, the banding).
        let engine = Engine::new(pipeline.clone(), config.clone()).map_err(JobError::Config)?;
        if let Some(p) = &passages {
            p.validate().map_err(|e| JobError::Passages(e.to_string()))?;
        }
        // The id hashes the resolved job as it is persisted: an option added to the job is in
        // its id without a list here to extend.
        let resolved =
            JobSpec::resolved(pipeline.spec().clone(), &config, crate::SearchUse::Batch, passages);
        let search = serde_json::to_string(&(&resolved.search, &resolved.passages))
            .expect("a job spec is plain data");
        let id =
            format!("{}-{:016x}", pipeline.id(), xxhash_rust::xxh3::xxh3_64(search.as_bytes()));
        Ok(CompiledJob { engine, id })
    }

    /// The pipeline.
    pub fn pipeline(&self) -> &Arc<Pipeline> {
        self.engine.pipeline()
    }

    /// The resolved search settings.
    pub fn config(&self) -> &SearchConfig {
        self.engine.config()
    }

    /// An id of the job's answer: the pipeline's id (which covers the fingerprint format, the
    /// spec and the files it names) and a hash of the resolved search settings. Two jobs with
    /// one id give the same clusters on the same corpus.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// An empty live engine for this job (its plan resolved once, at compile time).
    pub fn engine(&self) -> Engine {
        self.engine.empty_like()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Method;

    #[test]
    fn a_job_round_trips_and_its_id_follows_its_answer() {
        let job = JobSpec::preset("en-web").expect("preset");
        let a = job.compile().expect("compiles");
        let again = JobSpec::from_json(&job.to_json()).expect("parses").compile().expect("ok");
        assert_eq!(a.id(), again.id());
        // The default threshold given explicitly is the same job; another one is not.
        let mut explicit = job.clone();
        explicit.search.threshold = Some(crate::DEFAULT_THRESHOLD);
        assert_eq!(explicit.compile().expect("ok").id(), a.id());
        let mut other = job.clone();
        other.search.threshold = Some(0.5);
        assert_ne!(other.compile().expect("ok").id(), a.id());
        let mut simhash = job;
        simhash.search.hamming = Some(3);
        let s = simhash.compile().expect("ok");
        assert_eq!(s.config().method, Method::SimHash);
        assert_ne!(s.id(), a.id());
    }

    #[test]
    fn a_job_keeping_passages_round_trips_and_its_settings_are_in_its_id() {
        let plain = JobSpec::preset("default").expect("preset");
        assert!(!plain.to_json().contains("passages"), "absent when not kept");
        let mut kept = plain.clone();
        kept.passages = Some(OverlapSpec::default());
        let back = JobSpec::from_json(&kept.to_json()).expect("parses");
        assert_eq!(back, kept);
        let ids: Vec<String> =
            [&plain, &kept].iter().map(|j| j.compile().expect("valid").id().to_string()).collect();
        assert_ne!(ids[0], ids[1]);
        let mut other = kept.clone();
        other.passages.as_mut().expect("kept").min_units += 1;
        assert_ne!(other.compile().expect("valid").id(), ids[1]);
        let mut bad = kept;
        bad.passages.as_mut().expect("kept").seed = 0;
        assert!(matches!(bad.compile(), Err(JobError::Passages(_))));
    }

    #[test]
    fn each_part_is_checked_and_named() {
        let bad =
            |json: &str| JobSpec::from_json(json).and_then(|j| j.compile()).expect_err("refused");
        assert!(matches!(bad(r#"{"serach": {}}"#), JobError::Json(m) if m.contains("serach")));
        assert!(matches!(
            bad(r#"{"search": {"method": "minhash", "hamming": 3}}"#),
            JobError::Search(e) if e.option == "hamming"
        ));
        assert!(matches!(bad(r#"{"search": {"threshold": 1.5}}"#), JobError::Config(_)));
        assert!(matches!(bad(r#"{"search": {"hamming": 64}}"#), JobError::Config(_)));
        assert!(matches!(
            bad(r#"{"pipeline": {"minhash": {"num_perm": 0}}}"#),
            JobError::Pipeline(_)
        ));
    }
}
