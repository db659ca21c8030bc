"""Many calls on one chip timeline: the scheduler, and the dependency graph that orders
calls and finds races and deadlocks."""
