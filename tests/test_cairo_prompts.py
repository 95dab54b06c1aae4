"""CAIRO prompt files: the shipped sets, the CAIRO repository's format, and clear errors for bad files."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from audit.cairo.prompts import ORIGINAL, PromptSets, cairo_source, load_prompts, save_prompts
from audit.errors import AuditError

ROOT = Path(__file__).resolve().parent.parent
ANCHOR = ROOT.parent / "shared" / "anchors" / "cairo" / "prompts"
needs_anchor = pytest.mark.skipif(not ANCHOR.is_dir(), reason="../shared/anchors/cairo is absent")


def write(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


def ours(**dimension: object) -> dict:
    body = {"subgroups": ["f", "m"], "sets": {"original": ["She is", "He is"], "p": ["Her job is", "His job is"]}}
    body.update(dimension)
    return {"format": "audit-cairo-prompts/1", "metric": "toy", "sources": {"p": "hand-written"},
            "dimensions": {"gender": body}}


def test_shipped_prompt_sets_cover_three_metrics_and_two_dimensions():
    loaded = load_prompts(ROOT / "data" / "cairo")
    metrics = ("bold-style", "honest-style", "holisticbias-style")
    assert {(s.metric, s.dimension) for s in loaded} == {(m, d) for m in metrics for d in ("gender", "religion")}
    for sets in loaded:
        assert list(sets.sets)[0] == ORIGINAL and len(sets.paraphrase_sets) >= 3
        assert all(len(texts) == len(sets.subgroups) for texts in sets.sets.values())
        assert {"hand-written"} <= set(sets.sources.values())
        assert len(set(sets.subgroups)) >= 2


def test_limit_keeps_the_first_prompts_of_each_subgroup():
    sets = load_prompts(ROOT / "data" / "cairo" / "honest.json", dimensions=["religion"])[0]
    limited = sets.limited(1)
    assert limited.subgroups == tuple(dict.fromkeys(sets.subgroups))
    assert all(len(texts) == len(limited.subgroups) for texts in limited.sets.values())
    assert limited.sets[ORIGINAL][0] == sets.sets[ORIGINAL][0]


def test_save_and_load_round_trip(tmp_path):
    sets = PromptSets("toy", "gender", ("f", "m"), {"original": ("a", "b"), "x_1": ("c", "d")},
                      {"original": "original", "x_1": "some-model"})
    save_prompts(tmp_path / "toy.json", [sets])
    again = load_prompts(tmp_path / "toy.json")[0]
    assert again.sets == sets.sets and again.sources == sets.sources and again.subgroups == sets.subgroups


@needs_anchor
def test_cairo_bold_import_with_paraphrasing_models():
    loaded = {s.dimension: s for s in load_prompts(ANCHOR / "BOLD", dimensions=["gender", "religion"])}
    gender, religion = loaded["gender"], loaded["religion"]
    assert gender.metric == "bold" and len(gender.subgroups) == 616
    assert set(gender.subgroups) == {"American_actors", "American_actresses"}
    assert set(religion.subgroups) >= {"judaism", "christianity", "islam", "buddhism"}
    assert len(gender.paraphrase_sets) == 11
    assert set(gender.sources.values()) == {"original", "mistralai/Mixtral-8x7B-Instruct-v0.1",
                                            "mistralai/Mistral-7B-Instruct-v0.2", "meta-llama/Llama-2-7b-chat-hf"}
    assert gender.sets[ORIGINAL][0].startswith("Jacob Zachar is an American actor")


@needs_anchor
def test_cairo_honest_import_takes_subgroups_from_the_templates_when_no_groups_file(tmp_path):
    for name in ("HONEST_valid_prompts.json", "HONEST_valid_templates.json"):
        shutil.copy(ANCHOR / "HONEST" / name, tmp_path / name)
    from_templates = load_prompts(tmp_path)[0]
    from_groups = load_prompts(ANCHOR / "HONEST")[0]
    assert from_templates.subgroups == from_groups.subgroups
    assert set(from_groups.subgroups) == {"female", "male"} and len(from_groups.paraphrase_sets) == 10
    test_split = load_prompts(ANCHOR / "HONEST", split="test")[0]
    assert "queer_gender" in test_split.subgroups and len(test_split.subgroups) == 1144


@needs_anchor
def test_cairo_file_with_misaligned_sets_names_the_file_key_and_lengths():
    with pytest.raises(AuditError) as error:
        load_prompts(ANCHOR / "BOLD")
    message = str(error.value)
    assert "BOLD_valid_prompts.json" in message and "'political_ideology'" in message and "8400" in message


def test_cairo_source_names():
    assert cairo_source("prompts_mistralai_Mistral-7B-Instruct-v0.2_3") == "mistralai/Mistral-7B-Instruct-v0.2"
    assert cairo_source("prompts_mistralai_Mixtral-8x7B-Instruct-v0.1") == "mistralai/Mixtral-8x7B-Instruct-v0.1"
    assert cairo_source("prompts_meta-llama_Llama-2-7b-chat-hf_1") == "meta-llama/Llama-2-7b-chat-hf"


@pytest.mark.parametrize("doc,expected", [
    ("{not json", "not valid JSON"),
    ([1, 2], "expected a JSON object"),
    ({"metric": "x"}, "not a prompt file"),
    ({**ours(), "format": "v0"}, "key 'format' is 'v0'"),
    ({k: v for k, v in ours().items() if k != "dimensions"}, "missing key 'dimensions'"),
    (ours(sets={"p": ["a", "b"]}), "'original' list"),
    (ours(sets={"original": ["a", "b"], "p": ["c"]}), "set 'p' has 1 prompts but there are 2 subgroup labels"),
    (ours(sets={"original": ["a", " "], "p": ["c", "d"]}), "set 'original', prompt 1 is empty"),
    (ours(subgroups=["f", "f"]), "at least two subgroups"),
    (ours(sets={"original": ["a", 3]}), "prompt 1 is empty or not a string"),
])
def test_bad_prompt_files_name_the_file_and_the_problem(tmp_path, doc, expected):
    path = write(tmp_path / "bad.json", doc)
    with pytest.raises(AuditError) as error:
        load_prompts(path)
    assert str(path) in str(error.value) and expected in str(error.value)


def test_cairo_prompts_without_subgroups_file(tmp_path):
    path = write(tmp_path / "BOLD_valid_prompts.json", {"gender": {"original_prompts": ["a", "b"]}})
    with pytest.raises(AuditError, match="BOLD_valid_groups.json or BOLD_valid_templates.json"):
        load_prompts(path)


def test_missing_paths_and_dimensions(tmp_path):
    with pytest.raises(AuditError, match="does not exist"):
        load_prompts(tmp_path / "absent.json")
    with pytest.raises(AuditError, match="holds no prompt files"):
        load_prompts(tmp_path)
    with pytest.raises(AuditError, match=r"no prompts for dimension\(s\) \['race'\]"):
        load_prompts(write(tmp_path / "ok.json", ours()), dimensions=["race"])
