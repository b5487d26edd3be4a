//! The passage check's alignment, pinned: planted passages with each kind of edit are found
//! whole with exact offsets in both texts; and its invariants, checked on random texts.

use neardup::overlap::{OnExistingId, Overlap, OverlapSpec, PassageIndex};
use proptest::prelude::*;

const ZH_SOURCE: &str = "开源软件的发展离不开社区的贡献。Debian 项目由来自世界各地的志愿者维护，\
    他们打包、测试并发布数以万计的软件包。每个软件包都有维护者负责跟进上游版本、修复缺陷并回应用户的报告。";
const EN_SOURCE: &str = "The Debian project is maintained by volunteers from all over the world. \
    They package, test and release tens of thousands of programs, and every package has a \
    maintainer who follows upstream releases, fixes bugs and answers the reports of users.";

fn index(docs: &[(&str, &str)]) -> PassageIndex {
    let mut index = PassageIndex::new(OverlapSpec::default()).expect("test step");
    index
        .add_documents(
            docs.iter().map(|(i, t)| (i.to_string(), t.to_string())).collect(),
            OnExistingId::Refuse,
        )
        .expect("test step");
    index
}

/// Code point offset of `needle` in `hay`.
fn at(hay: &str, needle: &str) -> u64 {
    hay[..hay.find(needle).expect("needle")].chars().count() as u64
}

fn chars(s: &str) -> u64 {
    s.chars().count() as u64
}

/// Checks `query` against `source` alone, expecting one passage over `copied` (as written in
/// the query) from `source_part` (as written in the source).
fn assert_found(source: &str, query: &str, copied: &str, source_part: &str) -> Overlap {
    let found = index(&[("src", source)]).check(None, query, &[]).expect("test step");
    assert_eq!(found.passages.len(), 1, "{found:#?}");
    let p = &found.passages[0];
    let (start, start_s) = (at(query, copied), at(source, source_part));
    assert_eq!(
        (p.start, p.end, p.source_start, p.source_end),
        (start, start + chars(copied), start_s, start_s + chars(source_part)),
        "{p:#?}"
    );
    assert_eq!(&query[p.start_byte as usize..p.end_byte as usize], copied);
    assert_eq!(&source[p.source_start_byte as usize..p.source_end_byte as usize], source_part);
    found
}

#[test]
fn a_verbatim_passage_is_found_whole_with_its_punctuation() {
    let part = "他们打包、测试并发布数以万计的软件包。";
    let query = format!("我今天写论文。{part}这是我自己的话，没有抄袭任何人。");
    let found = assert_found(ZH_SOURCE, &query, part, part);
    assert_eq!(found.passages[0].similarity, 1.0);
    let part = "They package, test and release tens of thousands of programs, and every package";
    let query = format!("My own opening words come first. {part} and my own words follow here.");
    assert_found(EN_SOURCE, &query, part, part);
}

#[test]
fn light_edits_full_width_forms_and_line_breaks_do_not_break_a_passage() {
    let source_part =
        "Debian 项目由来自世界各地的志愿者维护，他们打包、测试并发布数以万计的软件包。";
    let copied =
        "Ｄｅｂｉａｎ 项目由来自世界\n各地的志愿者维护,他们打包、测试并发布数以万计的软件包。";
    let query = format!("引言部分是原创的内容。{copied}结论也是原创的。");
    assert_found(ZH_SOURCE, &query, copied, source_part);
}

#[test]
fn substitutions_insertions_and_deletions_stay_inside_one_passage() {
    // Reworded: one character in about ten replaced, one inserted, one dropped.
    let source_part = "每个软件包都有维护者负责跟进上游版本、修复缺陷并回应用户的报告。";
    let copied = "每个软件包都有维护人负责跟进上游的版本、修复缺陷回应用户的报告。";
    let query = format!("这一段是我写的开头。{copied}后面是别的内容，与来源无关。");
    let found = assert_found(ZH_SOURCE, &query, copied, source_part);
    assert!(found.passages[0].similarity < 1.0 && found.passages[0].similarity > 0.5);
    let source_part =
        "every package has a maintainer who follows upstream releases, fixes bugs and \
                       answers the reports of users.";
    let copied = "every package has one maintainer who follows the upstream releases, fixes bugs \
                  and answers reports of users.";
    let query = format!("Nothing here is copied at all. {copied} Then my conclusion, also mine.");
    assert_found(EN_SOURCE, &query, copied, source_part);
}

