"""Documents in scripts other than Latin: Arabic and Hebrew (right to left, letters of a word often one token
each in a byte-level vocabulary) and Chinese (no spaces, 。 ends a sentence). Their words count for evidence,
recall and key points, and their sentences are units."""

from __future__ import annotations

import pytest
import torch

from infinipot_cli.answer import evidence as ev
from infinipot_cli.pot.archive import clip_words, count_words, words
from infinipot_cli.pot.config import PotConfig
from infinipot_cli.documents import open_source
from infinipot_cli.pot.engine import Engine
from infinipot_cli.pot.prompts import Prompts
from infinipot_cli.pot.reader import SourceRecord, read_source
from infinipot_cli.pot.scoring.segments import BoundaryTable, unit_starts

ZH = ["灯塔看守人名叫老陈，他在岛上住了二十年。", "他每天晚上爬上一百一十二级台阶，点亮灯塔。", "他的猫叫小白，总是睡在灯室里。",
      "暴风雨在第三个晚上来临，吹倒了渔网棚。", "渔民们在港口等待了十一天，才能再次出海。", "春天来了以后，老陈开始修理灯塔的窗户。"]
AR = ["كان حارس المنارة يدعى سالم، وعاش في الجزيرة عشرين عاما.", "كان يصعد مئة واثنتي عشرة درجة كل ليلة ليضيء المنارة.",
      "اسم قطته نور، وكانت تنام دائما في غرفة المصباح.", "جاءت العاصفة في الليلة الثالثة وهدمت كوخ الشباك.",
      "انتظر الصيادون في الميناء أحد عشر يوما قبل أن يبحروا من جديد.", "بعد أن جاء الربيع، بدأ سالم بإصلاح نوافذ المنارة."]
HE = ["שומר המגדלור נקרא דוד, והוא גר באי עשרים שנה.", "בכל לילה הוא עלה מאה ושתים עשרה מדרגות כדי להדליק את המגדלור.",
      "החתול שלו נקרא שלג, והוא תמיד ישן בחדר המנורה.", "הסערה הגיעה בלילה השלישי והרסה את צריף הרשתות.",
      "הדייגים חיכו בנמל אחד עשר ימים לפני שיצאו שוב לים.", "אחרי שהאביב הגיע, דוד התחיל לתקן את חלונות המגדלור."]
HEADS = {"zh": ["第一章 岛屿", "第二章 暴风雨", "第三章 春天"], "ar": ["الفصل الأول", "الفصل الثاني", "الفصل الثالث"],
         "he": ["פרק ראשון", "פרק שני", "פרק שלישי"]}
SENTS = {"zh": ZH, "ar": AR, "he": HE}


def test_words_of_every_script():
    assert words("اسم قطته نور، وكانت تنام") == ["اسم", "قطته", "نور", "وكانت", "تنام"]
    assert words("החתול שלו נקרא שלג") == ["החתול", "שלו", "נקרא", "שלג"]
    assert words("他的猫叫小白") == ["他的", "的猫", "猫叫", "叫小", "小白"]  # no spaces: character bigrams
    assert words("asn1_create_element keys Café") == ["asn1", "create", "element", "key", "café"]
    assert count_words(ZH[0]) == 9 and count_words("the keeper climbed") == 3
    assert clip_words(ZH[0] + ZH[1], 4) == ZH[0][:8] + " …"


@pytest.mark.parametrize("lang", ["zh", "ar", "he"])
def test_sentences_are_units(builtin_tok, lang):
    sep = "" if lang == "zh" else " "
    text = sep.join(SENTS[lang])
    ids = builtin_tok.encode(text)
    starts = unit_starts(torch.arange(len(ids))[None], torch.tensor(ids)[None], BoundaryTable(builtin_tok))[0]
    assert int(starts.sum()) == len(SENTS[lang])


