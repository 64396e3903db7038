"""Inspection mode: verify sampled completions, then make them easy for a person to read.

The method's inspection rule is a gate: before a GRPO run, somebody reads 50-100
scored samples and checks that the reward agrees with a human reading. This
package turns verified samples into what that person needs:

- ``report.py``: the report's data and files, no rendering: ``flag_samples``
  marks the cases to read first (high reward for tiny code, reward without a test
  run, identical completions scored differently, runs at the time limit, passes
  that print to stderr, sandbox failures), the summary, the labels, the
  sample-set hash (the trainer's inspection gate reads reports through it);
- ``page.py``: ``summary_renderables`` (the terminal summary, rich tables) and
  ``render_html`` (a self-contained page, one card per sample, with an
  agree/disagree control per card whose readings export as ``labels.jsonl``).

Both modules' names are re-exported here.
"""

from verifier_service.tools.inspection.page import *  # noqa: F403
from verifier_service.tools.inspection.page import _SCRIPT, _STYLE  # noqa: F401 - the wheel test reads them
from verifier_service.tools.inspection.report import *  # noqa: F403
