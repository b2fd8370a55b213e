"""Chat-template framing: the pinned reading header, the catalyst prompts (CaP-G / CaP-Q) and final prompts.

The whole conversation is rendered with the model's chat template around a placeholder for the document
and split there:  [header] [document ...] [tail].  The header (system prompt, the start of the user turn
and the reading instruction) is pinned in the pot; the tail closes the user turn with the request and opens
the assistant turn. A catalyst is the tail of a request (InfiniPot §3.3.1, Table 2): CaP-Q uses the user's
question, CaP-G a general "summarize the critical points" request. The header never depends on the question,
so one pot can answer many questions.

A tokenizer without a chat template (a base model such as Gemma 3 270M) gets a plain text frame instead:
the reading instruction, the document, the request, then a cue line ("Answer:" / "Summary:") that a base
model continues; an answer stops at the end of its line, a summary at the first blank line (`stop_ids`).

Catalysts and final prompts also say which of their tokens are the user's own words (the *focus*: the
question of CaP-Q, the text of a custom catalyst), so the CaP capture can tell question relevance from the
template's generic attention (scoring/capture.py). CaP-G has no focus: its scores are the paper's plain sum.
"""

from __future__ import annotations

from dataclasses import dataclass

_PLACEHOLDER = "\u2063DOCUMENT\u2063"
READ_INSTRUCTION = "Read the following document carefully. Questions about it come after it.\n\n"
END_OF_DOCUMENT = "\n\n(End of the document.)\n\n"
CAP_G = "Summarize the critical points of the document above."
SUMMARY_REQUEST = "Write a concise summary of the document above: its main points in a few short paragraphs."


QUESTION_LEAD = "Answer the question using the document above.\nQuestion: "
PLAIN_ANSWER_CUE = "\nAnswer:"
PLAIN_SUMMARY_CUE = "\nSummary:"


def question_request(question: str) -> str:
    return QUESTION_LEAD + question.strip()


Focus = tuple[int, int] | None  # [start, stop) token range of the user's words inside a prompt


@dataclass
class Framing:
    header: list[int]      # pinned: template start + reading instruction
    tail_fmt: str          # rendered text after the document, with {request} to fill


