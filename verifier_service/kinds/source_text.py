"""What the source blankers share (``java_source.blank``, ``rust_source.blank``, ``csharp_tests.blank``,
``function_tests.php_blank``): each replaces its language's comments and literals by spaces, keeping the
text's length, offsets and newlines, so that a pattern found in the blanked text is code at the same place. Also
the end of a comment, and the brace that closes a body in blanked text (the C and D prototype makers)."""

from __future__ import annotations


def wipe(out: list[str], a: int, b: int) -> None:
    """Spaces over ``out[a:b]`` (clipped to its end), its newlines kept."""
    for k in range(a, min(b, len(out))):
        if out[k] != "\n":
            out[k] = " "


def line_end(source: str, i: int) -> int:
    """Where the line comment at ``i`` ends: at its newline (the text's end when there is none)."""
    j = source.find("\n", i)
    return len(source) if j < 0 else j


def block_end(source: str, i: int) -> int:
    """Just past the ``*/`` that closes the ``/*`` comment at ``i`` (not nested; the text's end when unclosed)."""
    j = source.find("*/", i + 2)
    return len(source) if j < 0 else j + 2


def closing_brace(blanked: str, start: int) -> int | None:
    """The offset of the ``}`` that closes the ``{`` at ``start`` of ``blanked`` (a text whose comments and literals
    are blanked), None when none does (at ``start`` itself when no ``{`` is there)."""
    depth = 0
    for k in range(start, len(blanked)):
        depth += blanked[k] == "{"
        depth -= blanked[k] == "}"
        if depth == 0:
            return k
    return None
