"""The state explorer (``kmodel explore SPEC``): a spec's states in a web page, one step at a
time, as Stateright's explorer shows a model's.

``paths`` replays paths of choices from a spec's initial state and matches counterexample
traces to such paths; ``server`` serves them over HTTP on 127.0.0.1 with the page
``page.html`` (one self-contained file, no network). The CLI command is
``jepsen_py.cli.explore``.
"""
