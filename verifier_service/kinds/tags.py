"""Linear-time scans of a completion for tagged and fenced blocks.

A lazy regex such as ``<open>(.*?)</close>`` under ``findall`` tries every
opening tag against the rest of the text: a completion that repeats an
unclosed ``<answer>`` costs quadratic time (a minute at the size limit).
These scans find each opening once, then its closing once, moving forward
only: the same blocks as those regexes, in time linear in the completion.
"""

from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=32)
def _literal(text: str) -> re.Pattern[str]:
    return re.compile(re.escape(text), re.IGNORECASE)


def tagged_spans(text: str, open_tag: str, close_tag: str) -> list[tuple[int, str]]:
    """(where the opening tag starts, the block's text) for each block of ``tagged_blocks``, in linear time."""
    opening, closing = _literal(open_tag), _literal(close_tag)
    spans, pos = [], 0
    while True:
        start = opening.search(text, pos)
        if start is None:
            return spans
        end = closing.search(text, start.end())
        if end is None:  # no closing tag after this opening: none after any later one either
            return spans
        spans.append((start.start(), text[start.end():end.start()]))
        pos = end.end()


def tagged_blocks(text: str, open_tag: str, close_tag: str) -> list[str]:
    """What ``re.findall(open + "(.*?)" + close, text, DOTALL | IGNORECASE)`` returns, in linear time:
    each opening tag's text up to the next closing tag; scanning goes on after that closing tag."""
    return [block for _, block in tagged_spans(text, open_tag, close_tag)]


def count_tags(text: str, tag: str) -> int:
    return sum(1 for _ in _literal(tag).finditer(text))


def fenced_blocks(text: str) -> list[str]:
    """What ``re.findall(r"```[^\\n`]*\\n(.*?)(?:\\n)?```", text, re.DOTALL)`` returns, in linear time: a fence
    line (```, an info string without backticks, a newline), the text up to the next ```, less one newline
    before it."""
    blocks, pos, size = [], 0, len(text)
    while True:
        start = text.find("```", pos)
        if start < 0:
            return blocks
        i = start + 3
        while i < size and text[i] not in "\n`":  # the info string: at most up to the next backtick or newline,
            i += 1                                # so an opening that fails is rescanned by at most 2 characters
        if i >= size or text[i] != "\n":
            pos = start + 1
            continue
        body = i + 1
        end = text.find("```", body)
        if end < 0:  # any later opening's info string holds no ```: nothing closes after here
            return blocks
        blocks.append(text[body:end - 1] if end > body and text[end - 1] == "\n" else text[body:end])
        pos = end + 3
