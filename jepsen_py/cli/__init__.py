"""The `kmodel` command: one console script, one module per subcommand.

Each subcommand lives in its own module of this package and is registered below, so adding
a command never touches another's code.
"""

from __future__ import annotations

import click

from jepsen_py.cli.check import check
from jepsen_py.cli.demo import demo
from jepsen_py.cli.prove import prove
from jepsen_py.cli.replay_cmd import replay_cmd
from jepsen_py.cli.shrink_cmd import shrink_cmd
from jepsen_py.cli.test_cmd import test_cmd
from jepsen_py.cli.verify import verify


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafka-model", prog_name="kmodel")
def main() -> None:
    """kafka-model: Kafka replication as executable specs, a model checker, a deterministic
    implementation, fault injection and history checkers."""


main.add_command(check)
main.add_command(demo)
main.add_command(replay_cmd)
main.add_command(shrink_cmd)
main.add_command(test_cmd)
main.add_command(verify)
main.add_command(prove)
