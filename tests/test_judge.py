"""The model judging the evidence's sentences (judge.py): the likelihood of the question given each sentence, used
only where the words' best sentence shares few of the question's words; `retrieve=words` turns it off."""

import pytest
import torch

from infinipot_cli.answer import judge, retrieve


def doc(texts, per=5):
    """(src, seg, texts) of units of `per` tokens each."""
    seg = torch.arange(len(texts)).repeat_interleave(per)
    return torch.arange(seg.numel()), seg, texts


PUMA = ["Puma is a simple, fast, multi-threaded web server for Ruby applications. ",
        "Workers are separate processes that each run their own thread pool. ",
        "Cluster mode is not supported on Windows, because the operating system lacks fork(2). ",
        "Run it with the puma command."]
FORK_Q = "Which process management call is missing on Windows, so that several worker processes cannot run there?"


def test_overlap_counts_the_questions_content_words():
    assert judge.overlap("Which option makes sed edit files in place?", "-i edit files in place") == 0.5
    assert judge.overlap("How do I force a repaint?", "CTRL-L Clear and redraw the screen.") == 0.0
    assert judge.overlap("What is it?", "anything") == 1.0  # no content word: the words decide


def test_a_question_in_the_documents_words_is_left_to_the_words():
    """Where the words' best sentence holds a fifth or more of the question's words the model is not asked (it
    would fail here: no model)."""
    texts = PUMA
    found = [retrieve.Found(0, 20, [0, 1, 2, 3], 2, 3.0)]
    q = "Why is cluster mode not supported on Windows?"
    assert judge.rejudge(None, None, q, found, doc(texts)) is found


def test_candidates_are_each_sentence_of_the_passages_once():
    texts = ["First sentence ", "goes on here. ", "Second one. ", "\n", "Third one."]
    found = [retrieve.Found(0, 25, [0, 1, 2, 3], 1, 2.0), retrieve.Found(20, 25, [4], 4, 1.0)]
    # units 0 and 1 are one sentence; a blank unit is none
    assert judge.candidates(found, texts) == [1, 2, 4]


def test_the_model_judges_the_sentence_that_answers_a_paraphrase(builtin):
    """A question in a reader's own words ("process management call", "Microsoft's OS") over passages whose words
    point elsewhere: the built-in model finds the sentence naming fork(2) likeliest to be asked so; it becomes the
    best passage's top (the sentence the answer is written from and quoted), its passage first."""
    lm = builtin
    texts = PUMA
    first = retrieve.Found(0, 10, [0, 1], 1, 4.0)    # the words' best: "Workers are separate processes ..."
    second = retrieve.Found(10, 20, [2, 3], 3, 2.0)
    q = "What missing call rules out running many workers on Microsoft's OS?"
    assert judge.overlap(q, judge.sentence(texts, 1)) < judge.GATE
    out = judge.rejudge(lm.model, lm.tokenizer, q, [first, second], doc(texts))
    assert out[0].top == 2 and out[0].units == [2, 3] and (out[1].top, out[1].units) == (first.top, first.units)
    assert out[0].score == 4.0 and out[0].core == (10, 20)  # ranked as the best; its core the sentence and its side
    assert out[0].words == 2.0 and out[1].words is None  # its own words' score, what --json shows as "words"
    assert out[0].judged > out[1].judged  # each passage's best sentence as the model judged it (--json's scores)


def test_likelihoods_rank_the_answering_sentence_first(builtin):
    lm = builtin
    sents = ["The keeper climbed the tower every night to light the lamp.",
             "A neighbour brings fish to Biscuit whenever the keeper travels to the mainland.",
             "The cat sleeps by the stove."]
    scores = judge.likelihoods(lm.model, lm.tokenizer, "What keeps a cat from going hungry when the keeper is away?",
                               sents, "chat")
    assert len(scores) == 3 and max(range(3), key=lambda i: scores[i]) == 1
    assert judge.likelihoods(lm.model, lm.tokenizer, FORK_Q, []) == []


def test_a_model_without_a_chat_template_is_asked_in_plain_text(builtin):
    """A tokenizer with no chat template (a base model's GGUF, as gemma3-270m's) judges with the plain prompt
    instead of failing."""
    import copy

    lm = builtin
    bare = copy.copy(lm.tokenizer)
    bare.chat_template = None
    sents = ["The cat sleeps by the stove.", "The keeper lights the lamp."]
    got = judge.likelihoods(lm.model, bare, "Where does the cat sleep?", sents, "chat")
    assert got == judge.likelihoods(lm.model, lm.tokenizer, "Where does the cat sleep?", sents, "plain")


def test_retrieve_option_auto_judges_with_the_builtin_model_only_and_words_turns_it_off():
    from infinipot_cli.errors import UsageError
    from infinipot_cli.pot.config import PotConfig

    assert PotConfig.resolve("infinipot").retrieve == "auto"
    assert judge.judges("auto", "smollm2-135m") and not judge.judges("auto", "gemma3-270m")
    assert judge.judges("model", "gemma3-270m") and not judge.judges("words", "smollm2-135m")
    assert PotConfig.resolve("infinipot+retrieve=words").policy_block()["retrieve"] == "words"
    assert PotConfig.resolve("infinipot-paper").retrieve == "words"          # the paper's answer: no judging
    assert PotConfig.from_saved({"method": "infinipot"}).retrieve == "words"  # a pot saved before the option
    with pytest.raises(UsageError, match="retrieve must be one of auto, model, words"):
        PotConfig.resolve("infinipot+retrieve=attention")



BACKUPS = ["Backups run every night at 2 am. ", "Old backups are deleted after 30 days. ",
           "The server keeps its logs for 7 days. "]
STALE_Q = "How long are stale snapshots retained before removal?"


def test_where_the_model_judged_the_answer_is_decided_over_its_sentence():
    """Where the model overruled the words (a question in a reader's own words), the answer is decided over the
    sentence it judged alone: a written answer is checked against that sentence, not the other passages; where
    that sentence gives no answer of the kind asked for, the answer decided over all the passages stands."""
    from infinipot_cli.answer import answering

    judged = retrieve.Found(5, 10, [1], 1, 2.0, None, (5, 10))
    others = retrieve.Found(10, 15, [2], 2, 1.0, None, (10, 15))
    written = "They are removed after 30 days."
    decided = answering.decide(STALE_Q, written, [judged, others], BACKUPS)
    assert answering.from_judged(STALE_Q, written, judged, BACKUPS, decided)[:3] == ("extracted", "30 days", 1)
    written = "The server keeps them for 7 days."  # only another passage holds 7: the judged sentence answers none
    decided = answering.decide(STALE_Q, written, [judged, others], BACKUPS)
    assert answering.decide(STALE_Q, written, [judged], BACKUPS)[0] == "not-said"
    assert answering.from_judged(STALE_Q, written, judged, BACKUPS, decided) == decided
