"""The layout of the compiled training loop's state: event kinds, codes, and the columns of
:class:`~simulator.path.training.loop_state.TrainingState`'s arrays.

One place for the numbers that :mod:`~simulator.path.training.loop`,
:mod:`~simulator.path.training.event_heap`, :mod:`~simulator.path.training.preemption_caps`
and the state agree on.
"""

from __future__ import annotations

# Event kinds.
EV_SUBMIT = 0  # the submitter wakes for the next job
EV_REVIEW_INIT = 1  # a pool's review process starts (schedules its first review)
EV_REVIEW = 2
EV_JOB_INIT = 3  # a job's run starts (restart first if it needs one)
EV_JOB_RESTARTED = 4
EV_JOB_SEGMENT = 5  # a checkpoint segment ends (work saved)
EV_JOB_FAILED = 6  # a GPU of the job failed: the segment's work is lost
URGENT, NORMAL = 0, 1  # SimPy's priorities: a process start comes before timeouts at one instant
SEQ_BITS = 1 << 40

MODE_DEDICATED, MODE_LEFTOVER, MODE_PREEMPT = 0, 1, 2
POLICY_FIFO, POLICY_PRIORITY, POLICY_SHORTEST, POLICY_EASY = 0, 1, 2, 3
POLICY_CODES = {"fifo": POLICY_FIFO, "priority": POLICY_PRIORITY, "shortest_first": POLICY_SHORTEST,
                "easy_backfill": POLICY_EASY}
MODE_CODES = {"dedicated": MODE_DEDICATED, "leftover": MODE_LEFTOVER, "preempt": MODE_PREEMPT}

# Integer counters (TrainingState.counters, simulator.path.training.loop_state).
C_HEAP, C_SEQ, C_NEXT_JOB, C_STOPPED_JOB, C_QUEUED, C_RUNNING, C_NEED_STEP, C_LAUNCH_ID = range(8)
# Return codes of ``train_and_integrate``.
REACHED, LAUNCH_JOB_ENDED = 0, 1


# Columns of TrainingState.floats and .ints (simulator.path.training.loop_state).
F_SUBMIT, F_WORK, F_CKPT, F_CKPT_TIME, F_RESTART, F_RATE, F_DONE, F_START, F_END, F_HELD, F_SINCE, F_SEGMENT = range(12)
I_LAUNCH, I_PREEMPTIONS, I_INTERRUPTIONS, I_RESTART, I_RUNNING, I_VERSION = range(6)

# Columns of TrainingState.ints for capped preemptions (simulator.path.training.preemption_caps).
I_CAP, I_DAY, I_TODAY = 6, 7, 8  # the cap (-1: none), the day of its last preemption, its preemptions that day
N_INT_COLUMNS = 9
# Entries of TrainingState.counters for capped preemptions.
C_DAY_OFFSET = 8  # seconds from the UTC midnight before the horizon's start to the start
C_CAPPED = 9  # some job has a cap: protections are kept
C_SHARED_PREEMPT = 10  # what jobs hold in a preempt pool changes what inference places (caps, preempt_after)
N_COUNTERS = 11
