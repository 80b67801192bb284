"""The stop handlers' life in one process (`evo.stopping`): a stopped campaign's teardown
(Ray's and torch's exit handlers, seconds) still exits at once on a second SIGINT."""

import os
import signal

from evo import stopping


def test_after_a_stop_a_second_sigint_still_finds_the_handler_and_a_clean_block_restores_it():
    before = signal.getsignal(signal.SIGINT)
    try:
        with stopping.listening():
            pass
        assert signal.getsignal(signal.SIGINT) is before  # no stop: the caller's handler back
        with stopping.listening():
            os.kill(os.getpid(), signal.SIGINT)  # the handler runs before the next bytecode
            assert stopping._requested == signal.SIGINT
        # the CI run of 2026-11-29: the clean stop was over within 0.2 s, the process then
        # spent 2.6 s exiting, and the second SIGINT met the restored default handler
        assert signal.getsignal(signal.SIGINT) is stopping._handle
        assert stopping._requested == signal.SIGINT and not stopping._listening
        assert signal.getsignal(signal.SIGTERM) is not stopping._handle
        with stopping.listening():  # a next block starts afresh
            stopping.check()
    finally:
        signal.signal(signal.SIGINT, before)
