"""Generators: what a test does, and when, as pure values on logical time (Jepsen's
``jepsen.generator``).

A generator is an immutable value. Asked for an op with a `Context` (the logical time in
nanoseconds, the threads in scope and which are free, each thread's current process, and
the run's PRNG), ``gen.op(ctx)`` returns ``(result, gen')`` where ``result`` is

- an `Invocation` to perform now (``time == ctx.time``, on a free thread of ``ctx``), and
  ``gen'`` is the generator for what comes after it;
- a `Pending`: nothing now. ``until`` is the logical time at which asking again may help
  (None: only an event helps, a completion freeing a thread); ``gen'`` replaces ``gen``
  (it may have recorded a deadline);
- ``EXHAUSTED``: nothing ever again.

``gen.update(ctx, event)`` returns the generator that has seen ``event``, a history `Op`:
the invocation it made once dispatched, and every completion (``ok``/``fail``/``info``).
That is how generators learn positions from polls. Nothing is mutated, so a generator can
be simulated alone (`simulate`), and the same (generator, seed) always gives the same ops.

Randomness comes only from ``ctx.rng``, the run's stream for the workload (one seed; the
driver passes the same stream to every ask, so the draws depend on the seed and on the
sequence of asks, both deterministic), except `nemesis_schedule`, which derives its draws
from its own ``seed`` and the step number. Never the wall clock, never ``hash()``.

Threads are the client slots ``0..n-1`` and ``"nemesis"``. A thread runs one op at a
time; when a client op ends ``info``, the thread goes on as a new process
(``process + number of client threads``, Jepsen's convention). Combinators that care about
threads (`each_thread`, `reserve`, `on_threads`, `clients`, `nemesis`) hand their children a
context restricted to some threads; a plain generator such as `invoke` takes any free
thread in scope, so put client work under `clients` and faults under `nemesis`.

Combinators: `mix`, `stagger`, `delay`, `limit`, `once`, `time_limit`, `phases` (each phase
waits for the previous one to be exhausted and every thread to be free), `concat`,
`synchronize`, `any_of`, `each_thread`, `each_process`, `reserve`, `on_threads`, `repeat`,
`cycle`, `filter`, `map`, `sleep`, `log` and `info` markers, `nemesis_schedule` and `heal`.
Kafka workload generators: `sends`, `polls`, `final_reads` (the checker's final read-back
convention: polls invoked with ``{"from": N, "final": true}``).

The `Interpreter` is the driver's half: it asks the generator, keeps threads busy until
their op completes, replaces processes after ``info``, builds the history `Op`s and feeds
events back through ``update``. The runner drives it against the simulated cluster;
`simulate` drives it against fake completions (`IdealLog`).
"""

from jepsen_py.generator.combinators import (
    any_of,
    clients,
    concat,
    cycle,
    delay,
    each_process,
    each_thread,
    filter,
    filter_ops,
    info,
    invoke,
    limit,
    log,
    map,
    map_ops,
    mix,
    nemesis,
    on_threads,
    once,
    phases,
    repeat,
    reserve,
    sleep,
    stagger,
    synchronize,
    time_limit,
)
from jepsen_py.generator.core import (
    EXHAUSTED,
    MILLISECOND,
    NEMESIS,
    NIL,
    PENDING,
    SECOND,
    Context,
    Exhausted,
    Gen,
    GeneratorError,
    Invocation,
    Pending,
    Process,
    Result,
    Step,
    Thread,
    derive_rng,
    is_client,
    is_nemesis,
    thread_order,
)
from jepsen_py.generator.faults import (
    heal,
    nemesis_schedule,
)
from jepsen_py.generator.interpreter import (
    Interpreter,
)
from jepsen_py.generator.kafka import (
    KeyRead,
    final_reads,
    polls,
    replica_reads,
    sends,
)
from jepsen_py.generator.simulation import (
    IdealLog,
    Respond,
    Simulation,
    simulate,
)

__all__ = [
    "EXHAUSTED",
    "MILLISECOND",
    "NEMESIS",
    "NIL",
    "PENDING",
    "SECOND",
    "Context",
    "Exhausted",
    "Gen",
    "GeneratorError",
    "IdealLog",
    "Interpreter",
    "Invocation",
    "KeyRead",
    "Pending",
    "Process",
    "Respond",
    "Result",
    "Simulation",
    "Step",
    "Thread",
    "any_of",
    "clients",
    "concat",
    "cycle",
    "delay",
    "derive_rng",
    "each_process",
    "each_thread",
    "filter",
    "filter_ops",
    "final_reads",
    "heal",
    "info",
    "invoke",
    "is_client",
    "is_nemesis",
    "limit",
    "log",
    "map",
    "map_ops",
    "mix",
    "nemesis",
    "nemesis_schedule",
    "on_threads",
    "once",
    "phases",
    "polls",
    "repeat",
    "replica_reads",
    "reserve",
    "sends",
    "simulate",
    "sleep",
    "stagger",
    "synchronize",
    "thread_order",
    "time_limit",
]
