from retain.memory import Memory
from retain.text.lexical import STOPWORDS, index_terms, query_terms


def test_latin_words_are_lowercased_in_order():
    assert index_terms("Caroline went to the LGBTQ group") == ["caroline", "went", "to", "the", "lgbtq", "group"]


def test_chinese_runs_become_bigrams_and_unigrams():
    assert index_terms("用户喜欢绿茶") == ["用户", "户喜", "喜欢", "欢绿", "绿茶", "用", "户", "喜", "欢", "绿", "茶"]
    assert index_terms("用户喜欢绿茶", unigrams=False) == ["用户", "户喜", "喜欢", "欢绿", "绿茶"]


def test_query_terms_use_bigrams_or_the_single_character():
    assert query_terms("绿茶") == ["绿茶"]
    assert query_terms("猫") == ["猫"]


def test_single_cjk_character_is_kept_as_unigram():
    assert index_terms("茶") == ["茶"]


def test_japanese_kana_and_kanji_are_segmented():
    terms = index_terms("東京でラーメンを食べた")
    assert "東京" in terms
    assert "ラー" in terms


def test_mixed_script_keeps_both():
    assert index_terms("I like 绿茶 tea") == ["i", "like", "绿茶", "绿", "茶", "tea"]


def test_query_terms_drop_stopwords_and_duplicates():
    assert query_terms("What did Caroline do with the the group?") == ["caroline", "group"]


def test_query_of_only_stopwords_is_not_emptied():
    terms = query_terms("what is it")
    assert terms == ["what", "is", "it"]
    assert all(t in STOPWORDS for t in terms)


def test_single_cjk_character_query_finds_by_lexical(mem64: Memory) -> None:
    cat = mem64.add("我的猫叫小白", namespace="n")
    mem64.add("明天下午三点开会", namespace="n")
    assert [h.record.id for h in mem64.search("猫", namespace="n", config="lexical")] == [cat]