def _read(builtin_tok, path):
    from tiny_models import make_model_for

    P = Prompts(builtin_tok)
    eng = Engine(make_model_for(builtin_tok), builtin_tok, PotConfig(method="full").validate(),
                 catalyst_ids=P.catalyst("general")[0])
    eng.pin(P.header_ids())
    rec = SourceRecord(path=str(path), format="html")
    read_source(eng, builtin_tok, open_source(str(path)), rec)
    return P, eng, [(str(path), rec.tokens)]


def _page(tmp_path, lang):
    sents, heads = SENTS[lang], HEADS[lang]
    sep = "" if lang == "zh" else " "
    body = "".join(f"<h2>{heads[k]}</h2><p>{sep.join(sents[2 * k:2 * k + 2])}</p>" for k in range(3))
    p = tmp_path / f"{lang}.html"
    p.write_text(f"<html><body>{body}</body></html>", encoding="utf-8")
    return p


@pytest.mark.parametrize("lang", ["zh", "ar", "he"])
def test_key_points_in_every_script(builtin_tok, tmp_path, lang):
    from infinipot_cli.answer.keypoints import document_key_points

    _, eng, _ = _read(builtin_tok, _page(tmp_path, lang))
    points = document_key_points(eng)
    assert [p["section"] for p in points] == HEADS[lang]
    for p in points:
        assert p["text"] in SENTS[lang], p  # a whole sentence of its part, its heading left out


@pytest.mark.parametrize("lang,question,answer,expect", [
    ("zh", "老陈的猫叫什么？", "他的猫叫小白。", "他的猫叫小白"),
    ("ar", "ما اسم قطة سالم؟", "اسم قطته نور.", "اسم قطته نور"),
    ("he", "איך נקרא החתול של דוד?", "החתול שלו נקרא שלג.", "החתול שלו נקרא שלג"),
])
def test_evidence_in_every_script(builtin_tok, tmp_path, lang, question, answer, expect):
    P, eng, sources = _read(builtin_tok, _page(tmp_path, lang))
    prompt, focus = P.ask(question)
    eng.answer(prompt, "question", 2, P.stop_ids(), focus=focus)
    out = ev.evidence(eng, ev.Context.of(eng), prompt, question, answer, sources)
    assert any(expect in p.text for p in out[:2]), [p.text for p in out]
    for p in out:
        assert count_words(p.text) <= ev.MAX_WORDS // ev.MAX_PASSAGES + 8, p.text  # short, in words of its script


def test_key_points_of_a_repetitive_chinese_text_repeat_no_sentence_three_times(builtin_tok, tmp_path):
    from collections import Counter

    from infinipot_cli.answer.keypoints import document_key_points

    p = tmp_path / "zh.txt"
    p.write_text(("\n\n".join(ZH) + "\n\n") * 3, encoding="utf-8")
    _, eng, _ = _read(builtin_tok, p)
    points = document_key_points(eng)
    assert len(points) == 8 and max(Counter(k["text"] for k in points).values()) <= 2


def test_no_passage_starts_or_ends_inside_a_character(builtin_tok, tmp_path):
    """Hebrew sentences run past a unit's 40 tokens (a byte-level vocabulary gives a letter a token or two): a
    unit may be cut inside a letter, and the evidence shows no piece of it."""
    p = tmp_path / "he.txt"
    p.write_text(("\n\n".join(HE) + "\n\n") * 3, encoding="utf-8")
    P, eng, sources = _read(builtin_tok, p)
    for q, a in (("איך נקרא החתול של דוד?", "החתול שלו נקרא שלג."), ("מתי הגיעה הסערה?", "בלילה השלישי.")):
        prompt, focus = P.ask(q)
        eng.answer(prompt, "question", 2, P.stop_ids(), focus=focus)
        for passage in ev.evidence(eng, ev.Context.of(eng), prompt, q, a, sources):
            assert "\ufffd" not in passage.text, passage.text