class Prompts:
    def __init__(self, tokenizer):
        self.tok = tokenizer
        self.has_template = bool(getattr(tokenizer, "chat_template", None))
        if self.has_template:
            msgs = [{"role": "user", "content": READ_INSTRUCTION + _PLACEHOLDER + END_OF_DOCUMENT + "{request}"}]
            text = tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        else:
            text = READ_INSTRUCTION + _PLACEHOLDER + END_OF_DOCUMENT + "{request}"
        self.cue = "" if self.has_template else PLAIN_ANSWER_CUE  # plain frame: the line the model continues
        head, tail = text.split(_PLACEHOLDER)
        self.header_text = head
        self.tail_fmt = tail.replace("{", "{{").replace("}", "}}").replace("{{request}}", "{request}")

    def _tail_text(self, request: str, answer_prefix: str = "", cue: str | None = None) -> str:
        """The rendered tail: request, then (plain frame) the cue line, then the start of the answer."""
        cue = self.cue if cue is None else cue
        if cue and answer_prefix:
            answer_prefix = " " + answer_prefix.lstrip()
        return self.tail_fmt.format(request=request) + cue + answer_prefix

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False)

    def _adds_bos(self, bos: int) -> bool:
        """Whether the tokenizer starts a text with BOS (the flag, or what encoding with special tokens does:
        Gemma's tokenizer adds <bos> without setting `add_bos_token`, and Gemma degrades without it)."""
        if getattr(self.tok, "add_bos_token", False):
            return True
        try:
            return self.tok.encode("a", add_special_tokens=True)[:1] == [bos]
        except (TypeError, ValueError, AttributeError):
            return False

    def header_ids(self) -> list[int]:
        ids = self.encode(self.header_text)
        bos = getattr(self.tok, "bos_token_id", None)
        if bos is not None and (not ids or ids[0] != bos) and self._adds_bos(bos):
            ids = [bos] + ids
        return ids

    def tail_ids(self, request: str, answer_prefix: str = "", cue: str | None = None) -> list[int]:
        return self.encode(self._tail_text(request, answer_prefix, cue))

    def tail_focus(self, request: str, focus_text: str | None, answer_prefix: str = "") -> tuple[list[int], Focus]:
        """tail_ids(request, answer_prefix) and the token range of `focus_text`, the end of `request`."""
        text = self._tail_text(request, answer_prefix)
        if not focus_text:
            return self.encode(text), None
        stop = len(self.tail_fmt.format(request="\x00").split("\x00")[0]) + len(request)
        return self.encode_span(text, stop - len(focus_text), stop)

    def encode_span(self, text: str, start: int, stop: int) -> tuple[list[int], Focus]:
        """Token ids of `text` and the range of tokens that overlap characters [start, stop)."""
        try:
            enc = self.tok(text, add_special_tokens=False, return_offsets_mapping=True)
            ids, offsets = list(enc["input_ids"]), enc["offset_mapping"]
            inside = [i for i, (a, b) in enumerate(offsets) if b > a and b > start and a < stop]
            return ids, ((inside[0], inside[-1] + 1) if inside else None)
        except (NotImplementedError, ValueError, TypeError, KeyError):  # slow tokenizers have no offsets
            ids = self.encode(text)
            # a space before the focus belongs to its first token (" What"), not to the prefix
            f0, f1 = len(self.encode(text[:start].rstrip(" "))), len(self.encode(text[:stop]))
            return ids, ((f0, min(f1, len(ids))) if f1 > f0 else None)

    # catalysts --------------------------------------------------------------------------------------
    def catalyst(self, kind: str, text: str | None = None) -> tuple[list[int], Focus]:
        """(ids, focus). kind: "question" (CaP-Q, text = the question), "general" (CaP-G, no focus) or
        "text" (a user catalyst: all of its text is the focus)."""
        if kind == "question":
            return self.tail_focus(question_request(text or ""), (text or "").strip())
        if kind == "text" and text:
            return self.tail_focus(text, text)
        return self.tail_focus(CAP_G, None)

    def catalyst_ids(self, kind: str, text: str | None = None) -> list[int]:
        return self.catalyst(kind, text)[0]

    # final prompts ----------------------------------------------------------------------------------
    def ask(self, question: str, answer_prefix: str = "") -> tuple[list[int], Focus]:
        """The final prompt for a question, and the question's token range in it."""
        return self.tail_focus(question_request(question), question.strip(), answer_prefix)

    def ask_ids(self, question: str, answer_prefix: str = "") -> list[int]:
        return self.ask(question, answer_prefix)[0]

    def summary_ids(self) -> list[int]:
        return self.tail_ids(SUMMARY_REQUEST, cue=None if self.has_template else PLAIN_SUMMARY_CUE)

    def stop_ids(self, kind: str = "question") -> set[int]:
        """Token ids that end an answer; `kind` "summary" lets a plain-frame summary run over line ends."""
        ids = set()
        for t in (getattr(self.tok, "eos_token_id", None),):
            if isinstance(t, int):
                ids.add(t)
        for name in ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>", "</s>", "<|endoftext|>"):
            tid = self.tok.convert_tokens_to_ids(name) if name in self.tok.get_vocab() else None
            if isinstance(tid, int):
                ids.add(tid)
        if not self.has_template:  # a base model goes on past its answer ("Question: ..."): stop at the line's
            # end for an answer, at a blank line for a summary (paragraphs)
            for nl in (("\n\n", "\n\n\n") if kind in ("summary", "summarize") else ("\n", "\n\n", "\n\n\n")):
                nl_ids = self.encode(nl)
                if len(nl_ids) == 1:
                    ids.add(nl_ids[0])
        return ids
