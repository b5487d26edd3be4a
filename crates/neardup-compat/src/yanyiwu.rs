//! yanyiwu/simhash and jiebaR 0.9's `worker("simhash", topn)` (SPEC.md A), bit-exact.
//!
//! `simhash(text, topN)`: segment with cppjieba's MixSegment (A.2), extract TF-IDF keywords as
//! cppjieba's `KeywordExtractor` (A.3, with libstdc++'s `partial_sort` tie order), hash each
//! keyword with 64-bit Jenkins lookup3 (A.4), and vote bits with `f64` weights (A.5).
//!
//! Everything works on bytes with cppjieba's own UTF-8 decoder (continuation bytes unchecked), so
//! even invalid input behaves as upstream: a sequence cut short makes the whole text yield no
//! keywords and simhash 0. The dictionaries are built once per process on first use.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use neardup_sketch::jenkins64;
use rustc_hash::{FxHashMap, FxHashSet};

const MIN_DOUBLE: f64 = -3.14e100;
const MAX_WORD_LENGTH: usize = 512;

/// A keyword and its TF-IDF weight.
#[derive(Debug, Clone, PartialEq)]
pub struct Keyword {
    /// The word's bytes (UTF-8 for valid input).
    pub word: Vec<u8>,
    /// `tf * idf`.
    pub weight: f64,
}

impl Keyword {
    /// The word as text (lossy for invalid UTF-8).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.word).into_owned()
    }

    /// The weight as C++ streams print it by default (6 significant digits), as jiebaR shows it.
    pub fn weight_printed(&self) -> String {
        format_g6(self.weight)
    }
}

/// The result of [`Simhasher::simhash`].
#[derive(Debug, Clone, PartialEq)]
pub struct SimhashResult {
    /// The 64-bit fingerprint.
    pub simhash: u64,
    /// The keywords, in the order they were voted.
    pub keywords: Vec<Keyword>,
}

/// upstream's default `topN` for a text of `byte_len` bytes: `max(5, min(200, byte_len / 120))`.
pub fn default_topn(byte_len: usize) -> usize {
    (byte_len / 120).clamp(5, 200)
}

/// Which upstream build to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// yanyiwu/simhash with cppjieba v5.6.7 and cppjieba's default user dictionary.
    Yanyiwu,
    /// jiebaR 0.9's `worker("simhash")` (CppJieba 5.0): jiebaRD's user dictionary and the older
    /// ASCII rules (a letter run takes no decimal suffix; a number run takes digits, `.` and `-`).
    /// jiebaRD's larger main dictionary is not bundled; cppjieba's is used, which segments the
    /// same on every reference text (SPEC.md A.0).
    JiebaR09,
    /// gojieba v1.4.7's `Jieba` (its bundled cppjieba): the main dictionary, idf table, stop words
    /// and HMM model are the yanyiwu flavor's (checked by sha256 against the byte-identical
    /// copies in the `cjieba` 0.4.4 wheel), and so is the user dictionary (区块链 segments as
    /// one word in the vectors); the difference is its ASCII rules: a letter run as jiebaR 0.9's,
    /// a number run takes digits and `.` only.
    Gojieba,
}

/// The segmenter and keyword extractor with cppjieba's data.
#[derive(Debug)]
pub struct Simhasher {
    flavor: Flavor,
    trie: Trie,
    min_weight: f64,
    user_singles: FxHashSet<u32>,
    hmm: Hmm,
    idf: FxHashMap<Vec<u8>, f64>,
    idf_average: f64,
    stop_words: FxHashSet<Vec<u8>>,
}

/// The process-wide yanyiwu instance (about a fifth of a second to build).
pub fn simhasher() -> &'static Simhasher {
    simhasher_for(Flavor::Yanyiwu)
}

/// The process-wide instance of a flavor.
pub fn simhasher_for(flavor: Flavor) -> &'static Simhasher {
    static YANYIWU: OnceLock<Simhasher> = OnceLock::new();
    static JIEBAR: OnceLock<Simhasher> = OnceLock::new();
    static GOJIEBA: OnceLock<Simhasher> = OnceLock::new();
    match flavor {
        Flavor::Yanyiwu => YANYIWU.get_or_init(|| Simhasher::new(flavor)),
        Flavor::JiebaR09 => JIEBAR.get_or_init(|| Simhasher::new(flavor)),
        Flavor::Gojieba => GOJIEBA.get_or_init(|| Simhasher::new(flavor)),
    }
}

