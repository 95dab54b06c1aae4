"""``--policy FILE`` of ``verdict`` and ``report``: the policy's values become the command's selection, and a flag
given on the command line that says otherwise is one error naming both."""
from __future__ import annotations

import argparse
from functools import cache

from audit.errors import AuditError
from audit.engine.policy import Policy, load_policy
from audit.engine.tables import StoreTables

#: the options a policy sets → the policy key that sets each
GOVERNED = {"threshold": "threshold", "rule": "reading", "family": "family", "ci": "confidence", "k": "quota",
            "task": "tasks", "models": "systems"}


def add_policy(parser: argparse.ArgumentParser) -> None:
    """``--policy FILE``; call after the governed options are added (it notes which of them the command line
    gives, in ``args.explicit_flags``)."""
    parser.add_argument("--policy", metavar="FILE",
                        help="an audit policy (YAML; see docs/policy.md): its threshold, reading, family, confidence, "
                             "quota, tasks and systems become this command's, as `check --policy` enforces them")
    parser.set_defaults(explicit_flags=frozenset())
    for action in parser._actions:  # argparse has no public hook for "given on the command line"
        if action.dest in GOVERNED:
            action.__class__ = _recording(type(action))


@cache
def _recording(base: type) -> type:
    """``base`` (an argparse action class) that also adds its dest to the namespace's ``explicit_flags``."""

    class Recording(base):  # type: ignore[misc, valid-type]
        def __call__(self, parser, namespace, values, option_string=None):  # noqa: ANN001 (argparse's signature)
            super().__call__(parser, namespace, values, option_string)
            namespace.explicit_flags = frozenset(getattr(namespace, "explicit_flags", ())) | {self.dest}

    return Recording


def policy_of(args: argparse.Namespace) -> Policy | None:
    """The policy of ``args.policy`` (None without one), read and checked before the store is: a bad policy is one
    error line, whatever the store's size."""
    return load_policy(args.policy) if getattr(args, "policy", None) else None


def apply_policy(args: argparse.Namespace, policy: Policy | None, tables: StoreTables) -> None:
    """Set ``args``' threshold, rule, family, ci, task, k and models from ``policy`` (:func:`policy_of`) and the
    store's ``tables``; an explicit flag whose value differs from the policy's is an AuditError naming the flag and
    the policy key."""
    if policy is None:
        return
    explicit = getattr(args, "explicit_flags", frozenset())
    policy.check_tasks(tables.tasks())
    task = _task(args, policy, explicit, tables)
    known = set(tables.scores.loc[tables.scores["task"] == task, "model"].astype(str))
    models = tuple(m for m in policy.systems if m in known)
    if policy.systems and not models:
        raise AuditError(f"policy {policy.path}: task {task!r} has none of the systems it names "
                         f"({', '.join(policy.systems)}); its systems are {', '.join(sorted(known))}")
    wanted = {"threshold": policy.threshold, "rule": policy.reading, "family": policy.family,
              "ci": policy.confidence, "k": policy.quota_for(task), "task": task, "models": models}
    for dest, value in wanted.items():
        if value is None or value == ():  # the policy leaves it to the command
            continue
        if dest in explicit and not _same(getattr(args, dest), value):
            given = getattr(args, dest)
            raise AuditError(f"--{dest} {' '.join(given) if dest == 'models' else given} conflicts with policy "
                             f"{policy.path}'s {GOVERNED[dest]} {_shown(value)}; drop the flag or change the policy")
        setattr(args, dest, value)


def _task(args: argparse.Namespace, policy: Policy, explicit: frozenset, tables: StoreTables) -> str:
    """The one task of the command: ``--task`` (one the policy names, if it names any), else the policy's only
    task, else the store's only task."""
    if "task" in explicit and policy.tasks and args.task not in policy.tasks:
        raise AuditError(f"--task {args.task} conflicts with policy {policy.path}'s tasks {', '.join(policy.tasks)}; "
                         "choose one of them or change the policy")
    if "task" not in explicit and len(policy.tasks) > 1:
        raise AuditError(f"policy {policy.path} names tasks {', '.join(policy.tasks)}; choose one with --task")
    return tables.task(args.task if "task" in explicit else policy.tasks[0] if policy.tasks else None)


def _same(given: object, value: object) -> bool:
    if isinstance(value, tuple):
        return set(map(str, given or ())) == set(value)
    if isinstance(value, float):
        return isinstance(given, (int, float)) and float(given) == value
    return given == value


def _shown(value: object) -> str:
    return ", ".join(value) if isinstance(value, tuple) else f"{value:g}" if isinstance(value, float) else str(value)
