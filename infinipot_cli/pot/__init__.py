"""The memory pot and the loop that fills it (InfiniPot §3): the engine's Continual Context Distillation, the pot's
KV buffer, CR-RoPE, the scoring policies (scoring/), the archive of what was evicted, the pot's configuration, the
reading header and catalyst prompts, the reader that feeds a document in, and pot files on disk and in the cache."""
