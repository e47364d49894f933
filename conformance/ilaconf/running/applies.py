"""Which cases a column runs, and with which command lines: shared by the
harness (session.py) and the kselftest bundle (kselftest/bundle.py), so
that both decide the same way."""

from ..catalog import control
from ..catalog.cases import Case
from ..impls import Impl, lacks_mapping_table
from . import mapping


def skip_reason(impl: Impl, case: "Case | control.ControlCase") -> str:
    """Why this column does not run the case; empty when it does."""
    if lacks_mapping_table(impl):
        return lacks_mapping_table(impl)
    if isinstance(case, control.ControlCase):
        if case.interface != impl.interface:
            return (f"a control case of the {case.interface} interface; this column tests "
                    f"the {impl.interface} interface")
        if not impl.runs_control and not case.every_column:
            return ("control-plane cases run in the implementation's default "
                    "configuration (its own column) only")
        return ""
    if impl.interface == "route" and mapping.is_mapping_case(case):
        return "a case of the ip ila mapping table; this column tests encap ila routes"
    if impl.interface == "mapping":
        derived = mapping.derive(case, impl)
        if isinstance(derived, str):
            return derived
    missing = [n for n in case.needs if n not in impl.features]
    return f"{impl.name} does not implement {', '.join(missing)}" if missing else ""


def case_lines(impl: Impl, case: Case) -> tuple[list[str], list[str]]:
    """The case's set-up and teardown command lines in this column."""
    if impl.interface == "mapping" and not mapping.is_mapping_case(case):
        derived = mapping.derive(case, impl)
        assert not isinstance(derived, str), derived
        return derived
    return [impl.route(line) for line in case.routes], case.teardown
