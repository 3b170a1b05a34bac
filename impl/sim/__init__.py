"""The simulated world: seeded randomness, logical clock, network, disks."""
