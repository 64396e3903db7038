"""Extraction of the part of a completion that a verifier checks.

Modes: ``raw`` (the whole completion), ``fenced_code`` (the first ```-fenced
block, any language tag), ``last_fenced_code`` and ``answer_tag`` (the
content of the last ``<answer>...</answer>``). ``None`` means extraction
failed: the completion is MALFORMED. Every mode takes time linear in the completion
(``kinds/tags.py``: a lazy regex is quadratic on a repeated unclosed tag).
"""

from __future__ import annotations

from verifier_service.kinds.tags import fenced_blocks, tagged_blocks


def extract(completion: str, mode: str) -> str | None:
    if mode == "raw":
        found = completion
    elif mode in ("fenced_code", "last_fenced_code"):
        blocks = fenced_blocks(completion)
        if not blocks:
            return None
        found = blocks[0] if mode == "fenced_code" else blocks[-1]
    elif mode == "answer_tag":
        answers = tagged_blocks(completion, "<answer>", "</answer>")
        if not answers:
            return None
        found = answers[-1].strip()
    else:  # modes are validated before extraction
        raise ValueError(f"unknown extract mode {mode!r}")
    return found if found.strip() else None