#[test]
fn swapped_sentences_are_one_passage_over_the_whole_source_range() {
    let a = "The Debian project is maintained by volunteers from all over the world.";
    let b = "They package, test and release tens of thousands of programs, and every package has a \
             maintainer who follows upstream releases, fixes bugs and answers the reports of users.";
    let copied = format!("{b} {a}");
    let query = format!("Here is my own introduction text. {copied} My own ending is here.");
    let found = index(&[("src", EN_SOURCE)]).check(None, &query, &[]).expect("test step");
    assert_eq!(found.passages.len(), 1, "{found:#?}");
    let p = &found.passages[0];
    assert_eq!((p.start, p.end), (at(&query, &copied), at(&query, &copied) + chars(&copied)));
    // The source range spans both sentences; the full stop after the source's last word is
    // not in the query's passage there (it ends with the other sentence), so it is left out.
    assert_eq!((p.source_start, p.source_end), (0, chars(EN_SOURCE) - 1));
}

#[test]
fn the_source_holding_more_of_a_stretch_takes_it_and_the_other_is_named() {
    let part = "他们打包、测试并发布数以万计的软件包。每个软件包都有维护者负责跟进上游版本";
    let shorter = "他们打包、测试并发布数以万计的软件包。";
    let query = format!("开头是原创。{part}，结尾也原创。");
    let found = index(&[("short", shorter), ("full", ZH_SOURCE)])
        .check(None, &query, &[])
        .expect("test step");
    assert_eq!(found.passages.len(), 1, "{found:#?}");
    assert_eq!(found.passages[0].source, 1);
    assert_eq!(found.passages[0].also, [0]);
    // The same with the better source excluded: the other one takes what it holds.
    let found = index(&[("short", shorter), ("full", ZH_SOURCE)])
        .check(None, &query, &[1])
        .expect("test step");
    assert_eq!(found.passages[0].source, 0);
}

#[test]
fn a_copy_of_a_text_made_of_one_repeated_phrase_is_found_whole() {
    // Regression: a k-gram repeated more than 16 times was no seed at all, so an exact copy of
    // `哈` x 19 scored 0.
    let laugh = "哈".repeat(19);
    let query = format!("前言。{laugh}");
    let found = index(&[("src", &laugh)]).check(None, &query, &[]).expect("test step");
    assert_eq!(found.copied_chars, 19, "{found:#?}");
    let chant = "go team go ".repeat(40);
    let query = format!("My own words first. {chant}And mine at the end.");
    let found = index(&[("src", chant.trim_end())]).check(None, &query, &[]).expect("test step");
    assert_eq!(found.passages.len(), 1, "{found:#?}");
    assert_eq!(found.copied_chars, chars(chant.trim_end()), "{found:#?}");
}

#[test]
fn copies_in_scripts_written_without_spaces_are_found() {
    // Regression: a run of Thai (Khmer, Myanmar, ...) letters was one unit, so a copy of part
    // of a sentence, or of a sentence with a prefix, matched nothing.
    for source in [
        "ประเทศไทยมีประวัติศาสตร์ยาวนานและวัฒนธรรมที่หลากหลายซึ่งได้รับอิทธิพลจากหลายอารยธรรม",
        "ប្រទេសកម្ពុជាមានប្រវត្តិសាស្ត្រដ៏យូរលង់និងវប្បធម៌ដ៏សម្បូរបែបដែលទទួលឥទ្ធិពល",
        "မြန်မာနိုင်ငံသည်ရှေးဟောင်းယဉ်ကျေးမှုများနှင့်ဘာသာစကားများစွာရှိသောနိုင်ငံဖြစ်သည်",
        "ປະເທດລາວມີປະຫວັດສາດອັນຍາວນານແລະວັດທະນະທຳທີ່ຫຼາກຫຼາຍ",
    ] {
        let chars_of: Vec<char> = source.chars().collect();
        let part: String = chars_of[4..chars_of.len() - 4].iter().collect();
        let query = format!("Introduction. {part} The end.");
        let found = index(&[("src", source)]).check(None, &query, &[]).expect("test step");
        assert_eq!(found.passages.len(), 1, "{source}: {found:#?}");
        assert!(found.copied_chars >= chars(&part) - 2, "{source}: {found:#?}");
    }
}

