"""Work shared out among guests that run side by side: TCG runs each guest
on one host thread, so a second CPU needs a second guest."""

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def balance(items: Sequence[T], jobs: int, weight: Callable[[T], int]) -> list[list[T]]:
    """items in at most jobs shares of about equal weight (largest first,
    each to the lightest share), every share in the items' own order."""
    bins: list[list[T]] = [[] for _ in range(max(1, min(jobs, len(items))))]
    load = [0] * len(bins)
    for n in sorted(range(len(items)), key=lambda n: -weight(items[n])):
        least = load.index(min(load))
        bins[least].append(n)
        load[least] += weight(items[n]) + 1
    return [[items[n] for n in sorted(b)] for b in bins if b]


def run_all(work: list[Callable[[], None]]) -> None:
    """Each callable in a thread of its own; the first exception is raised
    here, once every thread has ended."""
    errors: list[BaseException] = []

    def guarded(fn: Callable[[], None]) -> None:
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 (re-raised below, in the caller)
            errors.append(e)
    threads = [threading.Thread(target=guarded, args=(fn,), daemon=True) for fn in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
