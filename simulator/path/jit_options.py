"""Options of the compiled path functions (numba)."""

from __future__ import annotations

from numba.core.cpu import CPUTargetOptions

#: Options of the compiled functions that allocate no array and return none: they count no
#: references (NRT's atomic increment and decrement of every array they touch, on every call,
#: took half of the training loop's time). The arrays belong to their caller for the call.
NO_REFCOUNT = {"_nrt": False} if hasattr(CPUTargetOptions, "_nrt") else {}
#: The functions such callers reach that allocate say so (a callee compiled for a caller
#: takes the caller's setting unless it sets its own).
REFCOUNT = {"_nrt": True} if NO_REFCOUNT else {}
