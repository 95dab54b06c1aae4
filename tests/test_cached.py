"""The store in front of a backend (audit/run/cached.py) and the backend capabilities a run needs (refused up front)."""
from __future__ import annotations

import json
import sqlite3

import pytest

from audit.backend.spec import ModelOptions, check_offers, load_backend, spec_for
from audit.run.cached import CachedBackend, InProcess
from audit.cairo.continuations import Decoding, SampleJob, text_key
from audit.errors import AuditError
from audit.prompts import ChatPrompt, LabelScores
from audit.run.scoring import BatchJob, run_scoring
from audit.store.database import CONTINUATIONS, LABEL_RESULTS, Store
from loan_spec import loan_task
from served import served_here

LABELS = json.dumps(["Yes", "No"])
LIKELIHOOD = "pairwise likelihood scoring (--pairwise-mode likelihood)"


class Counting:
    """A deterministic fake backend (plumbing only): label probabilities from the prompt's text, every prompt it
    is asked counted; it raises once it has been asked ``fail_after`` prompts (an interrupted run)."""

    def __init__(self, fail_after: int | None = None):
        self.asked: list[str] = []
        self.fail_after = fail_after

    def _ask(self, texts: list[str]) -> None:
        for text in texts:
            if self.fail_after is not None and len(self.asked) >= self.fail_after:
                raise KeyboardInterrupt("killed mid-batch")
            self.asked.append(text)

    def label_probabilities(self, prompts, labels):
        self._ask([p.user for p in prompts])
        return [LabelScores.from_masses([0.5 + len(p.user) % 7 / 100, 0.25]) for p in prompts]

    def sample(self, prompts, seeds, **settings):
        self._ask(list(prompts))
        return [f"{text} … {seed % 1000}" for text, seed in zip(prompts, seeds)]


def requests(n: int) -> dict[str, ChatPrompt]:
    prompts = [ChatPrompt("Judge the applicant.", f"applicant {i}", "Answer:") for i in range(n)]
    return {p.key(): p for p in prompts}


def cached(store: Store, backend: Counting) -> CachedBackend:
    return CachedBackend(store, LABEL_RESULTS, ("fp", LABELS), InProcess(lambda: backend), batch_size=2)


JOB = BatchJob("labels", ("Yes", "No"))


def test_only_missing_items_reach_the_backend_and_every_result_comes_back(db_path):
    wanted = requests(5)
    keys = list(wanted)
    with Store(db_path) as store:
        first = Counting()
        got = cached(store, first).results(JOB, {k: wanted[k] for k in keys[:2]})
        assert (got.cached, got.computed, len(first.asked)) == (0, 2, 2)
        before = store.db.execute("SELECT * FROM label_results ORDER BY prompt").fetchall()

        second = Counting()
        got = cached(store, second).results(JOB, wanted)
        assert second.asked == [wanted[k].user for k in keys[2:]]  # the stored two never reach the model
        assert (got.cached, got.computed, got.cancelled) == (2, 3, False)
        assert set(got.results) == set(keys) and all(json.loads(v[0]) and v[1] > 0 for v in got.results.values())
        assert [r for r in store.db.execute("SELECT * FROM label_results ORDER BY prompt") if r[1] in keys[:2]] \
            == before  # stored results are kept as they were

        third = Counting()
        assert cached(store, third).results(JOB, wanted).computed == 0 and third.asked == []


def test_an_interrupted_batch_loses_only_itself_and_the_next_request_resumes(db_path):
    wanted = requests(7)
    with Store(db_path) as store:
        dying = Counting(fail_after=3)  # batches of 2: the first is saved, the second dies after one prompt

        def record(first):
            with store.transaction():
                store.register_model("fp", "fake", {})
                first()

        with pytest.raises(KeyboardInterrupt):
            cached(store, dying).results(JOB, wanted, record=record)
        assert store.row_counts()["label_results"] == 2 and store.row_counts()["models"] == 1

        resumed = Counting()
        got = cached(store, resumed).results(JOB, wanted)
        assert resumed.asked == [p.user for p in list(wanted.values())[2:]]
        assert (got.cached, got.computed, len(got.results)) == (2, 5, 7)


class Malformed:
    """A job whose rows lack a value: the first save fails inside ``record``'s transaction."""

    def rows(self, backend, batch):
        return [(key, "[1.0]") for key, _ in batch]


def test_nothing_is_written_when_the_first_batch_dies_or_cannot_be_saved(db_path):
    def record(store):
        def write(first):
            with store.transaction():
                store.register_model("fp", "fake", {})
                first()
        return write

    with Store(db_path) as store, pytest.raises(KeyboardInterrupt):
        cached(store, Counting(fail_after=1)).results(JOB, requests(3), record=record(store))
    assert not db_path.exists()  # a new store is created at its first write, and there was none
    with Store(db_path) as store:
        with pytest.raises(AuditError, match="needs an item and 2 values"):
            cached(store, Counting()).results(Malformed(), requests(3), record=record(store))
        assert store.row_counts()["models"] == 0  # the plan rolled back with its first results


