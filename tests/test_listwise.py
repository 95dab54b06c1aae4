"""The study's listwise protocol: prompts equal to the recorded runs', listwise scoring with the bundled model and a
local server, and position bias."""
from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from audit.cli import main
from audit.store.database import Store
from audit.tasks import study
from audit.run.listwise import ListwiseJob, likelihood_answer, replace_options, top1_probabilities
from tests.helpers import needs_cuda
from tests.listwise_server import NAME, Handler, serving
from tests.recorded_study import JOBS, MODELS, extracted

DEMO = Path(__file__).resolve().parents[1] / "data" / "demo.db"


def shown_templates(job: str, names: list[str], inputs: str) -> list[int]:
    """Which of the job's templates each name was shown on, read off a recorded prompt (-1: none fits)."""
    templates = study.materials()["jobs"][job]["resumes"]
    chunks = inputs.split(study.SEPARATOR)
    return [next((t for t, text in enumerate(templates) if chunk.endswith(text.format(name=name))), -1)
            for chunk, name in zip(chunks, names)]


def test_prompts_equal_the_recorded_runs(tmp_path: Path) -> None:
    runs = extracted(tmp_path)
    checked = {job: 0 for job in JOBS}
    for model in MODELS:
        for job in JOBS:
            for path in sorted((runs / model / job).glob("*/*.json"))[:15]:
                context = json.loads(path.read_text())["context"]
                names = context["default_order"]
                built = study.prompt(job, names, shown_templates(job, names, context["inputs"]))
                assert built.user == context["inputs"], path
                assert built.system == context["systems_message"], path
                assert built.answer_prefix == ""
                checked[job] += 1
    assert min(checked.values()) >= 20


def test_draws_one_name_per_group_seeded() -> None:
    first = study.draw("retail", 3, seed=7)
    assert first == study.draw("retail", 3, seed=7)
    assert sorted(first.groups) == sorted(study.materials()["names"])
    assert all(name in study.materials()["names"][g] for g, name in zip(first.groups, first.names))
    assert sorted(first.resumes) == list(range(8))
    others = [study.draw("retail", i, seed=7) for i in range(20)]
    assert len({r.groups for r in others}) > 1 and others[0] != study.draw("retail", 0, seed=8)


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    """A copy of the demo store (the imported study as task study-gpt-hiring)."""
    path = tmp_path / "demo.db"
    shutil.copy(DEMO, path)
    return path


@pytest.fixture()
def ranker() -> Iterator[str]:
    yield from serving()


def test_in_order_ranker_through_the_api(store: Path, ranker: str) -> None:
    Handler.most_in_flight = 0
    code, out, err = cli("score", "--task", study.TASK, "--mode", "listwise", "--model", f"openai:{NAME}",
                         "--base-url", ranker, "--rankings", "64", "--subtask", "retail", "--concurrency", "4",
                         "--db", str(store))
    assert code == 0, err
    assert "unreadable replies (no name mentioned; left out): 0 of 64" in out and "parsed 1.000" in out
    assert Handler.most_in_flight == 4
    code, out, err = cli("position-bias", "--db", str(store), "--task", study.TASK, "--format", "json")
    assert code == 0, err
    rows = [r for r in json.loads(out) if r["model"] == f"openai:{NAME} listwise-generate"]
    assert [(r["position"], r["top1"], r["top1_share"]) for r in rows][:2] == [(1, 64, 1.0), (2, 0, 0.0)]
    assert len(rows) == 8 and rows[0]["p_value"] < 1e-10
    drawn = [study.draw("retail", i, 0) for i in range(64)]
    shown_first = {g: sum(r.groups[0] == g for r in drawn) / 64 for g in study.materials()["names"]}
    with Store(store, create=False) as db:
        scores = db.pointwise_table()
    mine = scores[(scores["model"] == f"openai:{NAME} listwise-generate") & (scores["subtask"] == "retail")]
    assert mine["pool"].nunique() == 64
    rates = mine.assign(top=mine["score"] == 1).groupby("group")["top"].mean()
    assert rates.to_dict() == pytest.approx(shown_first)
    code, out, err = cli("score", "--task", study.TASK, "--mode", "listwise", "--model", f"openai:{NAME}",
                         "--base-url", ranker, "--rankings", "64", "--subtask", "retail", "--db", str(store))
    assert code == 0 and "0 scored, 64 cached" in out, err


# each SmolLM2 ranking is one 2.5k-token prompt (≈ 13 CPU s for the likelihood reading and its full order; the
# generate reading's replies are cut at 48 tokens, so its cost is the prompt's prefill): few rankings, on CI's time
RANKINGS = 2  # likelihood-reading rankings: more than one pool, so the stored pools are counted
GENERATED = 1  # generate-reading rankings: each a sampled 48-token reply to a 2.5k-token prompt


def test_likelihood_answer_follows_the_greedy_picks() -> None:
    steps = [{0: -1.0, 1: -2.0, 2: -3.0}, {1: -0.5, 2: -0.2}]
    answer = likelihood_answer(steps)
    assert answer["top1"] == pytest.approx(top1_probabilities([-1.0, -2.0, -3.0]))
    assert answer["order"] == [0, 2, 1]
    assert answer["order_p"] == pytest.approx(answer["top1"][0] * top1_probabilities([-0.5, -0.2])[1])


def test_a_local_reply_stops_once_it_names_every_name(smollm) -> None:
    import torch

    from audit.backend.causal_lm import _AllMentioned

    prompt = smollm.encode("Rank them: Bob Kim, Ann Lee.")
    stop = _AllMentioned(smollm.tokenizer, [["Bob Kim", "Ann Lee"]], len(prompt))
    for reply, done in (("1. Ann Lee\n2. BOB KIM", True), ("1. Ann Lee\n2. Bob Ki", False)):
        assert stop(torch.tensor([prompt + smollm.encode(reply)]), None).tolist() == [done]


