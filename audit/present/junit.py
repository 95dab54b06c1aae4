"""JUnit XML for CI servers: one testsuite per task, one testcase per system × subtask, failures with their lines."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

#: characters XML 1.0 cannot hold at all (escaping does not help): replaced by U+FFFD
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


@dataclass(frozen=True)
class Case:
    """One testcase: its ``suite`` (the task), ``name`` (system · subtask) and the ``failures`` lines (none: passed)."""

    suite: str
    name: str
    failures: tuple[str, ...] = ()


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def junit_xml(cases: list[Case], *, name: str, properties: dict[str, str]) -> str:
    """The XML document of ``cases`` (suites in first-seen order), the run ``name`` and ``properties`` (e.g. the
    policy file and its SHA-256) on every suite; text and attributes escaped by the XML writer."""
    root = ET.Element("testsuites", name=_clean(name), tests=str(len(cases)),
                      failures=str(sum(bool(c.failures) for c in cases)))
    suites: dict[str, ET.Element] = {}
    for case in cases:
        if case.suite not in suites:
            suite = suites[case.suite] = ET.SubElement(root, "testsuite", name=_clean(case.suite))
            listed = ET.SubElement(suite, "properties")
            for key, value in properties.items():
                ET.SubElement(listed, "property", name=_clean(key), value=_clean(value))
        element = ET.SubElement(suites[case.suite], "testcase", classname=_clean(case.suite), name=_clean(case.name))
        if case.failures:
            failure = ET.SubElement(element, "failure", message=_clean(case.failures[0]),
                                    type="policy" if len(case.failures) == 1 else f"policy ({len(case.failures)})")
            failure.text = _clean("\n".join(case.failures))
    for suite_name, suite in suites.items():
        mine = [c for c in cases if c.suite == suite_name]
        suite.set("tests", str(len(mine)))
        suite.set("failures", str(sum(bool(c.failures) for c in mine)))
        suite.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
