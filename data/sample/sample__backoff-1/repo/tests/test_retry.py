import pytest

from backoff import ConstantBackoff, ExponentialBackoff, RetryError, retry, retrying


class Flaky:
    """Fails ``failures`` times with ``exc``, then returns ``"ok"``."""

    def __init__(self, failures, exc=ConnectionError):
        self.failures = failures
        self.exc = exc
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.exc(f"failure {self.calls}")
        return "ok"


def test_succeeds_after_failures():
    sleeps = []
    func = Flaky(2)
    policy = ExponentialBackoff(base=1, factor=3, max_delay=100)
    assert retry(func, policy=policy, sleep=sleeps.append) == "ok"
    assert func.calls == 3
    assert sleeps == [1.0, 3.0]


def test_gives_up():
    func = Flaky(10)
    with pytest.raises(RetryError) as info:
        retry(func, policy=ConstantBackoff(0), max_attempts=3, sleep=lambda s: None)
    assert info.value.attempts == 3
    assert isinstance(info.value.__cause__, ConnectionError)
    assert func.calls == 3


def test_other_exceptions_propagate():
    func = Flaky(1, exc=KeyError)
    with pytest.raises(KeyError):
        retry(func, retry_on=(ConnectionError,), sleep=lambda s: None)
    assert func.calls == 1


def test_on_retry_callback():
    seen = []
    retry(Flaky(2), policy=ConstantBackoff(0.5), sleep=lambda s: None,
          on_retry=lambda n, exc, wait: seen.append((n, str(exc), wait)))
    assert seen == [(0, "failure 1", 0.5), (1, "failure 2", 0.5)]


def test_decorator_passes_arguments():
    calls = []

    @retrying(policy=ConstantBackoff(0), max_attempts=2, sleep=lambda s: None)
    def add(a, b=0):
        calls.append((a, b))
        if len(calls) == 1:
            raise TimeoutError
        return a + b

    assert add(2, b=3) == 5
    assert calls == [(2, 3), (2, 3)]
    assert add.__name__ == "add"