def test_smollm2_both_readings_then_verdict(store: Path, smollm) -> None:
    """Both readings of SmolLM2 into one store, then the verdict over them. The generate reading runs one ranking of
    48 tokens (a 2.5k-token prompt: about 30 s on one loaded core); SmolLM2 often names nobody, and a run whose
    every reply names nobody is an error with nothing to audit (exit 2), its replies stored."""
    outs, sizes = {}, {"likelihood": RANKINGS, "generate": GENERATED}
    for reading, rankings in sizes.items():
        code, outs[reading], err = cli("score", "--task", study.TASK, "--mode", "listwise", "--model", "smollm2-135m",
                                         "--reading", reading, "--max-tokens", "48", "--rankings", str(rankings),
                                         "--subtask", "retail", "--db", str(store))
        assert f"{rankings} prompts, {rankings} scored" in outs[reading], err
        unreadable = re.search(rf"unreadable replies \(no name mentioned; left out\): (\d) of {rankings}",
                               outs[reading])
        assert code == (2 if unreadable and int(unreadable[1]) == rankings else 0), err
    with Store(store, create=False) as db:
        answers = db.query("SELECT prompt, answer FROM choice_results WHERE method = 'listwise-likelihood'")
        systems = db.recorded_systems()
    assert len(answers) == RANKINGS
    stored = dict(zip(answers["prompt"], answers["answer"].map(json.loads)))
    for answer in stored.values():
        probs = answer["top1"]
        assert len(probs) == 8 and sum(probs) == pytest.approx(1, abs=1e-9) and min(probs) >= 0
        assert sorted(answer["order"]) == list(range(8)) and answer["order"][0] == probs.index(max(probs))
        assert 0 < answer["order_p"] <= max(probs)
    last = study.draw("retail", RANKINGS - 1, 0)
    chat = replace_options(study.ranking_prompt(last), last.names)
    # the reading from one KV cache equals each name scored after the whole prompt (the earlier implementation); the
    # last ranking's cache began as the one before it, cut back to the tokens the two prompts share
    alone = top1_probabilities(smollm.option_logprobs([chat], lead="")[0])
    assert max(abs(a - b) for a, b in zip(alone, stored[chat.key()]["top1"])) < 1e-5
    assert "probability of the most likely full order" in outs["likelihood"]
    mine = systems[systems["model"].str.startswith("smollm2-135m listwise-")]
    assert mine.loc[mine["model"] == "smollm2-135m listwise-likelihood", "pools"].item() == RANKINGS
    unreadable = re.search(rf"unreadable replies \(no name mentioned; left out\): (\d) of {GENERATED}",
                           outs["generate"])
    generated = mine.loc[mine["model"] == "smollm2-135m listwise-generate", "pools"].sum()
    assert generated == GENERATED - (int(unreadable[1]) if unreadable else 0)
    code, out, err = cli("verdict", "--db", str(store), "--task", study.TASK, "--k", "1", "--format", "csv")
    assert code == 0, err
    assert "smollm2-135m listwise-likelihood" in out and "gpt-4" in out


@needs_cuda
def test_cuda_listwise_readings_agree_with_the_cpu() -> None:
    from audit.backend import CausalLM, resolve

    drawn = [study.draw("retail", i, 0) for i in range(2)]
    batch = [(chat.key(), chat) for chat in (replace_options(study.ranking_prompt(r), r.names) for r in drawn)]
    cpu = CausalLM.load(resolve("smollm2-135m", device="cpu"))
    cuda = CausalLM.load(resolve("smollm2-135m", device="cuda"))  # a GGUF file on CUDA: float32, as on the CPU
    for method in ("listwise-likelihood", "listwise-generate"):
        job = ListwiseJob(method, 0, max_tokens=48)
        on_gpu, on_cpu = job.rows(cuda, batch), job.rows(cpu, batch)
        if method == "listwise-generate":  # the same seeded draws from logits equal to ~1e-5: the same replies
            assert [r[1:3] for r in on_gpu] == [r[1:3] for r in on_cpu]
            continue
        for gpu_row, cpu_row in zip(on_gpu, on_cpu):
            here, there = json.loads(gpu_row[1]), json.loads(cpu_row[1])
            assert max(abs(a - b) for a, b in zip(here["top1"], there["top1"])) < 1e-4
            assert here["order"] == there["order"]
    nf4 = CausalLM.load(resolve("smollm2-135m", device="cuda", quant="4bit"))
    for row in ListwiseJob("listwise-likelihood", 0).rows(nf4, batch):
        answer = json.loads(row[1])
        assert sum(answer["top1"]) == pytest.approx(1, abs=1e-9) and sorted(answer["order"]) == list(range(8))


def test_listwise_refuses_bad_options(store: Path) -> None:
    before = Store(store, create=False).row_counts()
    for argv, message in ((("--subtask", "plumber"), "unknown subtask 'plumber'"),
                          (("--subtask", "retail", "--rankings", "0"), "--rankings and --batch-size must be positive"),
                          (("--subtask", "retail", "--model", "openai:x", "--base-url", "http://127.0.0.1:9/v1",
                            "--reading", "likelihood"), "--reading likelihood needs a local")):
        code, _, err = cli("score", "--task", study.TASK, "--mode", "listwise", "--db", str(store), *argv)
        assert code == 2 and message in err
    assert Store(store, create=False).row_counts() == before