impl Simhasher {
    /// Builds the flavor's dictionary set from the bundled data (see data/README.md).
    pub fn new(flavor: Flavor) -> Simhasher {
        let removed: FxHashSet<&str> =
            include_str!("../data/cppjieba_dict_minus_jieba_rs.removed").lines().collect();
        let main_lines = include_str!("../data/jieba_rs_dict.txt")
            .lines()
            .filter(|l| !removed.contains(l))
            .chain(include_str!("../data/cppjieba_dict_minus_jieba_rs.added").lines());
        let mut entries: Vec<(&str, f64)> = Vec::with_capacity(350_000);
        let mut sum = 0.0f64;
        for line in main_lines {
            let mut parts = line.split(' ');
            let (Some(word), Some(freq)) = (parts.next(), parts.next()) else { continue };
            let freq: f64 = freq.parse().expect("bundled dictionary frequencies are numbers");
            sum += freq;
            entries.push((word, freq));
        }
        let mut trie = Trie::default();
        let mut weights: Vec<f64> = Vec::with_capacity(entries.len());
        for &(word, freq) in &entries {
            let w = (freq / sum).ln();
            weights.push(w);
            trie.insert(&decode(word.as_bytes()).expect("bundled words are UTF-8").0, w);
        }
        let min_weight = weights.iter().copied().fold(f64::INFINITY, f64::min);
        let mut sorted = weights.clone();
        sorted.sort_by(f64::total_cmp);
        let median_weight = sorted[sorted.len() / 2];
        let mut user_singles = FxHashSet::default();
        let user_dict = match flavor {
            Flavor::Yanyiwu => include_str!("../data/cppjieba_user.dict.utf8"),
            Flavor::JiebaR09 => include_str!("../data/jiebard_user.dict.utf8"),
            Flavor::Gojieba => include_str!("../data/cppjieba_user.dict.utf8"),
        };
        for line in user_dict.lines() {
            let parts: Vec<&str> = line.split(' ').collect();
            if parts[0].is_empty() {
                continue;
            }
            let runes = decode(parts[0].as_bytes()).expect("UTF-8").0;
            let w = if parts.len() == 3 {
                (parts[1].parse::<f64>().expect("user frequency") / sum).ln()
            } else {
                median_weight
            };
            trie.insert(&runes, w);
            if runes.len() == 1 {
                user_singles.insert(runes[0]);
            }
        }
        // cppjieba's idf.utf8 is jieba's table without single-code-point words. N counts lines.
        let mut idf = FxHashMap::default();
        let (mut idf_sum, mut lines) = (0.0f64, 0usize);
        for line in neardup_text::zh::DEFAULT_IDF.lines() {
            let parts: Vec<&str> = line.split(' ').collect();
            if parts.len() == 2 && parts[0].chars().count() == 1 {
                continue;
            }
            lines += 1;
            if parts.len() == 2 {
                let v: f64 = parts[1].parse().expect("bundled idf values are numbers");
                idf.insert(parts[0].as_bytes().to_vec(), v);
                idf_sum += v;
            }
        }
        let stop_words = include_str!("../data/cppjieba_stop_words.utf8")
            .split('\n')
            .map(|l| l.as_bytes().to_vec())
            .collect();
        Simhasher {
            flavor,
            trie,
            min_weight,
            user_singles,
            hmm: Hmm::parse(include_str!("../data/hmm_model.utf8")),
            idf,
            idf_average: idf_sum / lines as f64,
            stop_words,
        }
    }

    /// The mean idf used for unknown words.
    pub fn idf_average(&self) -> f64 {
        self.idf_average
    }