#[test]
fn a_check_stops_between_sources_when_its_caller_gives_up() {
    let ix = index(&[("src", ZH_SOURCE)]);
    let stop = std::sync::atomic::AtomicBool::new(true);
    let e = ix.check_until(None, ZH_SOURCE, &[], Some(&stop)).expect_err("stopped");
    assert!(matches!(e, neardup::overlap::OverlapError::Stopped), "{e}");
    stop.store(false, std::sync::atomic::Ordering::Relaxed);
    assert!(ix.check_until(None, ZH_SOURCE, &[], Some(&stop)).expect("test step").copied() > 0.9);
}

/// Texts from a vocabulary: words of letters for English-like text, ideographs for Chinese.
fn text(words: std::ops::Range<usize>, chinese: bool, base: u32) -> impl Strategy<Value = String> {
    prop::collection::vec(0u32..3000, words).prop_map(move |ids| {
        if chinese {
            ids.iter().map(|i| char::from_u32(0x4E00 + base + i).expect("test step")).collect()
        } else {
            ids.iter()
                .map(|i| {
                    let n = base + i;
                    format!("w{}{}", (b'a' + (n % 26) as u8) as char, n)
                })
                .collect::<Vec<_>>()
                .join(" ")
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Offsets lie inside both texts, on character boundaries, and the two kinds agree.
    #[test]
    fn offsets_are_inside_the_texts_and_on_character_boundaries(
        source in text(20..200, true, 0),
        noise in text(0..40, true, 4000),
        cut in 0usize..200,
        len in 12usize..150,
    ) {
        let src_chars: Vec<char> = source.chars().collect();
        let a = cut.min(src_chars.len());
        let b = (a + len).min(src_chars.len());
        let copied: String = src_chars[a..b].iter().collect();
        let query = format!("{noise}，{copied}。{noise}");
        let found = index(&[("s", &source)]).check(None, &query, &[]).expect("test step");
        for p in &found.passages {
            prop_assert!(p.start < p.end && p.end <= chars(&query));
            prop_assert!(p.source_start < p.source_end && p.source_end <= chars(&source));
            prop_assert!(query.is_char_boundary(p.start_byte as usize) && query.is_char_boundary(p.end_byte as usize));
            prop_assert_eq!(chars(&query[..p.start_byte as usize]), p.start);
            prop_assert_eq!(chars(&query[..p.end_byte as usize]), p.end);
            prop_assert_eq!(chars(&source[..p.source_start_byte as usize]), p.source_start);
            prop_assert_eq!(chars(&source[..p.source_end_byte as usize]), p.source_end);
        }
        prop_assert!(found.copied_chars <= found.chars);
    }

    /// A text checked against itself is copied whole from itself, in English and in Chinese
    /// (at least 13 characters: a Chinese passage shorter than twice `min_anchor_chars` needs
    /// that many in a row, and 12 identical characters are not a copy).
    #[test]
    fn a_text_checked_against_itself_is_all_copied(
        en in text(12..300, false, 0),
        zh in text(13..300, true, 0),
    ) {
        for source in [en, zh] {
            let found = index(&[("self", &source)]).check(None, &source, &[]).expect("test step");
            prop_assert_eq!(found.copied_chars, found.chars, "{:?}", found);
            prop_assert_eq!(found.sources.len(), 1);
        }
    }

    /// An index grown one document at a time, with removals and replacements (a live
    /// collection), answers as one built at once from the documents it holds, before and after
    /// a save and load: in every check, the same passages from the same sources by id.
    #[test]
    fn an_index_grown_one_by_one_answers_as_one_built_at_once(
        texts in prop::collection::vec(text(12..120, true, 0), 2..8),
        ops in prop::collection::vec((0usize..8, 0u8..3), 4..24),
        query in text(40..200, true, 0),
    ) {
        let mut grown = PassageIndex::new(OverlapSpec::default()).expect("test step");
        let mut held: Vec<(String, String)> = Vec::new();
        for (i, (t, op)) in ops.iter().enumerate() {
            let id = format!("d{}", t % 5);
            match op {
                0 => {
                    grown.remove(&id);
                    held.retain(|(h, _)| *h != id);
                }
                _ => {
                    let text = texts[(t + i) % texts.len()].clone();
                    grown
                        .add_documents(vec![(id.clone(), text.clone())], OnExistingId::Replace)
                        .expect("test step");
                    held.retain(|(h, _)| *h != id);
                    held.push((id, text));
                }
            }
        }
        let whole = index(&held.iter().map(|(i, t)| (i.as_str(), t.as_str())).collect::<Vec<_>>());
        let dir = tempfile::tempdir().expect("test step");
        grown.save(&neardup::IndexLock::acquire(dir.path()).expect("lock")).expect("test step");
        let loaded = PassageIndex::load(dir.path(), &neardup::overlap::OverlapOptions::default()).expect("test step");
        let q = format!("{}{}", query, texts[0]);
        let answer = |ix: &PassageIndex| {
            let o = ix.check(None, &q, &[]).expect("test step");
            o.passages
                .iter()
                .map(|p| (p.start, p.end, ix.id(p.source).to_string(), p.source_start, p.source_end))
                .collect::<Vec<_>>()
        };
        prop_assert_eq!(grown.len(), held.len());
        prop_assert_eq!(answer(&grown), answer(&whole));
        prop_assert_eq!(answer(&loaded), answer(&whole));
    }

    /// A text of a tiny vocabulary (every k-gram repeated many times) is copied whole from
    /// itself, and found whole when planted between text of other words: repeated k-grams are
    /// paired along the copy's diagonal, not dropped, and not paired all with all.
    #[test]
    fn a_text_of_few_distinct_units_is_found_whole(
        units in prop::collection::vec(0u32..3, 40..400),
        noise in text(5..30, true, 4000),
    ) {
        let source: String = units.iter().map(|&u| char::from_u32(0x4E00 + u).expect("test step")).collect();
        let found = index(&[("s", &source)]).check(None, &source, &[]).expect("test step");
        prop_assert_eq!(found.copied_chars, found.chars);
        let query = format!("{noise}。{source}。{noise}");
        let found = index(&[("s", &source)]).check(None, &query, &[]).expect("test step");
        prop_assert_eq!(found.copied_chars, chars(&source), "{:?}", found);
    }

    /// A query that shares no k-gram with the collection gets nothing.
    #[test]
    fn a_query_sharing_no_kgram_gets_nothing(source in text(10..300, false, 0), query in text(10..300, false, 3000)) {
        let found = index(&[("s", &source)]).check(None, &query, &[]).expect("test step");
        prop_assert!(found.passages.is_empty());
        prop_assert_eq!(found.copied_chars, 0);
    }
}

/// A passage copied and converted to traditional characters is credited to its source whole
/// (units are compared in simplified script by default); compared as written it is not.
#[cfg(feature = "zh")]
#[test]
fn a_copy_converted_to_traditional_script_is_found_whole() {
    let copied = "他們打包、測試並發佈數以萬計的軟件包。每個軟件包都有維護者負責跟進上游版本、\
                  修復缺陷並回應用戶的報告。";
    let source_part =
        "他们打包、测试并发布数以万计的软件包。每个软件包都有维护者负责跟进上游版本、\
                       修复缺陷并回应用户的报告。";
    let query = format!("我今天写论文，先说自己的想法。{copied}以下都是我自己的话，没有抄袭。");
    let found = assert_found(ZH_SOURCE, &query, copied, source_part);
    assert_eq!(found.passages[0].similarity, 1.0);

    let spec = OverlapSpec { zh_script: neardup::text::ZhScript::Keep, ..OverlapSpec::default() };
    let mut as_written = PassageIndex::new(spec).expect("test step");
    as_written
        .add_documents(vec![("src".into(), ZH_SOURCE.into())], OnExistingId::Refuse)
        .expect("test step");
    let found = as_written.check(None, &query, &[]).expect("test step");
    assert!(found.copied_chars < chars(copied) * 9 / 10, "{found:#?}");
}

/// Settings saved before units were written in one script compared them as written, and the
/// ids of their indexes stay what they were.
#[test]
fn settings_saved_before_the_script_setting_compare_as_written() {
    let old: OverlapSpec = serde_json::from_str(r#"{"seed":3,"window":4}"#).expect("test step");
    assert_eq!(old.zh_script, neardup::text::ZhScript::Keep);
    let before = xxhash_rust::xxh3::xxh3_64(b"passages/v1/seed=3,window=4,max_postings=256");
    assert_eq!(old.index_id(), format!("{before:016x}"));
    let folded = OverlapSpec::default();
    assert_ne!(old.index_id(), folded.index_id());
}
