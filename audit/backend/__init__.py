"""Model backend: resolve a model name to a fingerprinted reference, load it, turn prompts into numbers."""
from audit.backend.causal_lm import CausalLM
from audit.prompts import LabelScores
from audit.backend.registry import DEFAULT_MODEL, REGISTRY, installed_models
from audit.backend.sources import QUANTS, ModelRef, resolve

__all__ = ["CausalLM", "LabelScores", "DEFAULT_MODEL", "REGISTRY", "installed_models", "QUANTS", "ModelRef", "resolve"]