    /// cppjieba's MixSegment cut of `text` (HMM on), or `None` when the decoder fails.
    pub fn cut<'t>(&self, text: &'t [u8]) -> Option<Vec<&'t [u8]>> {
        let (runes, offsets) = decode(text)?;
        let mut words = Vec::new();
        let mut start = 0;
        for i in 0..=runes.len() {
            if i == runes.len() || is_separator(runes[i]) {
                if start < i {
                    self.mix_segment(&runes[start..i], &offsets[start..=i], text, &mut words);
                }
                if i < runes.len() {
                    words.push(&text[offsets[i]..offsets[i + 1]]);
                }
                start = i + 1;
            }
        }
        Some(words)
    }

    /// Maximum-probability DP over the dictionary, then the mix step.
    fn mix_segment<'t>(
        &self,
        runes: &[u32],
        offsets: &[usize],
        text: &'t [u8],
        out: &mut Vec<&'t [u8]>,
    ) {
        let n = runes.len();
        // best[i] = (value, end index j of the word starting at i)
        let mut best: Vec<(f64, usize)> = vec![(0.0, 0); n + 1];
        let mut ends: Vec<(usize, f64)> = Vec::new();
        for i in (0..n).rev() {
            ends.clear();
            let single = self.trie.weight(&runes[i..=i]).unwrap_or(self.min_weight);
            ends.push((i, single));
            self.trie.prefixes(&runes[i..(i + MAX_WORD_LENGTH).min(n)], |len, w| {
                if len > 1 {
                    ends.push((i + len - 1, w));
                }
            });
            let mut value = MIN_DOUBLE;
            let mut end = i;
            for &(j, w) in &ends {
                let v = w + if j + 1 < n { best[j + 1].0 } else { 0.0 };
                if v > value {
                    value = v;
                    end = j;
                }
            }
            best[i] = (value, end);
        }
        let mut block_start: Option<usize> = None;
        let mut i = 0;
        while i < n {
            let j = best[i].1;
            let single = j == i;
            if single && !self.user_singles.contains(&runes[i]) {
                block_start.get_or_insert(i);
            } else {
                if let Some(s) = block_start.take() {
                    self.hmm_block(&runes[s..i], &offsets[s..=i], text, out);
                }
                out.push(&text[offsets[i]..offsets[j + 1]]);
            }
            i = j + 1;
        }
        if let Some(s) = block_start {
            self.hmm_block(&runes[s..n], &offsets[s..=n], text, out);
        }
    }

    /// cppjieba's HMMSegment over a run of single code points: ASCII by its rules, the rest by
    /// Viterbi.
    fn hmm_block<'t>(
        &self,
        runes: &[u32],
        offsets: &[usize],
        text: &'t [u8],
        out: &mut Vec<&'t [u8]>,
    ) {
        let n = runes.len();
        let is_letter = |r: u32| {
            (b'a' as u32..=b'z' as u32).contains(&r) || (b'A' as u32..=b'Z' as u32).contains(&r)
        };
        let is_digit = |r: u32| (b'0' as u32..=b'9' as u32).contains(&r);
        let mut pending = 0;
        let mut i = 0;
        while i < n {
            if runes[i] >= 0x80 {
                i += 1;
                continue;
            }
            if pending < i {
                self.viterbi(&runes[pending..i], &offsets[pending..=i], text, out);
            }
            let start = i;
            match self.flavor {
                Flavor::Yanyiwu if is_letter(runes[i]) || is_digit(runes[i]) => {
                    // v5.6.7: letters or digits, then an optional `.` + digits suffix.
                    i += 1;
                    while i < n && (is_letter(runes[i]) || is_digit(runes[i])) {
                        i += 1;
                    }
                    if i + 1 < n && runes[i] == b'.' as u32 && is_digit(runes[i + 1]) {
                        i += 1;
                        while i < n && is_digit(runes[i]) {
                            i += 1;
                        }
                    }
                }
                Flavor::JiebaR09 | Flavor::Gojieba if is_letter(runes[i]) => {
                    // 5.0: a letter, then letters or digits.
                    i += 1;
                    while i < n && (is_letter(runes[i]) || is_digit(runes[i])) {
                        i += 1;
                    }
                }
                Flavor::JiebaR09 if is_digit(runes[i]) => {
                    // 5.0: a digit, then digits, `.` or `-`.
                    i += 1;
                    while i < n
                        && (is_digit(runes[i])
                            || runes[i] == b'.' as u32
                            || runes[i] == b'-' as u32)
                    {
                        i += 1;
                    }
                }
                Flavor::Gojieba if is_digit(runes[i]) => {
                    // gojieba v1.4.7's cppjieba: a digit, then digits or `.` (`12345.` is one
                    // word, `2008-06-04` three).
                    i += 1;
                    while i < n && (is_digit(runes[i]) || runes[i] == b'.' as u32) {
                        i += 1;
                    }
                }
                _ => i += 1,
            }
            out.push(&text[offsets[start]..offsets[i]]);
            pending = i;
        }
        if pending < n {
            self.viterbi(&runes[pending..n], &offsets[pending..=n], text, out);
        }
    }

    // The loops index states the way cppjieba's Viterbi does, which keeps the order of the
    // floating-point additions, and so the result, identical.
    #[allow(clippy::needless_range_loop)]
    fn viterbi<'t>(
        &self,
        runes: &[u32],
        offsets: &[usize],
        text: &'t [u8],
        out: &mut Vec<&'t [u8]>,
    ) {
        const E: usize = 1;
        const S: usize = 3;
        let n = runes.len();
        let hmm = &self.hmm;
        let mut weight = vec![[0.0f64; 4]; n];
        let mut path = vec![[0usize; 4]; n];
        for y in 0..4 {
            weight[0][y] = hmm.start[y] + hmm.emit(y, runes[0]);
        }
        for x in 1..n {
            for y in 0..4 {
                let emit = hmm.emit(y, runes[x]);
                let (mut w, mut p) = (MIN_DOUBLE, E);
                for prev in 0..4 {
                    let v = weight[x - 1][prev] + hmm.trans[prev][y] + emit;
                    if v > w {
                        w = v;
                        p = prev;
                    }
                }
                weight[x][y] = w;
                path[x][y] = p;
            }
        }
        let mut state = if weight[n - 1][E] >= weight[n - 1][S] { E } else { S };
        let mut states = vec![0usize; n];
        for x in (0..n).rev() {
            states[x] = state;
            state = path[x][state];
        }
        let mut start = 0;
        for (x, &s) in states.iter().enumerate() {
            if s == E || s == S {
                out.push(&text[offsets[start]..offsets[x + 1]]);
                start = x + 1;
            }
        }
        if start < n {
            out.push(&text[offsets[start]..offsets[n]]);
        }
    }

    /// cppjieba's TF-IDF keywords of `text`: at most `top_n`, in libstdc++ `partial_sort` order.
    pub fn keywords(&self, text: &[u8], top_n: usize) -> Vec<Keyword> {
        match self.cut(text) {
            Some(words) => self.keywords_of(&words, top_n),
            None => Vec::new(), // "words illegal": the decoder failed
        }
    }

    /// The keywords of already segmented words (jiebaR's `vector_simhash`).
    pub fn keywords_of(&self, words: &[&[u8]], top_n: usize) -> Vec<Keyword> {
        let mut tf: BTreeMap<&[u8], f64> = BTreeMap::new();
        for &w in words {
            if w.is_empty() || self.stop_words.contains(w) || utf8_len(w[0]) == w.len() {
                continue;
            }
            *tf.entry(w).or_insert(0.0) += 1.0;
        }
        let mut candidates: Vec<Keyword> = tf
            .into_iter()
            .map(|(w, f)| Keyword {
                word: w.to_vec(),
                weight: f * self.idf.get(w).copied().unwrap_or(self.idf_average),
            })
            .collect();
        let k = top_n.min(candidates.len());
        partial_sort(&mut candidates, k);
        candidates.truncate(k);
        candidates
    }

    /// The 64-bit SimHash of `text` from its `top_n` keywords.
    pub fn simhash(&self, text: &[u8], top_n: usize) -> SimhashResult {
        let keywords = self.keywords(text, top_n);
        SimhashResult { simhash: vote(&keywords), keywords }
    }

    /// The SimHash of already segmented words.
    pub fn simhash_words(&self, words: &[&[u8]], top_n: usize) -> SimhashResult {
        let keywords = self.keywords_of(words, top_n);
        SimhashResult { simhash: vote(&keywords), keywords }
    }
}

