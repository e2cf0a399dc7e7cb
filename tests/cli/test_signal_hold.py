"""Ctrl-C and SIGTERM held between a session's lock and the prompt loop, and only there."""

from __future__ import annotations

import os
import signal
import time

import click
from click.testing import CliRunner

from otel_agents.cli import cli
from otel_agents.cli.signal_hold import SignalHold


def test_a_signal_while_held_is_said_once_and_the_handlers_come_back():
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    hold = SignalHold()
    hold.start()
    os.kill(os.getpid(), signal.SIGTERM)  # held: the test process goes on
    time.sleep(0.05)
    assert hold.release() is True
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
    assert hold.release() is False  # said once


def test_a_child_forked_while_held_ends_on_sigterm_as_before():
    """A pool's worker forked from a held process ignored its pool's SIGTERM, and the pool's join hung."""
    hold = SignalHold()
    hold.start()
    try:
        pid = os.fork()
        if pid == 0:  # the child: waits to be ended
            time.sleep(30)
            os._exit(0)
        time.sleep(0.2)
        os.kill(pid, signal.SIGTERM)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
    finally:
        hold.release()


def test_holding_ends_with_the_command_that_started_it(home, monkeypatch):
    """A command stopped between the lock and the loop must not leave the process (a test runner, a program
    invoking commands) with its signals held for good."""
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    done = CliRunner().invoke(cli, ["run", "Hello."])
    assert done.exit_code == 0, done.stderr
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before

    hold = SignalHold()

    @click.command()
    def stops_after_holding():
        hold.start()
        raise click.UsageError("stopped before the loop")

    assert CliRunner().invoke(stops_after_holding, []).exit_code == 2
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
