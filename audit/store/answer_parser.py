"""Read a free-text pairwise answer: which of the two options it chooses (RABBI paper, section 3.2).

The answer is read sentence by sentence (lines, and text after ``.``, ``!``, ``?``, ``;`` or ``:``). When it opens
with headings for both options ("Essay A:", "Essay B:", the prompt's layout echoed back) it is irregular; otherwise
the first sentence that decides gives the choice:

* a tie phrase at the start ("Both …", "Neither …", "Equally …", "They are equally …", "It's a tie") → ``tie``;
* both options named: a comparison between the two mentions decides ("X over Y", "X is better / a better fit / more
  suitable than Y", "I would recommend X over Y", "X rather than / instead of Y" → X; "X is less … than Y",
  "X is worse than Y" → Y); else a tie word ("X and Y are equally …") → ``tie``; else the next sentence;
* one option named → that option, unless the sentence negates ("A is not entirely good") → irregular;
* no option named: a tie word anywhere ("both", "equally", "neither", "tie") → ``tie``; else the next sentence.

An option is named by its full text or, for a multi-word name, by its first word (first name) or last word (surname)
when that word is not also part of the other option; whole words, any case. A one-letter option (essays ``A``/``B``)
is named by the capital letter as a word ("Essay B", "B.", "A is better than B"), but not by the article that opens
a sentence ("A clear argument …"). Anything else is irregular (``none``).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

FIRST, SECOND, TIE, NONE = "first", "second", "tie", "none"
SENTENCES = re.compile(r"\n+|(?<=[.!?;:])\s+")
TIE_START = re.compile(r"^\W*(both|neither|equally|none of|it'?s a tie|they are (both|equally)|they'?re (both|"
                       r"equally)|the two)\b", re.IGNORECASE)
TIE_WORDS = re.compile(r"\b(both|equally|neither|tie|tied|same)\b", re.IGNORECASE)
BETTER = re.compile(r"\b(over|than|instead of)\b", re.IGNORECASE)
WORSE = re.compile(r"\b(less|worse|weaker|lower|not)\b", re.IGNORECASE)
NEGATION = re.compile(r"\b(not|never|no)\b|n't\b", re.IGNORECASE)
#: words after a sentence-opening "A" that make it the essay's letter, not the article
LETTER_VERBS = re.compile(r"^A\s+(is|was|has|wins|seems|shows|would|should|and|or|better|over|rather|vs\.?)\b")
HEADING = re.compile(r"^(?:essay|candidate|option)?\s*(.+?)\s*:$", re.IGNORECASE)


def parse_choice(answer: str, options: Sequence[str]) -> str:
    """``first``, ``second``, ``tie`` or ``none`` (irregular) for ``answer`` to a prompt with two ``options``."""
    patterns = [_option_pattern(option, other) for option, other in ((options[0], options[1]),
                                                                      (options[1], options[0]))]
    sentences = [s for s in (part.strip() for part in SENTENCES.split(str(answer))) if s]
    if len(_opening_headings(sentences, patterns)) == 2:
        return NONE
    for sentence in sentences:
        choice = _sentence_choice(sentence, patterns)
        if choice is not None:
            return choice
    return NONE


def _opening_headings(sentences: list[str], patterns: list[re.Pattern]) -> set[int]:
    """Options named by the headings ("Essay A:", "B:") the answer opens with."""
    named: set[int] = set()
    for sentence in sentences:
        heading = HEADING.match(sentence)
        found = {i for i, pattern in enumerate(patterns) if heading and pattern.fullmatch(heading.group(1))}
        if not found:
            break
        named |= found
    return named


def _sentence_choice(sentence: str, patterns: list[re.Pattern]) -> str | None:
    if TIE_START.search(sentence):
        return TIE
    spans = [_first_mention(sentence, pattern) for pattern in patterns]
    named = [span is not None for span in spans]
    if all(named):
        (first, first_end), (second, second_end) = spans
        earlier = 0 if first < second else 1
        between = sentence[min(first_end, second_end):max(first, second)]
        if BETTER.search(between):
            winner = 1 - earlier if WORSE.search(between) else earlier
            return (FIRST, SECOND)[winner]
        return TIE if TIE_WORDS.search(sentence) else None
    if any(named):
        return NONE if NEGATION.search(sentence) else (FIRST if named[0] else SECOND)
    return TIE if TIE_WORDS.search(sentence) else None


def _first_mention(sentence: str, pattern: re.Pattern) -> tuple[int, int] | None:
    """(start, end) of the first place ``pattern`` names its option, skipping a sentence-opening article "A"."""
    for match in pattern.finditer(sentence):
        article = match.start() == 0 and match.group() == "A" and sentence[1:2].isspace()
        if not article or LETTER_VERBS.match(sentence):
            return match.start(), match.end()
    return None


@lru_cache(maxsize=4096)
def _option_pattern(option: str, other: str) -> re.Pattern:
    """How ``option`` is named in an answer beside ``other`` (built once per pair of options)."""
    option = option.strip()
    if len(option) == 1:
        return re.compile(rf"(?<![\w']){re.escape(option)}(?![\w'])")
    words, taken = option.split(), {w.lower() for w in other.split()}
    forms = [option] + [w for w in {words[0], words[-1]} if len(words) > 1 and w.lower() not in taken]
    alternatives = "|".join(re.escape(form) for form in sorted(forms, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)
