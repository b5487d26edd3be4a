//! [`NamedEngine`]: an [`Engine`] whose documents are named by strings. What the service's
//! collections and the Python `Index` hold, so that both name, replace, search and check
//! documents the same way.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::{DedupError, DocSketch, Engine};

/// An [`Engine`] with string ids. Each id gets a `u64` key when first stored (keys count up, so
/// key order is first-insertion order); the id text is held once, shared by both directions.
#[derive(Debug)]
pub struct NamedEngine {
    engine: Engine,
    key_of: FxHashMap<Arc<str>, u64>,
    id_of: FxHashMap<u64, Arc<str>>,
    next_key: u64,
}

impl NamedEngine {
    /// An index over `engine`, which must be empty (its documents would have no names).
    pub fn new(engine: Engine) -> NamedEngine {
        debug_assert_eq!(engine.len(), 0, "a NamedEngine starts empty");
        NamedEngine {
            engine,
            key_of: FxHashMap::default(),
            id_of: FxHashMap::default(),
            next_key: 0,
        }
    }

    /// The engine: sketching, similarity, settings.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The number of documents stored.
    pub fn len(&self) -> usize {
        self.key_of.len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.key_of.is_empty()
    }

    /// True when `id` is stored.
    pub fn contains(&self, id: &str) -> bool {
        self.key_of.contains_key(id)
    }

    /// Stores `sketch` under `id`, replacing what `id` held.
    pub fn insert(&mut self, id: &str, sketch: DocSketch) {
        let key = match self.key_of.get(id) {
            Some(&k) => k,
            None => {
                let k = self.next_key;
                self.next_key += 1;
                let name: Arc<str> = Arc::from(id);
                self.key_of.insert(name.clone(), k);
                self.id_of.insert(k, name);
                k
            }
        };
        self.engine.insert(key, sketch);
    }

    /// Removes `id`; returns whether it was stored.
    pub fn remove(&mut self, id: &str) -> bool {
        let Some(key) = self.key_of.remove(id) else { return false };
        self.id_of.remove(&key);
        self.engine.remove(key)
    }

    /// The stored documents similar to `query` (verified at `threshold`, or the configured
    /// one), most similar first, at most `top_k`; `except` (the query's own id, when a stored
    /// document is checked against the others) is never among them.
    pub fn search(
        &self,
        query: &DocSketch,
        threshold: Option<f64>,
        top_k: usize,
        except: Option<&str>,
    ) -> Vec<(String, f64)> {
        let own = except.and_then(|id| self.key_of.get(id).copied());
        self.engine
            .search(query, threshold, top_k.saturating_add(usize::from(own.is_some())))
            .into_iter()
            .filter(|h| Some(h.key) != own)
            .take(top_k)
            .map(|h| (self.id_of[&h.key].to_string(), h.similarity))
            .collect()
    }

    /// The ids stored, in the order they were first stored.
    pub fn ids(&self) -> Vec<&str> {
        let mut keys: Vec<(&u64, &Arc<str>)> = self.id_of.iter().collect();
        keys.sort_unstable_by_key(|(k, _)| **k);
        keys.into_iter().map(|(_, id)| &**id).collect()
    }

    /// Writes the stored documents to `dir` as a saved index (the format of `neardup dedup
    /// --save-index`, ids as JSON strings as `dedup` writes them), each file atomically.
    pub fn save(&self, dir: &std::path::Path) -> Result<(), DedupError> {
        let json: FxHashMap<u64, String> = self
            .id_of
            .iter()
            .map(|(&k, id)| (k, serde_json::Value::String(id.to_string()).to_string()))
            .collect();
        self.engine.save(dir, |k| json[&k].as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DedupConfig, Document, Pipeline, PipelineSpec, Scratch};

    #[test]
    fn ids_name_documents_through_replace_remove_and_search() {
        let pipeline = Arc::new(Pipeline::new(PipelineSpec::default()).expect("valid"));
        let index = NamedEngine::new(Engine::new(pipeline, DedupConfig::default()).expect("valid"));
        let text = "the quick brown fox jumps over the lazy dog near the river bank today";
        let sketch =
            |t: &str| index.engine().sketch(Document::Text(t), t.len(), &mut Scratch::default());
        let (a, other) = (sketch(text), sketch("an entirely different sentence about trains"));
        let mut index = index;
        index.insert("b", other.clone());
        index.insert("a", a.clone());
        index.insert("b", other); // a replacement keeps its first place
        assert_eq!(index.ids(), ["b", "a"]);
        assert_eq!(index.len(), 2);
        assert_eq!(index.search(&a, None, 10, None), [("a".to_string(), 1.0)]);
        assert!(index.search(&a, None, 10, Some("a")).is_empty());
        assert!(index.remove("a") && !index.remove("a") && !index.contains("a"));
        assert!(index.search(&a, None, 10, None).is_empty());
        assert_eq!(index.ids(), ["b"]);
    }
}
