"""Consumer groups (classic protocol): placement of a group's coordinator, the coordinator's
state machine, the group member (consumer) and a deterministic harness that runs them."""
