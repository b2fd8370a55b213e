"""What is written from a pot: the passages a question is about, the answer, its evidence and honesty check, the
summary and its key points, and the decoding controls (when an answer stops, loops, ends on a sentence)."""
