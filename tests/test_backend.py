"""The real SmolLM2 backend: valid probabilities, and batching / prefix reuse that change nothing."""
from __future__ import annotations

from dataclasses import replace

import pytest

from audit.backend import CausalLM
from audit.backend.chat import PLAIN_FALLBACK, render_text
from audit.errors import AuditError
from audit.tasks.base import Candidate, ChatPrompt
from audit.tasks.resume import ResumeTask
from tests.helpers import needs_cuda


@pytest.fixture
def short_resumes(resume_task: ResumeTask) -> tuple[ResumeTask, list[Candidate]]:
    """The resume task's own templates over its job description's first sentence and each resume's first lines (name
    and latest job): ~140–165 tokens a prompt instead of ~560–820 (the backend's arithmetic is under test here, not
    the prompts). Prompts still share their instruction, differ in length by their names, and pairwise options are
    the names (2–4 tokens each)."""
    resume_task.job_description = resume_task.job_description.split(". ")[0] + "."
    candidates = [replace(c, text="\n".join(c.text.splitlines()[:4])) for c in resume_task.candidates(limit=1)]
    return resume_task, candidates


def test_label_probabilities_are_probabilities(smollm, short_resumes):
    task, candidates = short_resumes
    prompts = [task.pointwise_prompt(c) for c in candidates]
    results = smollm.label_probabilities(prompts, ["Yes", "No"])
    assert len(results) == len(prompts) == 8
    for result in results:
        assert all(0.0 <= p <= 1.0 for p in result.probs)
        assert sum(result.probs) == pytest.approx(1.0, abs=1e-9)
        assert 0.0 < result.mass <= 1.0


def test_label_variants_cover_leading_space(smollm):
    yes, no = smollm.label_token_ids(["Yes", "No"])
    assert set(yes) == {smollm.encode("Yes")[0], smollm.encode(" Yes")[0]}
    assert set(no) == {smollm.encode("No")[0], smollm.encode(" No")[0]}
    with pytest.raises(AuditError, match="share token"):
        smollm.label_token_ids(["Yes", "Yes"])


def test_batched_prefix_cached_and_one_by_one_agree(smollm, short_resumes):
    task, candidates = short_resumes
    prompts = [task.pointwise_prompt(c) for c in candidates]
    assert len({len(smollm.encode(p.user)) for p in prompts}) > 1  # batches pad rows of different lengths
    one_by_one = CausalLM(smollm.ref, smollm.model, smollm.tokenizer, batch_size=1, prefix_cache=False)
    odd_batches = CausalLM(smollm.ref, smollm.model, smollm.tokenizer, batch_size=3, prefix_cache=True)
    reference = one_by_one.label_probabilities(prompts, ["Yes", "No"])
    for variant in (smollm, odd_batches):
        results = variant.label_probabilities(prompts, ["Yes", "No"])
        assert max(abs(a.probs[0] - b.probs[0]) for a, b in zip(results, reference)) < 1e-4
        assert max(abs(a.mass - b.mass) for a, b in zip(results, reference)) < 1e-4
    assert odd_batches._prefixes, "prompts sharing a job description must reuse a cached prefix"


def test_option_logprobs_agree_with_one_by_one(smollm, short_resumes):
    task, candidates = short_resumes
    prompts = [task.pairwise_prompt(a, b) for a, b in zip(candidates, candidates[1:])][:4]
    one_by_one = CausalLM(smollm.ref, smollm.model, smollm.tokenizer, batch_size=1, prefix_cache=False)
    batched = smollm.option_logprobs(prompts)
    single = one_by_one.option_logprobs(prompts)
    for (a1, a2), (b1, b2) in zip(batched, single):
        assert a1 < 0 and a2 < 0
        assert abs(a1 - b1) < 1e-3 and abs(a2 - b2) < 1e-3


def test_generate_returns_an_answer(smollm, resume_task):
    a, b = resume_task.candidates(limit=1)[:2]
    [answer] = smollm.generate([resume_task.pairwise_prompt(a, b)])
    assert answer.strip()


def test_template_without_system_role_folds_system_into_user(smollm):
    tokenizer = smollm.tokenizer
    original = tokenizer.chat_template
    tokenizer.chat_template = (
        "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('no system role') }}{% endif %}"
        "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n"
    )
    try:
        text, templated = render_text(tokenizer, ChatPrompt("SYSTEM TEXT", "USER TEXT"))
    finally:
        tokenizer.chat_template = original
    assert templated
    assert text.index("SYSTEM TEXT") < text.index("USER TEXT")
    assert text.count("<|im_start|>user") == 1 and text.endswith("Answer:")


def test_no_template_uses_documented_fallback(smollm):
    tokenizer = smollm.tokenizer
    original = tokenizer.chat_template
    tokenizer.chat_template = None
    try:
        text, templated = render_text(tokenizer, ChatPrompt("S", "U"))
    finally:
        tokenizer.chat_template = original
    assert not templated
    assert text == PLAIN_FALLBACK.format(system="S", user="U", answer_prefix="Answer:")