def test_items_of_several_columns_resume_too(db_path):
    decoding = Decoding(max_new_tokens=4, min_new_tokens=1, samples=2)
    texts = {text_key(t): t for t in ("The nurse said", "The engineer said", "The teacher said")}
    wanted = {(key, sample): text for sample in range(2) for key, text in texts.items()}

    def model(store: Store, backend: Counting) -> CachedBackend:
        return CachedBackend(store, CONTINUATIONS, ("fp", decoding.key()), InProcess(lambda: backend), batch_size=4)

    with Store(db_path) as store:
        with pytest.raises(KeyboardInterrupt):
            model(store, Counting(fail_after=5)).results(SampleJob(decoding), wanted)
        resumed = Counting()
        got = model(store, resumed).results(SampleJob(decoding), wanted)
        assert (got.cached, got.computed, len(resumed.asked)) == (4, 2, 2)
        assert got.results[next(iter(wanted))][1] == text_key(got.results[next(iter(wanted))][0])


def test_a_row_of_the_wrong_shape_is_refused_naming_the_table(db_path):
    with Store(db_path) as store, pytest.raises(AuditError, match="label_results needs an item and 2 values"):
        store.save_results(LABEL_RESULTS, ("fp", LABELS), [("key", [1.0])])


def test_stored_results_are_byte_identical_to_the_earlier_per_kind_writes(db_path, tmp_path, smollm):
    """The real model on a few candidates (four one-line loan applications): what the wrapper stores equals, column
    by column, what the store's former ``save_label_results`` wrote for the same computed rows (all but the time it
    was written)."""
    task = loan_task(tmp_path)
    with Store(db_path) as store:
        run_scoring(store, task, smollm.ref, lambda: smollm, batch_size=16)
    with Store(db_path, create=False) as store:
        prompts = {p.key(): p for p in (task.pointwise_prompt(c) for c in task.candidates())}
        labels = json.dumps(list(task.label_set.labels))
        ours = store.db.execute("SELECT model, prompt, labels, probs, mass FROM label_results ORDER BY prompt").fetchall()
    rows = BatchJob("labels", tuple(task.label_set.labels)).rows(smollm, list(prompts.items()))
    former = sqlite3.connect(tmp_path / "former.db")
    former.execute("CREATE TABLE label_results (model TEXT NOT NULL, prompt TEXT NOT NULL, labels TEXT NOT NULL, "
                   "probs TEXT NOT NULL, mass REAL NOT NULL, created REAL NOT NULL, PRIMARY KEY (model, prompt, labels))")
    former.executemany("INSERT OR IGNORE INTO label_results VALUES (?, ?, ?, ?, ?, ?)",  # the former write, verbatim
                       [(smollm.ref.fingerprint, key, labels, json.dumps(list(probs)), mass, 0.0)
                        for key, probs, mass in rows])
    assert len(ours) == len(prompts) > 1
    assert ours == former.execute("SELECT model, prompt, labels, probs, mass FROM label_results ORDER BY prompt").fetchall()


def test_a_backend_without_a_needed_capability_is_refused_when_chosen():
    with pytest.raises(AuditError) as refused:
        check_offers("vllm", ("option_logprobs",), LIKELIHOOD)
    assert str(refused.value) == ("the vllm backend cannot score given answers by their log-probabilities "
                                  f"(option_logprobs), which {LIKELIHOOD} needs; backends that can: transformers")
    check_offers("transformers", ("option_logprobs", "sampling", "tokenizing"))


def test_the_api_backend_is_refused_at_selection_and_at_load(smollm):
    with served_here() as url:
        options = ModelOptions(base_url=url, needs=("option_logprobs",), purpose=LIKELIHOOD)
        with pytest.raises(AuditError, match=r"^the openai backend cannot score given answers .* which pairwise "
                                             r"likelihood scoring \(--pairwise-mode likelihood\) needs; backends "
                                             "that can: transformers$"):
            spec_for("openai:smollm2-135m", options)
        spec = spec_for("openai:smollm2-135m", ModelOptions(base_url=url))
        with pytest.raises(AuditError, match=r"^openai:smollm2-135m \(ApiBackend\) cannot score given answers .* "
                                             "backends that can: transformers$"):
            load_backend(spec, ("option_logprobs",), LIKELIHOOD)
        assert load_backend(spec, ("sampling",)).ref == spec.ref


def test_the_cli_and_the_run_page_refuse_before_anything_is_written(tmp_path, capsys, resume_task):
    from audit.cli import main
    from pages.run.runner import run_tasks

    db = tmp_path / "results.db"
    argv = ["score", "--subtask", "retail", "--limit", "1", "--db", str(db), "--mode", "pairwise",
            "--pairwise-mode", "likelihood"]
    assert main([*argv, "--model", "openai:x", "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert main([*argv, "--backend", "vllm"]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert [line.split(" cannot ")[0] for line in errors] == ["error: the openai backend", "error: the vllm backend"]
    assert all(line.endswith(f"which {LIKELIHOOD} needs; backends that can: transformers") for line in errors)
    with pytest.raises(AuditError, match="the openai backend cannot score given answers"):
        run_tasks(str(db), [resume_task], "openai:x", "auto", batch_size=2, base_url="http://127.0.0.1:9/v1",
                  mode="pairwise", pairwise_method="likelihood", rounds=1)
    assert not db.exists()