/// jiebaR's R-level preprocessing for `simhash(code, worker)` with `symbol = FALSE` (SPEC.md
/// A.6): every character outside `[\u2e80-\u3000\u3021-\ufe4fa-zA-Z0-9]` becomes one space.
pub fn strip_symbols(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\u{2e80}'..='\u{3000}'
            | '\u{3021}'..='\u{fe4f}'
            | 'a'..='z'
            | 'A'..='Z'
            | '0'..='9' => c,
            _ => ' ',
        })
        .collect()
}

/// Bit voting in `f64`, in keyword order: bit j is 1 iff the sum is strictly positive.
pub fn vote(keywords: &[Keyword]) -> u64 {
    let mut acc = [0.0f64; 64];
    for k in keywords {
        let h = jenkins64(&k.word);
        for (j, a) in acc.iter_mut().enumerate() {
            let sign = if (h >> j) & 1 == 1 { 1.0 } else { -1.0 };
            *a += sign * k.weight;
        }
    }
    acc.iter().enumerate().filter(|(_, &a)| a > 0.0).fold(0u64, |v, (j, _)| v | (1 << j))
}

/// libstdc++'s `std::partial_sort(first, first + k, last, less)` with `less(x, y)` =
/// `x.weight > y.weight`, emulated step by step (SPEC.md A.3) so that ties land where they do
/// upstream.
fn partial_sort(a: &mut [Keyword], k: usize) {
    let less = |x: &Keyword, y: &Keyword| x.weight > y.weight;
    fn adjust(
        a: &mut [Keyword],
        mut hole: usize,
        len: usize,
        value: Keyword,
        less: &impl Fn(&Keyword, &Keyword) -> bool,
    ) {
        let top = hole;
        let mut child = hole;
        while (child as isize) < (len as isize - 1) / 2 {
            child = 2 * (child + 1);
            if less(&a[child], &a[child - 1]) {
                child -= 1;
            }
            a.swap(hole, child);
            hole = child;
        }
        if len.is_multiple_of(2) && child as isize == (len as isize - 2) / 2 {
            child = 2 * (child + 1);
            a.swap(hole, child - 1);
            hole = child - 1;
        }
        // Push `value` up from `hole`.
        let mut parent = (hole as isize - 1) / 2;
        while hole > top && less(&a[parent as usize], &value) {
            a.swap(hole, parent as usize);
            hole = parent as usize;
            parent = (hole as isize - 1) / 2;
        }
        a[hole] = value;
    }
    let make_heap = |a: &mut [Keyword], len: usize| {
        if len < 2 {
            return;
        }
        let mut p = (len as isize - 2) / 2;
        while p >= 0 {
            let v = a[p as usize].clone();
            adjust(a, p as usize, len, v, &less);
            p -= 1;
        }
    };
    let pop_to = |a: &mut [Keyword], len: usize, dest: usize| {
        let v = a[dest].clone();
        a[dest] = a[0].clone();
        adjust(a, 0, len, v, &less);
    };
    make_heap(a, k);
    for i in k..a.len() {
        if less(&a[i], &a[0]) {
            pop_to(a, k, i);
        }
    }
    let mut len = k;
    while len >= 2 {
        pop_to(a, len - 1, len - 1);
        len -= 1;
    }
}

