"""CAIRO (Zayed et al., "Why Don't Prompt-Based Fairness Metrics Correlate?"): prompt sets and paraphrases
(:mod:`.prompts`, :mod:`.paraphrase`), sampled continuations and toxicity in the store (:mod:`.continuations`,
:mod:`.toxicity`), bias of every prompt combination (:mod:`.bias`) and the best-correlated combination (:mod:`.search`).
"""
