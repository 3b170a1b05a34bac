"""Fault injection, histories, checkers (local and Spark), reports and the `kmodel` CLI.

Dependency direction: `spec` <- `impl` <- `jepsen_py`. `jepsen_py.checker` and
`jepsen_py.history` never import `impl`: they check histories from any source, including
real Kafka clusters.
"""
