"""What a standby (a step's process forked ahead of its job, see ``zygote.py``) can become without an
interpreter start: the harnesses, by the names of ``wire.py``. session.py adds the session kernel.

Standard library only.
"""

import assert_harness
import candidate_process
import io_harness
import pyprog
import wire

HARNESSES = {wire.ASSERT_HARNESS: assert_harness.main, wire.IO_HARNESS: io_harness.main,
             wire.CANDIDATE: candidate_process.serve_candidate, wire.PYTHON_PROGRAM: pyprog.main}