/// The byte length cppjieba's decoder gives a sequence from its lead byte.
fn utf8_len(lead: u8) -> usize {
    match lead {
        0x00..=0x7f => 1,
        0x80..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

/// cppjieba's decoder: the lead byte decides the length (continuation bytes are not checked); a
/// sequence longer than what remains, or a lead byte >= 0xF8, fails the whole text. Returns the
/// code points and the byte offset of each (plus the end).
fn decode(bytes: &[u8]) -> Option<(Vec<u32>, Vec<usize>)> {
    let mut runes = Vec::with_capacity(bytes.len());
    let mut offsets = Vec::with_capacity(bytes.len() + 1);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b >= 0xf8 {
            return None;
        }
        let len = utf8_len(b);
        if i + len > bytes.len() {
            return None;
        }
        let rune = match len {
            1 => u32::from(b),
            2 => (u32::from(b) & 0x1f) << 6 | (u32::from(bytes[i + 1]) & 0x3f),
            3 => {
                (u32::from(b) & 0x0f) << 12
                    | (u32::from(bytes[i + 1]) & 0x3f) << 6
                    | (u32::from(bytes[i + 2]) & 0x3f)
            }
            _ => {
                (u32::from(b) & 0x07) << 18
                    | (u32::from(bytes[i + 1]) & 0x3f) << 12
                    | (u32::from(bytes[i + 2]) & 0x3f) << 6
                    | (u32::from(bytes[i + 3]) & 0x3f)
            }
        };
        runes.push(rune);
        offsets.push(i);
        i += len;
    }
    offsets.push(bytes.len());
    Some((runes, offsets))
}

fn is_separator(r: u32) -> bool {
    matches!(r, 0x20 | 0x09 | 0x0a | 0xff0c | 0x3002)
}

/// A trie over code points: children in one hash map keyed by (node, code point).
#[derive(Debug)]
struct Trie {
    children: FxHashMap<(u32, u32), u32>,
    /// Weight of the word ending at each node; NaN where no word ends.
    weights: Vec<f64>,
}

impl Default for Trie {
    fn default() -> Self {
        Trie { children: FxHashMap::default(), weights: vec![f64::NAN] }
    }
}

impl Trie {
    fn insert(&mut self, runes: &[u32], weight: f64) {
        let mut node = 0u32;
        for &r in runes {
            let next = self.weights.len() as u32;
            node = *self.children.entry((node, r)).or_insert_with(|| next);
            if node == next {
                self.weights.push(f64::NAN);
            }
        }
        self.weights[node as usize] = weight;
    }

    fn weight(&self, runes: &[u32]) -> Option<f64> {
        let mut node = 0u32;
        for &r in runes {
            node = *self.children.get(&(node, r))?;
        }
        let w = self.weights[node as usize];
        (!w.is_nan()).then_some(w)
    }

    /// Calls `f(length, weight)` for every prefix of `runes` that is a word.
    fn prefixes(&self, runes: &[u32], mut f: impl FnMut(usize, f64)) {
        let mut node = 0u32;
        for (i, &r) in runes.iter().enumerate() {
            match self.children.get(&(node, r)) {
                Some(&next) => node = next,
                None => return,
            }
            let w = self.weights[node as usize];
            if !w.is_nan() {
                f(i + 1, w);
            }
        }
    }
}

/// cppjieba's HMM model: states B, E, M, S.
#[derive(Debug)]
struct Hmm {
    start: [f64; 4],
    trans: [[f64; 4]; 4],
    emit: [FxHashMap<u32, f64>; 4],
}

impl Hmm {
    fn parse(text: &str) -> Hmm {
        let mut lines =
            text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'));
        let floats = |line: Option<&str>| -> Vec<f64> {
            line.expect("hmm model line")
                .split(' ')
                .map(|v| v.parse().expect("hmm probability"))
                .collect()
        };
        let s = floats(lines.next());
        let start = [s[0], s[1], s[2], s[3]];
        let mut trans = [[0.0; 4]; 4];
        for row in &mut trans {
            let t = floats(lines.next());
            row.copy_from_slice(&t[..4]);
        }
        let mut emit: [FxHashMap<u32, f64>; 4] = Default::default();
        for table in &mut emit {
            for item in lines.next().expect("emission line").split(',') {
                let Some((ch, p)) = item.rsplit_once(':') else { continue };
                if let Some((runes, _)) = decode(ch.as_bytes()) {
                    if runes.len() == 1 {
                        table.insert(runes[0], p.parse().expect("emission probability"));
                    }
                }
            }
        }
        Hmm { start, trans, emit }
    }

    fn emit(&self, state: usize, rune: u32) -> f64 {
        self.emit[state].get(&rune).copied().unwrap_or(MIN_DOUBLE)
    }
}

/// C++'s default stream formatting of a double (`%g`, 6 significant digits).
fn format_g6(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let exp = v.abs().log10().floor() as i32;
    if !(-5..6).contains(&exp) {
        let s = format!("{v:.5e}");
        let (mantissa, e) = s.split_once('e').expect("exponent");
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().expect("exponent");
        return format!("{mantissa}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_example() {
        let s = simhasher();
        let r = s.simhash("你妈妈叫你回家吃饭啊".as_bytes(), 2);
        assert_eq!(r.simhash, 5_255_740_375_710_833_686);
        let printed: Vec<(String, String)> =
            r.keywords.iter().map(|k| (k.text(), k.weight_printed())).collect();
        assert_eq!(printed, [("妈妈".into(), "6.55531".into()), ("吃饭".into(), "6.44422".into())]);
        let r = s.simhash("你妈妈喊你回家吃饭,回家喽".as_bytes(), 2);
        assert_eq!(
            simhasher_for(Flavor::JiebaR09).simhash("你妈妈喊你回家吃饭,回家喽".as_bytes(), 2),
            r
        );
        assert_eq!(r.simhash, 9_184_284_471_008_831_268);
        assert_eq!(r.keywords[0].weight_printed(), "12.3845");
    }

    #[test]
    fn idf_average_is_cppjiebas() {
        assert_eq!(simhasher().idf_average(), 11.739204307083542);
    }

    #[test]
    fn g6_formatting() {
        assert_eq!(format_g6(6.55531281156), "6.55531");
        assert_eq!(format_g6(12.384529), "12.3845");
        assert_eq!(format_g6(318.452), "318.452");
        assert_eq!(format_g6(11.0), "11");
    }
}
