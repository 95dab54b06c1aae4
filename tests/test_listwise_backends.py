"""The study's listwise protocol on an optional GGUF model pack (the Ray executor is in tests/test_scale_ray.py, on that
module's cluster; ``vllm serve`` through the API backend in tests/test_api_backend.py, on that module's vLLM
server)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from audit.backend import CausalLM, resolve
from audit.backend.registry import installed_models
from audit.run.listwise import replace_options, top1_probabilities
from audit.store.database import Store
from audit.tasks import study
from tests.test_listwise import DEMO, cli


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
