"""Chat-template framing: the pinned reading header, the catalyst prompts (CaP-G / CaP-Q) and final prompts.

The whole conversation is rendered with the model's chat template around a placeholder for the document
and split there:  [header] [document ...] [tail].  The header (system prompt, the start of the user turn
and the reading instruction) is pinned in the pot; the tail closes the user turn with the request and opens
the assistant turn. A catalyst is the tail of a request (InfiniPot §3.3.1, Table 2): CaP-Q uses the user's
question, CaP-G a general "summarize the critical points" request. The header never depends on the question,
so one pot can answer many questions.
"""

from __future__ import annotations

from dataclasses import dataclass

_PLACEHOLDER = "\u2063DOCUMENT\u2063"
READ_INSTRUCTION = "Read the following document carefully. Questions about it come after it.\n\n"
END_OF_DOCUMENT = "\n\n(End of the document.)\n\n"
CAP_G = "Summarize the critical points of the document above."
SUMMARY_REQUEST = "Write a concise summary of the document above: its main points in a few short paragraphs."


def question_request(question: str) -> str:
    return f"Answer the question using the document above.\nQuestion: {question.strip()}"


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
            text = READ_INSTRUCTION + _PLACEHOLDER + END_OF_DOCUMENT + "{request}\nAnswer:"
        head, tail = text.split(_PLACEHOLDER)
        self.header_text = head
        self.tail_fmt = tail.replace("{", "{{").replace("}", "}}").replace("{{request}}", "{request}")

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False)

    def header_ids(self) -> list[int]:
        ids = self.encode(self.header_text)
        bos = getattr(self.tok, "bos_token_id", None)
        if bos is not None and getattr(self.tok, "add_bos_token", False) and (not ids or ids[0] != bos):
            ids = [bos] + ids
        return ids

    def tail_ids(self, request: str, answer_prefix: str = "") -> list[int]:
        return self.encode(self.tail_fmt.format(request=request) + answer_prefix)

    # catalysts --------------------------------------------------------------------------------------
    def catalyst_ids(self, kind: str, text: str | None = None) -> list[int]:
        """kind: "question" (CaP-Q, text = the question), "general" (CaP-G) or "text" (a user catalyst)."""
        if kind == "question":
            return self.tail_ids(question_request(text or ""))
        if kind == "text":
            return self.tail_ids(text or CAP_G)
        return self.tail_ids(CAP_G)

    # final prompts ----------------------------------------------------------------------------------
    def ask_ids(self, question: str, answer_prefix: str = "") -> list[int]:
        return self.tail_ids(question_request(question), answer_prefix)

    def summary_ids(self) -> list[int]:
        return self.tail_ids(SUMMARY_REQUEST)

    def stop_ids(self) -> set[int]:
        ids = set()
        for t in (getattr(self.tok, "eos_token_id", None),):
            if isinstance(t, int):
                ids.add(t)
        for name in ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>", "</s>", "<|endoftext|>"):
            tid = self.tok.convert_tokens_to_ids(name) if name in self.tok.get_vocab() else None
            if isinstance(tid, int):
                ids.add(tid)
        return ids
