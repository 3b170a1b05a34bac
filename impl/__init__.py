"""The deterministic, sans-I/O implementation of the protocol and its simulated world.

Nothing here reads a clock, sleeps, starts a thread or draws unseeded randomness.
"""
