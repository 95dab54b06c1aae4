"""Toxicity scorers: the offline default and a local transformers classifier loaded by path (safetensors only)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from audit.cairo.toxicity import ClassifierScorer, ProfanityScorer, get_scorer
from audit.errors import AuditError


def test_profanity_scorer_ranks_insults_above_neutral_text():
    scorer = get_scorer("profanity")
    assert scorer.name.startswith("profanity-check@")
    scores = scorer.score(["what a lovely sunny morning", "you are a stupid fucking idiot"])
    assert scores.shape == (2,) and 0 <= scores[0] < 0.5 < scores[1] <= 1
    assert ProfanityScorer().score([]).shape == (0,)


def tiny_classifier(folder: Path, labels: dict[int, str], *, pickled: bool = False) -> Path:
    """A randomly initialised two-label BERT with its own word-piece vocabulary, saved as safetensors (or, with
    ``pickled``, only as a pickled ``pytorch_model.bin``)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder.mkdir()
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "you", "are", "nice", "awful"]))
    BertTokenizer(str(vocab)).save_pretrained(folder)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=9, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, id2label=labels, label2id={v: k for k, v in labels.items()})
    model = BertForSequenceClassification(config)
    model.save_pretrained(folder, safe_serialization=True)
    if pickled:
        (folder / "model.safetensors").unlink()
        torch.save(model.state_dict(), folder / "pytorch_model.bin")
    return folder


def test_local_classifier_scores_the_toxic_label(tmp_path):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder = tiny_classifier(tmp_path / "clf", {0: "non-toxic", 1: "toxic"})
    scorer = get_scorer(str(folder))
    assert isinstance(scorer, ClassifierScorer) and scorer.name.startswith("classifier:clf@")
    texts = ["you are nice", "you are awful", "nice"]
    got = scorer.score(texts)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    batch = AutoTokenizer.from_pretrained(folder)(texts, padding=True, return_tensors="pt")
    with torch.inference_mode():
        expected = torch.softmax(model(**batch).logits, dim=-1)[:, 1].numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_classifier_errors_name_the_folder_and_the_problem(tmp_path):
    no_label = tiny_classifier(tmp_path / "nolabel", {0: "positive", 1: "negative"})
    with pytest.raises(AuditError, match=r"nolabel has no label named like .*its labels: \['negative', 'positive'\]"):
        get_scorer(str(no_label))
    pickled_only = tiny_classifier(tmp_path / "pickled", {0: "ok", 1: "toxic"}, pickled=True)
    with pytest.raises(AuditError, match="cannot load toxicity model .*pickled"):
        get_scorer(str(pickled_only))
    (tmp_path / "empty").mkdir()
    with pytest.raises(AuditError, match="empty has no config.json"):
        get_scorer(str(tmp_path / "empty"))
    with pytest.raises(AuditError, match="unknown toxicity scorer"):
        get_scorer(str(tmp_path / "absent"))
