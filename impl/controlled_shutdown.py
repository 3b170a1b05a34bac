"""The broker's side of a controlled shutdown (``controlled.shutdown.enable``, Kafka's
``KafkaServer.controlledShutdown``).

A broker asked to stop cleanly first asks the controller to move its leaderships away
(``ControlledShutdown``). The controller (``impl.controller``) marks it shutting down, makes
another live ISR member lead each partition it led, takes it out of every ISR, never elects
it again while it is shutting down, and answers how many partitions still name it. The
broker asks again every ``controlled.shutdown.retry.backoff.ms`` until the answer is 0, or
gives up after ``controlled.shutdown.max.retries`` attempts; either way it then stops with
its logs flushed (a clean shutdown: ``ShutdownReady``, carried out by the world). Moving the
leaderships first is what keeps producers from waiting a session timeout for a failover.
"""

from __future__ import annotations

import attrs

from impl.protocol import (
    ControlledShutdown,
    ControlledShutdownResponse,
    Effects,
    Errors,
    ShutdownReady,
)

__all__ = ["ShutdownConfig", "ShutdownState"]


@attrs.frozen
class ShutdownConfig:
    max_retries: int = 3
    """``controlled.shutdown.max.retries`` (Kafka's default 3)."""
    retry_backoff_ns: int = 5_000_000_000
    """``controlled.shutdown.retry.backoff.ms`` (Kafka's default 5 s)."""
    recheck_ns: int = 1_000_000_000
    """When the controller accepted but still names the broker, it asks again this soon
    (Kafka's ZooKeeper-era controller answers once it moved the leaderships; this one
    moves them on its next ticks, so the broker polls)."""


@attrs.define
class ShutdownState:
    """One broker's controlled shutdown in progress."""

    broker_id: int
    config: ShutdownConfig = attrs.field(factory=ShutdownConfig)
    attempts: int = 0
    next_try_at: int = 0
    request_id: int = 0
    done: bool = False

    def tick(self, now: int, broker_epoch: int | None, controller: str, out: Effects) -> None:
        """Ask the controller (again), or give up after the last retry."""
        if self.done or now < self.next_try_at:
            return
        if self.attempts > self.config.max_retries:
            self._finish(moved=False, out=out)
            return
        if broker_epoch is None:
            return  # not registered: nobody to ask yet
        self.attempts += 1
        self.request_id += 1
        self.next_try_at = now + self.config.retry_backoff_ns
        out.send(controller, ControlledShutdown(self.broker_id, broker_epoch, self.request_id))

    def on_response(self, msg: ControlledShutdownResponse, now: int, out: Effects) -> None:
        if self.done or msg.request_id != self.request_id or msg.error is not Errors.NONE:
            return
        if msg.remaining == 0:
            self._finish(moved=True, out=out)
        else:
            # Accepted, in progress: ask again soon (each ask counts as an attempt, as
            # Kafka counts each try against controlled.shutdown.max.retries).
            self.next_try_at = now + self.config.recheck_ns

    def _finish(self, moved: bool, out: Effects) -> None:
        self.done = True
        out.note(ShutdownReady(self.broker_id, moved))
