"""bench/plan_variants.py's variant names, without a GPU: a value a switch does not take is an error before
anything is timed (session 54's review: `merge=0` turned the merge on, `swap=true` or `hint=off` timed the
switch's other setting, each printed under the label it was asked for)."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def plan_variants(monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "bench"))
    monkeypatch.syspath_prepend(os.path.join(ROOT, "test", "gpu"))
    monkeypatch.delitem(sys.modules, "plan_variants", raising=False)
    import plan_variants
    return plan_variants


@pytest.mark.parametrize("name", ["planned", "swap=0", "gather=1+warm=2", "merge", "mergeregs=0",
                                  "order=heads", "regs=24/240", "stages=2+splits=6+ctas=3", "early=1+hint=0"])
def test_variants_that_name_what_they_time(plan_variants, name):
    plan_variants.check_variant(name)


@pytest.mark.parametrize("name, message", [
    ("merge=0", "merge takes no value"), ("swap=true", "swap takes 0 or 1"), ("hint=off", "hint takes 0 or 1"),
    ("gather=on", "gather takes 0 or 1"), ("early=", "early takes 0 or 1"), ("order=rows", "seq or heads"),
    ("stages=two", "stages takes a number"), ("regs=240", "regs takes P/C"), ("planned=1", "planned takes no value"),
    ("stages=2+swap=yes", "'swap=yes'"), ("stage=2", "unknown variant 'stage=2'")])
def test_a_value_the_variant_does_not_take_is_an_error(plan_variants, name, message):
    with pytest.raises(SystemExit, match=message):
        plan_variants.check_variant(name)
