"""The run record of ``python -m audit import --format decisions`` names the data hash of the task made from the
decisions just written (no second read of the store): equal to :func:`audit.store.database.data_hash` computed from
the store afterwards, for a first log, a second log of another system in the same task (ranks, dates, texts that
JSON escapes, fractional scores) and a log imported again; the summary line counts its subtasks and pools."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
from helpers import audit

from audit.store.database import Store, data_hash
from audit.store.runs import trail


def _log(folder, name: str, frame: pd.DataFrame, spec: str):
    frame.to_csv(folder / f"{name}.csv", index=False)
    (folder / f"{name}.yaml").write_text(spec)
    return folder / f"{name}.csv", folder / f"{name}.yaml"


def test_the_recorded_hash_is_the_stores(tmp_path):
    rng = np.random.default_rng(3)
    ranks = pd.DataFrame({"id": [f"a{i}" for i in range(60)], "sex": rng.choice(["F", "M", 'X "q"', ""], 60),
                          "req": [f"r{i // 6}" for i in range(60)], "rank": np.tile(np.arange(1, 7), 10),
                          "day": [f"2025-03-{1 + i % 9:02d}" if i % 4 else "" for i in range(60)]})
    ranks.loc[60] = ["solo", "F", "z", 1, ""]  # a pool of one
    scores = pd.DataFrame({"id": [f'b\\{i}' for i in range(50)], "race": rng.choice(["A", "B", "Wé"], 50),
                           "team": rng.choice(["x", "y"], 50), "score": rng.normal(size=50).round(6)})
    db = tmp_path / "s.db"
    imports = [("ranks", ranks, "applicant: id\ndemographics: [sex]\npool: req\ndate: day\n", "ats"),
               ("scores", scores, "applicant: id\ndemographics: [race]\nsubtask: team\n", "scorer"),
               ("ranks", ranks, "applicant: id\ndemographics: [sex]\npool: req\ndate: day\n", "ats")]
    for count, (name, frame, spec, label) in enumerate(imports, start=1):
        data, spec_path = _log(tmp_path, name, frame, spec)
        done = audit("import", "--format", "decisions", "--data", data, "--spec", spec_path, "--task", "hiring",
                     "--label", label, "--db", db)
        assert done.returncode == 0, done.stderr
        subtasks, pools = (1, 11) if name == "ranks" else (2, 2)  # no pool column: one pool per subtask
        assert f": {subtasks} subtask(s), {pools} pool(s); dates" in done.stdout
        with Store(db, create=False) as store:
            reads = json.loads(trail(store)["reads"].iloc[-1])
            assert len(trail(store)) == count
            assert reads["subtasks"] == ["all", "x", "y"][:1 + 2 * (count > 1)]
            assert (reads["data_sha256"], reads["data_rows"]) == data_hash(store, "hiring", reads["subtasks"])[:2]
    assert reads["data_rows"] == 111
