"""Test configuration: Hypothesis runs derandomized in CI, so a run is reproducible."""

import atexit
import os
import shutil
import tempfile

from hypothesis import settings

# One thread per BLAS call: the suite runs on as many processes as cores (pytest-xdist), and a
# BLAS pool per process would only contend for them (the results are the same either way).
for _threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("thorough", max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))

# A run is refused up front when it would not fit in the memory available; on a machine that
# other work keeps busy, what is available changes from minute to minute. Tests judge runs
# against a fixed figure (those about the refusal set their own).
os.environ.setdefault("FLEETCAST_MEMORY_LIMIT", "16GB")

# The compiled kernels stay in the user's cache (``make install`` compiled them there; the
# folder is chosen when simulator is imported, and CLI subprocesses inherit it) ...
import simulator  # noqa: E402, F401

# ... while capacity curves computed by the tests are cached in a throwaway folder.
if "FLEETCAST_CACHE_DIR" not in os.environ:
    _cache = tempfile.mkdtemp(prefix="fleetcast-test-cache-")
    os.environ["FLEETCAST_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, True)
