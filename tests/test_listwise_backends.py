"""The study's listwise protocol on the other backends: the Ray executor (a real local Ray cluster, workers calling the
in-order test server) and an optional GGUF model pack (``vllm serve`` through the API backend is in
tests/test_api_backend.py, on that module's vLLM server)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from audit.backend import CausalLM, resolve
from audit.backend.registry import installed_models
from audit.run.listwise import replace_options, top1_probabilities
from audit.store.database import Store
from audit.tasks import study
from tests.listwise_server import NAME, serving
from tests.test_listwise import DEMO, cli

RANKER = f"openai:{NAME} listwise-generate"


@pytest.fixture()
def ranker() -> Iterator[str]:
    yield from serving()


def rankings(db: Path, model: str) -> list[tuple]:
    """The stored decisions of ``model``: (subtask, pool, group, score), sorted."""
    with Store(db, create=False) as store:
        table = store.pointwise_table()
    mine = table[table["model"] == model]
    return sorted(mine[["subtask", "pool", "group", "score"]].itertuples(index=False, name=None))


def test_ray_executor_gives_the_in_process_rankings(tmp_path: Path, ranker: str) -> None:
    ray = pytest.importorskip("ray")
    argv = ("score", "--task", study.TASK, "--mode", "listwise", "--model", f"openai:{NAME}", "--base-url", ranker,
            "--rankings", "8", "--subtask", "retail", "--batch-size", "2")  # 4 batches: 2 per worker
    code, out, err = cli(*argv, "--db", str(tmp_path / "local.db"))
    assert code == 0, err
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 1024 * 1024, log_to_driver=False)
    try:
        code, out, err = cli(*argv, "--db", str(tmp_path / "ray.db"), "--executor", "ray", "--workers", "2")
    finally:
        ray.shutdown()
    assert code == 0, err
    assert "ray: 2 workers (cpu)" in err and "8 prompts, 8 scored" in out and "parsed 1.000" in out
    found = rankings(tmp_path / "ray.db", RANKER)
    assert found == rankings(tmp_path / "local.db", RANKER) and len(found) == 8 * 8
    first = {(int(pool), group) for _, pool, group, score in found if score == 1}
    assert first == {(i, study.draw("retail", i, 0).groups[0]) for i in range(8)}


@pytest.mark.skipif("gemma3-270m" not in installed_models(), reason="the gemma3-270m GGUF pack is not installed "
                                                                    "(make models)")
def test_gguf_pack_runs_the_likelihood_reading(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    shutil.copy(DEMO, db)
    code, out, err = cli("score", "--task", study.TASK, "--mode", "listwise", "--model", "gemma3-270m",
                         "--reading", "likelihood", "--rankings", "1", "--subtask", "retail", "--db", str(db))
    assert code == 0, err
    with Store(db, create=False) as store:
        [answer] = store.query("SELECT answer FROM choice_results WHERE method = 'listwise-likelihood'")["answer"]
    answer = json.loads(answer)
    assert sum(answer["top1"]) == pytest.approx(1) and sorted(answer["order"]) == list(range(8))
    # Gemma 3's 512-token sliding windows are shorter than the prompt: the reading equals each name scored after the
    # whole prompt with no cache at all
    first = study.draw("retail", 0, 0)
    chat = replace_options(study.ranking_prompt(first), first.names)
    plain = CausalLM.load(resolve("gemma3-270m"), prefix_cache=False).option_logprobs([chat], lead="")[0]
    assert max(abs(a - b) for a, b in zip(top1_probabilities(plain), answer["top1"])) < 1e-4
