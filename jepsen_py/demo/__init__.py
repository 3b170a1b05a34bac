"""The stages of ``kmodel demo``, the main job: each stage is a function that does its work,
writes its results under the demo's output directory, and returns JSON-ready rows that
``jepsen_py.cli.demo`` prints and summarises.

- `jepsen_py.demo.faults`: fault-injection runs on the simulated cluster;
- `jepsen_py.demo.verify`: their histories verified on Spark, against the local engine;
- `jepsen_py.demo.modelcheck`: the replication spec model-checked (parity with TLC,
  Kafka's known bugs as shortest counterexamples).
"""