def test_auto_precision_follows_the_source_and_device():
    from audit.backend.sources import precision

    assert precision("gguf", "auto", "cpu") == precision("hub", "auto", "cpu") == ("none", "float32")
    assert precision("gguf", "auto", "cuda") == ("none", "float32")  # NF4 on top of Q4 moved P(Yes) by 0.34
    assert precision("hub", "auto", "cuda") == precision("dir", "auto", "cuda") == ("4bit", "bfloat16")
    assert precision("gguf", "4bit", "cuda") == ("4bit", "bfloat16")
    assert precision("hub", "none", "cuda") == ("none", "bfloat16")


@needs_cuda
def test_cuda_auto_on_a_gguf_file_is_fp32_and_agrees_with_the_cpu(resume_task):
    from audit.backend import resolve

    ref = resolve("smollm2-135m", quant="auto")
    assert (ref.device, ref.quant, ref.dtype) == ("cuda", "none", "float32")
    prompts = [resume_task.pointwise_prompt(c) for c in resume_task.candidates(limit=2)]
    batched = CausalLM.load(ref).label_probabilities(prompts, ["Yes", "No"])
    single = CausalLM.load(ref, batch_size=1, prefix_cache=False).label_probabilities(prompts, ["Yes", "No"])
    cpu = CausalLM.load(resolve("smollm2-135m", device="cpu")).label_probabilities(prompts, ["Yes", "No"])
    for a, b, c in zip(batched, single, cpu):
        assert abs(a.probs[0] - b.probs[0]) < 1e-4 and abs(a.probs[0] - c.probs[0]) < 1e-3


@needs_cuda
def test_cuda_4bit_nf4_gives_probabilities_under_its_own_fingerprint(resume_task):
    from audit.backend import resolve

    ref = resolve("smollm2-135m", quant="4bit")
    assert (ref.quant, ref.dtype, ref.label) == ("4bit", "bfloat16", "smollm2-135m@4bit")
    assert ref.fingerprint != resolve("smollm2-135m", quant="none").fingerprint
    prompts = [resume_task.pointwise_prompt(c) for c in resume_task.candidates(limit=1)]
    for result in CausalLM.load(ref).label_probabilities(prompts, ["Yes", "No"]):
        assert all(0.0 <= p <= 1.0 for p in result.probs) and sum(result.probs) == pytest.approx(1.0, abs=1e-6)
        assert 0.0 < result.mass <= 1.0


def test_capabilities_are_declared_and_checked_once_at_load(smollm, smollm_ref):
    from audit.backend.api import ApiBackend
    from audit.backend.protocol import Backend, Sampling, Tokenizing, require
    from audit.backend.vllm_backend import VLLMBackend

    assert isinstance(smollm, Backend) and isinstance(smollm, Sampling) and isinstance(smollm, Tokenizing)
    assert issubclass(VLLMBackend, Sampling) and issubclass(VLLMBackend, Tokenizing)  # CAIRO and the context check
    assert not issubclass(ApiBackend, Tokenizing)  # an endpoint keeps its tokenizer to itself
    assert require(smollm, ("sampling", "tokenizing")) is smollm
    api = ApiBackend(replace(smollm_ref, label="openai:x", kind="api", location="http://127.0.0.1:9/v1"))
    with pytest.raises(AuditError, match=r"cannot tokenize texts locally \(tokenizing\), which this command needs"):
        require(api, ("sampling", "tokenizing"))


def test_one_spec_for_every_caller_and_loads_cached_on_it(monkeypatch, smollm_ref):
    from collections import OrderedDict

    from audit.backend import spec as spec_module
    from audit.backend.spec import ModelOptions, load_backend, spec_for

    assert spec_for("smollm2-135m").ref == smollm_ref
    assert spec_for("smollm2-135m", ModelOptions(backend="vllm")).ref.fingerprint != smollm_ref.fingerprint
    with pytest.raises(AuditError, match="--base-url applies only"):
        spec_for("smollm2-135m", ModelOptions(base_url="http://127.0.0.1:9/v1"))
    with pytest.raises(AuditError, match="--concurrency must be positive"):
        spec_for("openai:x", ModelOptions(base_url="http://127.0.0.1:9/v1", concurrency=0))
    monkeypatch.setattr(spec_module, "_LOADED", OrderedDict())
    loads = []
    real = CausalLM.load.__func__
    monkeypatch.setattr(CausalLM, "load", classmethod(lambda cls, *a, **k: loads.append(a) or real(cls, *a, **k)))
    first = load_backend(spec_for("smollm2-135m"))
    assert load_backend(spec_for("smollm2-135m")) is first and len(loads) == 1


def test_label_scores_normalise_over_the_labels():
    from audit.prompts import LabelScores

    scores = LabelScores.from_masses([0.3, 0.1])
    assert scores.probs == pytest.approx((0.75, 0.25), abs=1e-12) and scores.mass == pytest.approx(0.4, abs=1e-12)
    assert LabelScores.from_masses([0.0, 0.0]).probs == (0.5, 0.5)
