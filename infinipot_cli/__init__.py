"""infinipot: read documents of any length with a small local LLM in a fixed amount of memory.

Implements InfiniPot (Kim et al., EMNLP 2024, arXiv 2410.01518): Continual Context Distillation
with Catalyst Prompts (CaP), Novelty under Compression (NuC) and Context-Reset RoPE (CR-RoPE).
"""

__version__ = "0.1.2"
