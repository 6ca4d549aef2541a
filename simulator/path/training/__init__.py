"""Training jobs sharing the fleet with inference: sources, scheduling policies, jobs."""
