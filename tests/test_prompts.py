"""Prompt framing (prompts.py): the pinned header, catalysts and final prompts, and the question's token range
(the focus) that question relevance needs (scoring/capture.py)."""

from infinipot_cli.pot.prompts import CAP_G, Prompts, question_request


def test_header_and_tail_frame_the_document(builtin):
    P = Prompts(builtin.tokenizer)
    tok = builtin.tokenizer
    head = tok.decode(P.header_ids())
    assert "Read the following document carefully" in head and "What" not in head  # no question in the header
    assert tok.decode(P.catalyst_ids("general")).count(CAP_G) == 1


def test_focus_covers_exactly_the_question(builtin):
    P = Prompts(builtin.tokenizer)
    tok = builtin.tokenizer
    for q in ("What was the keeper's cat called?", "Wer hat den Brief geschrieben?", "x", "  spaced question?  "):
        ids, (f0, f1) = P.catalyst("question", q)
        assert ids == P.tail_ids(question_request(q))                         # same tokens as before
        assert tok.decode(ids[f0:f1]).strip() == q.strip()
        assert f0 > 0 and "Question:" in tok.decode(ids[:f0])                 # the template comes first
        ids, (f0, f1) = P.ask(q, answer_prefix="The answer is")
        assert tok.decode(ids[f0:f1]).strip() == q.strip()
        assert tok.decode(ids[f1:]).endswith("The answer is")
    ids, (f0, f1) = P.catalyst("text", "List every ship that is named.")
    assert tok.decode(ids[f0:f1]).strip() == "List every ship that is named."
    assert P.catalyst("general")[1] is None                                  # CaP-G: the paper's plain sum


def test_focus_without_offsets_falls_back_to_prefix_lengths(builtin):
    class SlowTok:  # a tokenizer without offset mapping
        def __init__(self, t):
            self.t = t
            self.chat_template = t.chat_template

        def __call__(self, *a, **kw):
            if kw.get("return_offsets_mapping"):
                raise NotImplementedError
            return self.t(*a, **kw)

        def __getattr__(self, name):
            return getattr(self.t, name)

    q = "What was the keeper's cat called?"
    fast = Prompts(builtin.tokenizer).catalyst("question", q)
    slow = Prompts(SlowTok(builtin.tokenizer)).catalyst("question", q)
    assert slow[0] == fast[0]
    assert builtin.tokenizer.decode(slow[0][slow[1][0]:slow[1][1]]).strip() == q
