"""The cyclic collector paused while many lasting objects are made, and what happens to them after."""

import gc

from engine.collector import collector_paused


def ids(generation: int) -> set[int]:
    return {id(o) for o in gc.get_objects(generation=generation)}


def test_long_lived_objects_join_the_oldest_generation_and_the_collector_runs_again():
    assert gc.isenabled()
    with collector_paused(long_lived=True):
        assert not gc.isenabled()
        made = [[index] for index in range(1000)]
    assert gc.isenabled()
    oldest = ids(2)
    assert all(id(item) in oldest for item in made)  # no young collection will scan them


def test_the_collector_stays_off_if_it_was_off():
    gc.disable()
    try:
        with collector_paused(long_lived=True):
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
