"""History checkers: linearizability (Wing-Gong-Lowe), the exact Kafka-log checker, the
Kafka anomaly taxonomy, and (in `checker.spark`) the same checks on Spark.

Never imports `impl`: a history may come from the simulator or from a real cluster.
"""
